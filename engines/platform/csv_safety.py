"""CSV files a spreadsheet opens as data, never as formulas: the one CSV writer of every export.

A spreadsheet (Excel, LibreOffice Calc, Google Sheets) reads a cell that starts with ``=``, ``+``,
``-`` or ``@`` as a formula, and a leading tab or carriage return can hide one; a participant's
comment ``=HYPERLINK("https://evil.example", "click")`` would then turn live in a researcher's
``responses.csv``. OWASP's advice (CSV Injection, https://owasp.org/www-community/attacks/CSV_Injection):
prefix such a cell with a single quote ``'``, which the spreadsheet shows as text.

Only text cells change: a number such as ``-0.5`` stays a number, so numeric columns still sum.
JSON files (``responses.jsonl``, ``study_config.json``) are not spreadsheets and stay raw; they
hold every value exactly as it was stored. Every CSV the app writes goes through ``csv_bytes``
(rows of dicts) or ``frame_csv_bytes`` (a pandas DataFrame), so no writer can forget the rule;
``neutralise_csv`` catches the CSV files a study's own ``export_files`` hook adds, and a test
(``tests/platform/test_csv_safety.py``) fails when code outside this module writes CSV.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from typing import Any

# The first characters that make a spreadsheet evaluate a cell (OWASP's list).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
# RFC 4180's line end. With it the csv module quotes every cell that holds a carriage return; with
# "\n" alone it would not, and a spreadsheet would start a new row at the bare "\r", so that
# "ok\r=HYPERLINK(...)" became a second row whose first cell is a live formula.
LINE_END = "\r\n"


def neutralise(value: Any) -> Any:
    """``value`` with ``'`` in front when it is text starting with one of ``FORMULA_PREFIXES``.

    Numbers, booleans and ``None`` come back unchanged (``-0.5`` is data, not a formula).

    Examples::

        >>> neutralise('=HYPERLINK("https://evil.example")')
        '\\'=HYPERLINK("https://evil.example")'
        >>> neutralise(-0.5)
        -0.5
    """
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def csv_bytes(columns: list[str], rows: list[dict[str, Any]], *, extra: str = "raise") -> bytes:
    """UTF-8 CSV of ``rows`` with every text cell neutralised (lists and dicts written as JSON).

    Args:
        columns: the header, in order; a row's missing keys are written empty.
        rows: one dict per line.
        extra: ``"raise"`` (a key not in ``columns`` is an error) or ``"ignore"`` (such keys are dropped).
    """
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator=LINE_END).writerow([neutralise(c) for c in columns])
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction=extra, lineterminator=LINE_END)
    for row in rows:
        writer.writerow({k: neutralise(json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in row.items()})
    return buffer.getvalue().encode()


_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def map_csv_cells(content: bytes, cell: Callable[[str, str], str]) -> bytes:
    """A UTF-8 CSV read and written back with every body cell replaced by ``cell(column, value)``
    and the header neutralised; quoting and line ends (``LINE_END``) as ``csv_bytes`` writes them."""
    rows = list(csv.reader(io.StringIO(content.decode(), newline="")))
    if not rows:
        return content
    header = rows[0]
    body = [[cell(header[i] if i < len(header) else "", value) for i, value in enumerate(row)] for row in rows[1:]]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator=LINE_END).writerows([[neutralise(c) for c in header], *body])
    return buffer.getvalue().encode()


def neutralise_csv(content: bytes) -> bytes:
    """A CSV written by other code (a study's ``export_files``), neutralised after the fact.

    Its cells are all text once read back, so a cell that is a plain number (``-0.5``, ``+3``,
    ``1e-3``) is left as it is (a spreadsheet reads it as that number); every other cell gets the
    quote as in ``neutralise``. A file already written by ``csv_bytes`` comes back unchanged.
    """
    return map_csv_cells(content, lambda _column, value: value if _NUMBER.fullmatch(value) else neutralise(value))


def frame_csv_bytes(frame: Any) -> bytes:
    """UTF-8 CSV of a pandas DataFrame (no index), header and text cells neutralised as in ``csv_bytes``."""
    safe = frame.rename(columns=neutralise).map(neutralise)
    return safe.to_csv(index=False, lineterminator=LINE_END).encode()


__all__ = ["FORMULA_PREFIXES", "LINE_END", "csv_bytes", "frame_csv_bytes", "map_csv_cells", "neutralise", "neutralise_csv"]

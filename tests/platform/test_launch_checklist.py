"""docs/launch-checklist.md against what bootstrap creates: the demo studies it says `make run`
prints, and the ones it tells the researcher to close before launch, are exactly those that
``engines.platform.demo.load_demo_data`` (bootstrap's demo loading) creates."""

from __future__ import annotations

import re
from pathlib import Path

from engines.platform import study_admin
from engines.platform.demo import load_demo_data

CHECKLIST = Path(__file__).resolve().parents[2] / "docs" / "launch-checklist.md"
NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


def _item(text: str, opening: str) -> str:
    """The checklist item (``- [ ] ...`` up to the next item or heading) that begins with ``opening``."""
    start = text.index(f"- [ ] {opening}")
    ends = [m.start() for m in re.finditer(r"^(- \[ \] |#)", text[start + 1:], flags=re.MULTILINE)]
    return text[start:start + 1 + ends[0]] if ends else text[start:]


def test_the_checklist_closes_exactly_the_demo_studies_bootstrap_creates(sqlite_db):
    created = load_demo_data()
    demo_studies = sorted(s.slug for s in study_admin.list_studies())
    assert demo_studies and set(demo_studies) <= set(created)
    close = _item(CHECKLIST.read_text(), "Close the demo studies")
    closed = re.findall(r"^\s*python -m engines\.platform studies close (\S+)$", close, flags=re.MULTILINE)
    assert sorted(closed) == demo_studies
    assert f"The list shows all {NUMBERS[len(demo_studies)]} `closed`" in close


def test_the_checklist_quotes_what_bootstrap_prints_on_the_first_start(sqlite_db):
    # bootstrap prints "database ready (...); demo studies created: " and what load_demo_data created.
    created = load_demo_data()
    serve = _item(CHECKLIST.read_text(), "Export the address participants will open")
    quoted = re.search(r"`database ready \(postgresql\+psycopg\); demo studies created: ([^`]*)`", serve)
    assert quoted is not None, "the checklist no longer quotes bootstrap's line"
    assert quoted.group(1) == ", ".join(created)

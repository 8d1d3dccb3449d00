"""SQLAlchemy Core statements compiled once and run straight on the DB-API connection.

A participant's step runs a few small statements, and at 50 participants without think time
every step's CPU time queues behind the others' (``bench/platform_store.py``). SQLAlchemy's
execution of a compiled statement (execution context, parameter and result set-up, the
``Result`` object) costs more than the statement on the driver, so the step's own statements
are compiled once, keep SQLAlchemy's bind and result processors for their types (JSON, UTC
datetimes, SQLite's text dates), and run on the DB-API cursor of the caller's connection, in
its open transaction.

Two compiled forms:

- ``DriverStatement``: the statement for the connection's dialect and paramstyle.
- ``PreparedPlan`` (PostgreSQL): the statement as a named prepared statement, a ``PREPARE``
  text to send once per connection and an ``EXECUTE name(...)`` template that takes the
  parameters as SQL literals, so that several statements travel in one message
  (``engines.platform.step_transaction``).

For statements with plain bound parameters only (no expanding ``IN``, no literal binds).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import ClauseElement

Processor = Callable[[Any], Any] | None


def _bind_processors(compiled: Any, dialect: Dialect) -> dict[str, Processor]:
    return {name: bind.type.dialect_impl(dialect).bind_processor(dialect) for bind, name in compiled.bind_names.items()}


def _processed(processors: Mapping[str, Processor], values: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for name, processor in processors.items():
        value = values[name]
        out[name] = processor(value) if processor is not None and value is not None else value
    return out


class _Results:
    """SQLAlchemy's result processing for the columns a statement selects."""

    def __init__(self, statement: ClauseElement, dialect: Dialect) -> None:
        self._types = [column.type for column in getattr(statement, "selected_columns", ())]
        self._dialect = dialect
        self._processors: list[Processor] | None = None
        self._mutex = threading.Lock()

    def row(self, row: Sequence[Any], type_codes: Callable[[], Sequence[Any]]) -> tuple:
        """``row`` with SQLAlchemy's processing. ``type_codes``: the driver's type code of each column
        of the result (DB-API ``description[i][1]``), asked for only on the statement's first result
        (psycopg builds a cursor's ``description`` anew on each access)."""
        processors = self._processors or self._for(type_codes())
        return tuple(value if processor is None or value is None else processor(value)
                     for processor, value in zip(processors, row, strict=True))

    def _for(self, type_codes: Sequence[Any]) -> list[Processor]:
        # The driver's type codes are fixed for a statement: found on its first result.
        with self._mutex:
            if self._processors is None:
                self._processors = [type_.dialect_impl(self._dialect).result_processor(self._dialect, code)
                                    for type_, code in zip(self._types, type_codes, strict=True)]
            return self._processors


class DriverStatement:
    """A statement compiled for one dialect, run on the connection's DB-API cursor."""

    def __init__(self, statement: ClauseElement, dialect: Dialect, keys: Sequence[str] | None = None) -> None:
        compiled = statement.compile(dialect=dialect, column_keys=keys)
        self.sql: str = compiled.string
        # Positional paramstyles (SQLite's qmark) list a parameter once per use.
        self._order: tuple[str, ...] | None = tuple(compiled.positiontup) if compiled.positional else None
        self._processors = _bind_processors(compiled, dialect)
        self.results = _Results(statement, dialect)

    def parameters(self, values: Mapping[str, Any]) -> dict[str, Any] | tuple[Any, ...]:
        """The driver's parameters for ``values``: processed, by name or in order."""
        processed = _processed(self._processors, values)
        return processed if self._order is None else tuple(processed[name] for name in self._order)

    def first(self, connection: Connection, values: Mapping[str, Any]) -> tuple | None:
        """The first row, processed as SQLAlchemy would, or None."""
        cursor = self._execute(connection, values)
        try:
            row = cursor.fetchone()
            return None if row is None else self.results.row(row, lambda: [column[1] for column in cursor.description])
        finally:
            cursor.close()

    def run(self, connection: Connection, values: Mapping[str, Any]) -> None:
        """Run a statement that returns no rows."""
        self._execute(connection, values).close()

    def _execute(self, connection: Connection, values: Mapping[str, Any]):  # noqa: ANN202 - a DB-API cursor
        driver = connection.connection.dbapi_connection
        cursor = driver.cursor()
        parameters = self.parameters(values)
        try:
            cursor.execute(self.sql, parameters)
        except connection.dialect.loaded_dbapi.Error as exc:
            cursor.close()
            raise sqlalchemy_error(connection, exc, self.sql, parameters, cursor) from exc
        return cursor


def sqlalchemy_error(connection: Connection, exc: Exception, sql: str, parameters: Any, cursor: Any = None,
                     *, invalidated: bool = False) -> Exception:
    """The error SQLAlchemy would raise for the driver's ``exc`` (``IntegrityError`` and so on); a
    connection the server has dropped is invalidated, as SQLAlchemy does."""
    dialect = connection.dialect
    if not invalidated and dialect.is_disconnect(exc, connection.connection.dbapi_connection, cursor):
        connection.invalidate(exc)
        invalidated = True
    return DBAPIError.instance(sql, parameters, exc, dialect.loaded_dbapi.Error, connection_invalidated=invalidated,
                               hide_parameters=connection.engine.hide_parameters, dialect=dialect)


class PreparedPlan:
    """A statement as a PostgreSQL prepared statement named after its text.

    ``prepare`` creates it on a connection (once: a prepared statement lives as long as the
    session); ``execute % literals`` runs it, its parameters given as SQL literals (as quoted by
    the driver, ``psycopg.adapt.Transformer.as_literal``), which lets several statements go in
    one simple-protocol message. The server still parses and plans the statement once per
    connection, not per step. The texts are ASCII bytes, the same in every client encoding.
    """

    def __init__(self, statement: ClauseElement, dialect: Dialect, keys: Sequence[str] | None = None) -> None:
        numbered = type(dialect)(paramstyle="numeric_dollar")  # $1, $2, ...: what PREPARE takes
        compiled = statement.compile(dialect=numbered, column_keys=keys)
        text = compiled.string
        self.name = "hai_" + hashlib.sha1(text.encode()).hexdigest()[:20]
        self.prepare: bytes = f"PREPARE {self.name} AS {text}".encode("ascii")
        self._order = tuple(compiled.positiontup or ())
        # A %-template: a literal % of the statement is in PREPARE only, never here.
        self.execute: bytes = (f"EXECUTE {self.name}({', '.join(['%s'] * len(self._order))})" if self._order
                               else f"EXECUTE {self.name}").encode("ascii")
        self._processors = _bind_processors(compiled, dialect)
        self.results = _Results(statement, dialect)
        # Without prepared statements (PgBouncer in transaction mode): the text itself as a
        # %-template, %s per use (the "format" paramstyle writes a literal % as %%).
        plain = statement.compile(dialect=type(dialect)(paramstyle="format"),
                                  column_keys=keys)
        self.inline: bytes = plain.string.encode("ascii")
        self._inline_order = tuple(plain.positiontup or ())

    def parameters(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """The EXECUTE's parameters for ``values``, processed, in order."""
        processed = _processed(self._processors, values)
        return tuple(processed[name] for name in self._order)

    def inline_parameters(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """The plain text's parameters for ``values``, processed, one per use."""
        processed = _processed(self._processors, values)
        return tuple(processed[name] for name in self._inline_order)


class CompiledForms:
    """A statement's compiled forms, made on first use per dialect, kind and set of parameter names.

    ``keys``: the columns an INSERT or UPDATE sets (an UPDATE that writes only the changed
    columns has one form per set of them).
    """

    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._forms: dict[tuple[type, str, frozenset[str] | None], DriverStatement | PreparedPlan] = {}
        self._mutex = threading.Lock()

    def driver(self, dialect: Dialect, keys: frozenset[str] | None = None) -> DriverStatement:
        return self._get(DriverStatement, dialect, keys)  # type: ignore[return-value]

    def prepared(self, dialect: Dialect, keys: frozenset[str] | None = None) -> PreparedPlan:
        return self._get(PreparedPlan, dialect, keys)  # type: ignore[return-value]

    def _get(self, kind: type, dialect: Dialect, keys: frozenset[str] | None) -> DriverStatement | PreparedPlan:
        key = (kind, dialect.name, keys)
        found = self._forms.get(key)
        if found is None:
            with self._mutex:
                found = self._forms.get(key)
                if found is None:
                    found = self._forms[key] = kind(self.statement, dialect, sorted(keys) if keys is not None else None)
        return found

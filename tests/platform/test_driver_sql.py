"""Statements compiled once and run on the driver (engines/platform/driver_sql.py).

What a researcher or operator would notice: a statement is compiled once per database and set of
columns; text with a literal ``%`` or without parameters runs as written in both of its
PostgreSQL forms; the named-parameter form works on a driver that takes names; a refused
statement raises SQLAlchemy's error, without the values when the engine hides parameters; and a
connection the server dropped is thrown away, with the server's error as the reason.
"""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest
from sqlalchemy import Float, Integer, bindparam, create_engine, event, insert, literal_column, select, text
from sqlalchemy.exc import DBAPIError, IntegrityError

from engines.platform import db
from engines.platform.driver_sql import CompiledForms
from engines.platform.models import Study
from tests.conftest import PG_URL

_STUDY = Study.__table__
_INSERT_STUDY = insert(_STUDY)
_STUDY_BY_SLUG = select(_STUDY.c.slug, _STUDY.c.config).where(_STUDY.c.slug == bindparam("slug"))
# numeric, read as a Float: SQLAlchemy converts it by the driver's type code (a Decimal otherwise).
_NUMERIC_AS_FLOAT = select(literal_column("1.5::numeric", type_=Float).label("x"))
_PERCENT = select(literal_column("'50%'").label("share"))  # a literal % and no parameter
_PERCENT_AND_NUMBER = select(literal_column("'50%'").label("share"), bindparam("n", type_=Integer).label("n"))


def _study(slug: str, title: str = "T") -> dict:
    return {"slug": slug, "protocol": "demo_survey", "title": title, "is_open": True, "config": {"k": [1, "é"]},
            "created_at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "created_by": None}




def test_a_statement_is_compiled_once_per_database_kind_and_column_set(any_db):
    engine = db.create_db_engine(any_db)
    try:
        forms, dialect = CompiledForms(_INSERT_STUDY), engine.dialect
        every = frozenset(_study("x"))
        assert forms.driver(dialect, every) is forms.driver(dialect, every)
        assert forms.prepared(dialect, every) is forms.prepared(dialect, every)
        assert forms.driver(dialect, every) is not forms.prepared(dialect, every)
        fewer = every - {"protocol"}
        assert forms.driver(dialect, fewer) is not forms.driver(dialect, every)
        assert "protocol" not in forms.driver(dialect, fewer).sql
    finally:
        engine.dispose()


def test_a_refused_write_raises_sqlalchemys_error_and_hides_values_when_the_engine_does(any_db):
    forms = CompiledForms(_INSERT_STUDY)
    keys = frozenset(_study("x"))
    for hide, shown in ((False, True), (True, False)):
        engine = create_engine(any_db, hide_parameters=hide)
        slug, title = f"taken-{hide}", f"a title only the parameters hold {hide}"  # (PostgreSQL's DETAIL names the key)
        try:
            with engine.begin() as connection:
                forms.driver(connection.dialect, keys).run(connection, _study(slug))
            with pytest.raises(IntegrityError) as refused, engine.begin() as connection:
                forms.driver(connection.dialect, keys).run(connection, _study(slug, title))
            assert (title in str(refused.value)) is shown
            assert refused.value.connection_invalidated is False
        finally:
            engine.dispose()


@pytest.mark.postgres
def test_the_named_parameter_form_runs_on_a_driver_that_takes_names(pg_engine):
    with pg_engine.begin() as connection:
        connection.execute(_INSERT_STUDY, [_study("a"), _study("b")])
        statement = CompiledForms(_STUDY_BY_SLUG).driver(connection.dialect)
        assert statement.parameters({"slug": "b"}) == {"slug": "b"}
        assert statement.first(connection, {"slug": "b"}) == ("b", {"k": [1, "é"]})
        assert statement.first(connection, {"slug": "nobody"}) is None


@pytest.mark.postgres
def test_a_column_is_read_with_the_processing_sqlalchemy_picks_for_the_drivers_type(pg_engine):
    with pg_engine.connect() as connection:
        row = CompiledForms(_NUMERIC_AS_FLOAT).driver(connection.dialect).first(connection, {})
        assert row == (1.5,) and type(row[0]) is float
        assert connection.execute(_NUMERIC_AS_FLOAT).one() == row  # what SQLAlchemy itself reads


@pytest.mark.postgres
@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "plain"])
def test_text_with_a_percent_sign_runs_as_written_with_and_without_parameters(pg_engine, prepared):
    from psycopg.adapt import Transformer

    with pg_engine.connect() as connection:
        dialect = connection.dialect
        driver = connection.connection.dbapi_connection
        quote = Transformer(driver).as_literal
        for statement, values, expected in ((_PERCENT, {}, ("50%",)), (_PERCENT_AND_NUMBER, {"n": 7}, ("50%", 7))):
            plan = CompiledForms(statement).prepared(dialect)
            # Sent as the step transaction sends them: the texts as they are, literals in the templates.
            if prepared:
                driver.execute(plan.prepare)
                query = plan.execute % tuple(quote(v) for v in plan.parameters(values))
            else:
                query = plan.inline % tuple(quote(v) for v in plan.inline_parameters(values))
            assert driver.execute(query).fetchone() == expected
        if prepared:
            names = set(connection.execute(text("SELECT name FROM pg_prepared_statements")).scalars())
            assert names and all(name.startswith("hai_") for name in names)
        connection.rollback()


@pytest.mark.postgres
def test_a_connection_the_server_dropped_is_thrown_away_with_the_servers_error_as_reason(pg_engine):
    reasons: list[BaseException | None] = []
    event.listen(pg_engine, "invalidate", lambda _dbapi, _record, exception: reasons.append(exception))
    with pg_engine.connect() as connection:
        pid = connection.execute(text("SELECT pg_backend_pid()")).scalar_one()
        connection.rollback()
        with psycopg.connect(PG_URL.replace("+psycopg", ""), autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", (pid,))
        statement = CompiledForms(_STUDY_BY_SLUG).driver(connection.dialect)
        with pytest.raises(DBAPIError) as dropped:
            statement.first(connection, {"slug": "a"})
        assert dropped.value.connection_invalidated is True
        assert connection.invalidated
    assert len(reasons) == 1 and isinstance(reasons[0], psycopg.OperationalError)
    with pg_engine.connect() as connection:  # the pool hands out a new, working connection
        assert connection.execute(text("SELECT pg_backend_pid()")).scalar_one() != pid

"""The arena's vote page opens the pair's images only inside the benchmark folders the app owns: the
paths come from the participant's stored plan, so a plan naming a folder elsewhere shows nothing of it."""

from __future__ import annotations

import pytest

from engines.hoi import arena
from engines.platform import study_admin
from engines.platform.db import write_transaction
from engines.platform.models import Participant
from tests.apptest_driver import new_participant_app
from tests.hoi.test_hoi_arena import LABELS, dense_outputs, write_benchmark
from tests.hoi.test_hoi_arena_study import enter_and_consent


@pytest.fixture
def study(sqlite_db, data_dir) -> str:
    bench = write_benchmark(data_dir / "datasets" / "hoi" / "arena", dense_outputs(), labels=LABELS)
    study_admin.create_study("arena", "hoi_arena", config={"constants": {**arena.frozen_methods(bench), "ROUNDS": 2}})
    return "arena"


def _images_and_warnings(slug: str, external_id: str) -> tuple[int, list[str]]:
    at = new_participant_app(slug, external_id)
    assert not at.exception, at.exception
    return len(at.get("image")), [w.value for w in at.warning]


def test_the_pair_is_shown_from_a_registered_benchmark(study):
    enter_and_consent(study, "p1")
    images, warnings = _images_and_warnings(study, "p1")
    assert images == 3 and warnings == []


def test_a_stored_plan_naming_a_folder_elsewhere_shows_none_of_it(study, tmp_path):
    outside = write_benchmark(tmp_path / "outside", dense_outputs(), labels=LABELS)
    participant = enter_and_consent(study, "p2")
    with write_transaction() as session:
        row = session.get(Participant, participant)
        row.vars = {**row.vars, arena.PLAN_KEY: {**row.vars[arena.PLAN_KEY], "root": str(outside)}}
        session.add(row)
    images, warnings = _images_and_warnings(study, "p2")
    assert images == 0 and warnings == ["This image cannot be shown; please tell the researcher."] * 3
    assert not any(str(tmp_path) in w for w in warnings)

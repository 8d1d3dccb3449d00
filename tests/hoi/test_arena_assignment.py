"""Which pairs an arena participant sees cannot be worked out from the study and the participant id.

The seed of a participant's pairs is keyed with the installation's secret arena key (HMAC-SHA256), so
it stays the same for one participant of one installation (a resumed participant sees the same
pairs) but nobody without the key can compute it, or mint ids that see the pairs they want. The
expected seeds are computed here from the rule, with ``hmac`` and ``hashlib`` directly.
"""

from __future__ import annotations

import hashlib
import hmac
import stat
from pathlib import Path

import pytest

from engines.hoi import arena
from engines.platform import runtime, study_admin
from engines.platform.credentials import ServerKeyError
from engines.platform.settings import reset_settings
from studies.hoi_arena import Consent, Instructions
from tests.hoi.test_hoi_arena import LABELS, dense_outputs, write_benchmark

FROZEN_LABELS = {**LABELS, "scpe": "scpe"}  # what the study fixed when it was created

KEY_A = b"a" * 32
KEY_B = b"b" * 32
ROUNDS = 12


def old_seed(study: str, participant: str) -> int:
    """The seed before the key: 63 bits of sha256("<study>:<participant>"), computable by anyone."""
    return int.from_bytes(hashlib.sha256(f"{study}:{participant}".encode()).digest()[:8], "big") >> 1


def keyed_seed(key: bytes, study: str, participant: str) -> int:
    return int.from_bytes(hmac.new(key, f"{study}:{participant}".encode(), "sha256").digest()[:8], "big") >> 1


@pytest.fixture
def bench(data_dir: Path) -> Path:
    return write_benchmark(data_dir / "datasets" / "hoi" / "bench", dense_outputs(), labels=LABELS)


@pytest.fixture
def installation(tmp_path, monkeypatch) -> Path:
    """A data folder of its own and no configured arena key: the key is made in the folder."""
    data_dir = tmp_path / "data"
    monkeypatch.setenv("HAI_DATA_DIR", str(data_dir))
    monkeypatch.delenv("HAI_ARENA_KEY", raising=False)
    reset_settings()
    yield data_dir
    reset_settings()


def test_the_seed_is_keyed_and_not_the_public_hash():
    for participant in ("p1", "5f1e2d3c4b5a69788796a5b4"):
        seed = arena.participant_seed("arena", participant, KEY_A)
        assert seed == keyed_seed(KEY_A, "arena", participant)
        assert seed != old_seed("arena", participant)
        assert 0 <= seed < 2**63


def test_the_same_participant_of_one_installation_draws_the_same_pairs(installation, bench):
    found = arena.read_candidates(bench)
    first = arena.draw_pairs(found, ROUNDS, arena.participant_seed("arena", "p1"))
    reset_settings()  # another process of the same installation reads the same key file
    assert arena.draw_pairs(found, ROUNDS, arena.participant_seed("arena", "p1")) == first
    key_file = installation / "arena.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text().strip().encode()
    assert arena.participant_seed("arena", "p1") == keyed_seed(key, "arena", "p1")


def test_another_key_draws_other_pairs(bench):
    found = arena.read_candidates(bench)
    for participant in ("p1", "p2", "p3"):
        with_a = arena.draw_pairs(found, ROUNDS, arena.participant_seed("arena", participant, KEY_A))
        with_b = arena.draw_pairs(found, ROUNDS, arena.participant_seed("arena", participant, KEY_B))
        public = arena.draw_pairs(found, ROUNDS, old_seed("arena", participant))
        assert with_a != with_b
        assert public not in (with_a, with_b)


def test_a_configured_key_is_used_and_a_short_one_refused(installation, monkeypatch):
    monkeypatch.setenv("HAI_ARENA_KEY", "c" * 40)
    reset_settings()
    assert arena.participant_seed("arena", "p1") == keyed_seed(b"c" * 40, "arena", "p1")
    assert not (installation / "arena.key").exists()
    monkeypatch.setenv("HAI_ARENA_KEY", "too-short")
    reset_settings()
    with pytest.raises(ServerKeyError, match="HAI_ARENA_KEY has 9 characters; use at least 32"):
        arena.participant_seed("arena", "p1")


def test_the_study_draws_a_participants_pairs_under_the_installations_key(sqlite_db, bench, monkeypatch):
    monkeypatch.setenv("HAI_ARENA_KEY", "d" * 32)
    reset_settings()
    study_admin.create_study("arena", "hoi_arena",
                             config={"constants": {**arena.frozen_methods(bench), "ROUNDS": ROUNDS}})
    participant = runtime.enter("arena", {"PROLIFIC_PID": "p7", "STUDY_ID": "s", "SESSION_ID": "x"}).participant_id
    for step in (Consent, Instructions):
        view = runtime.current_view(participant)
        runtime.submit(participant, view.step.index, {"agree": True} if step is Consent else {})
    from engines.platform.db import read_session
    from engines.platform.models import Participant

    with read_session() as session:
        plan = session.get(Participant, participant).vars[arena.PLAN_KEY]
    assert plan == arena.draw_plan(bench, [], ROUNDS, keyed_seed(b"d" * 32, "arena", "p7"), labels=FROZEN_LABELS)
    assert plan != arena.draw_plan(bench, [], ROUNDS, old_seed("arena", "p7"), labels=FROZEN_LABELS)

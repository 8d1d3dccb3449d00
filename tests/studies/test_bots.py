"""Every study's bot completes it: headless against the runtime, and through the page in AppTest."""

from __future__ import annotations

import pytest

from engines.platform import study_admin
from engines.platform.bots import run_bot, stored_responses
from engines.platform.registry import all_protocols
from tests.apptest_driver import new_participant_app, play

PROTOCOLS = sorted(name for name, p in all_protocols().items() if not name.startswith("store_bench"))
CASES = [(name, case) for name in PROTOCOLS for case in (all_protocols()[name].bot.cases or [None])]


def test_every_study_ships_a_bot():
    assert PROTOCOLS, "no study protocols were discovered in studies/"
    missing = [name for name in PROTOCOLS if all_protocols()[name].bot is None]
    assert missing == []


@pytest.mark.parametrize(("protocol", "case"), CASES)
def test_bot_completes_study_headless(sqlite_db, protocol, case):
    all_protocols()[protocol].bot.prepare()  # data the study's constants name
    study_admin.create_study("bots", protocol)
    bot = all_protocols()[protocol].bot(case)
    report = run_bot("bots", bot, f"headless-{case}")
    assert report.status == bot.final_status()
    assert report.steps > 0


@pytest.mark.parametrize(("protocol", "case"), CASES)
def test_bot_completes_study_through_the_page(sqlite_db, protocol, case):
    all_protocols()[protocol].bot.prepare()
    study_admin.create_study("bots", protocol)
    bot = all_protocols()[protocol].bot(case)
    at = new_participant_app("bots", f"apptest-{case}")
    accepted, rejected = play(at, "bots", f"apptest-{case}", bot)
    from engines.platform import runtime

    view = runtime.current_view(bot.participant_id)
    assert view.status == bot.final_status()
    assert len(stored_responses(bot.participant_id)) == accepted
    bot.check_stored([r.data for r in stored_responses(bot.participant_id)])
    # The end page shows the code only now that everything is stored.
    codes = [c.value for c in at.code]
    assert view.completion.code in codes


def test_explained_condition_shows_the_explanation_only_there(sqlite_db):
    from engines.platform import runtime
    from studies.demo_survey import C

    study_admin.create_study("cond", "demo_survey")
    seen = {}
    for external_id in ("first", "second"):
        at = new_participant_app("cond", external_id)
        view = runtime.current_view(runtime.find_participant("cond", external_id))
        for answer in ({"agree": True}, {}, {"task": "Rate how helpful each suggestion is"}):
            runtime.submit(view.participant_id, view.step.index, answer)
            view = runtime.current_view(view.participant_id)
        at.run()  # the page now shows the first rating
        seen[view.condition] = " ".join(m.value for m in at.markdown)
    explanation = C.ITEMS[0][2]
    assert explanation in seen["explained"] and explanation not in seen["plain"]


def test_demo_survey_with_fewer_items_says_so_and_shows_only_those(sqlite_db):
    from engines.platform import runtime
    from studies.demo_survey import C

    items = [list(item) for item in C.ITEMS[:2]]
    study_admin.create_study("two", "demo_survey", config={"constants": {"ITEMS": items}})
    at = new_participant_app("two", "reader")
    assert "You will rate 2 AI writing suggestions" in " ".join(m.value for m in at.markdown)
    for case in ("diligent", "inattentive"):
        bot = all_protocols()["demo_survey"].bot(case)
        report = run_bot("two", bot, f"two-{case}")
        assert report.status == bot.final_status()
    ratings = [r for r in stored_responses(bot.participant_id) if r.step_name == "Rating"]
    assert len(ratings) == 2 and runtime.current_view(bot.participant_id).status == "screened_out"


@pytest.mark.parametrize("items", [[], [["only", "two"]], [["a", "b", "c"]] * 4])
def test_demo_survey_refuses_items_it_cannot_show(sqlite_db, items):
    from engines.platform import runtime

    with pytest.raises(runtime.StudyError, match="ITEMS"):
        study_admin.create_study("bad", "demo_survey", config={"constants": {"ITEMS": items}})

"""The default panel study over the demo project: new work with gold at the project's rate, a
plan that says so, a worker who fails the quiz screened out with the screen-out code, and the
screening result in every export."""

from __future__ import annotations

import csv
import io
import json

import pytest
from sqlmodel import select

from engines.judge import labeling, labeling_queue
from engines.judge.models import LabelingClaim, LabelingItem
from engines.platform import runtime, study_admin
from engines.platform.bots import Bot, Submission, iterate_with_view, run_bot, stored_responses
from engines.platform.db import read_session
from engines.platform.demo import load_demo_data
from engines.platform.export import export_study
from studies.judge_labeling import C, Consent, Instructions, Label

STUDY = "judge-labeling"  # what bootstrap calls the demo study of this protocol


def _gold_score(claim_id: int) -> int | None:
    """The known score of a claim's item (None for an item of the queue): what only a test may read."""
    with read_session() as session:
        return session.exec(select(LabelingItem.gold_score).join(LabelingClaim, LabelingClaim.item_id == LabelingItem.id)
                            .where(LabelingClaim.id == claim_id)).one()


class Worker(Bot):
    """Rates every item shown: gold items as their known score (``right``) or the opposite side of
    the scale (not ``right``), other items 2."""

    def __init__(self, right: bool = True):
        super().__init__()
        self.right = right

    def play(self):
        yield Submission(Consent, {"agree": True})
        yield Submission(Instructions, {})
        while self.view.step is not None and self.view.step.step is Label:
            claim = self.view.template_vars["claim_id"]
            gold = _gold_score(claim)
            score = 2 if gold is None else gold if self.right else (5 if gold < 3 else 1)
            yield Submission(Label, {"claim_id": claim, "score": score})


def _claims(external_id: str) -> list[tuple[str, bool]]:
    """(purpose, is gold) of each item the worker was given, in order."""
    with read_session() as session:
        return [(purpose, is_gold) for purpose, is_gold in session.exec(
            select(LabelingClaim.purpose, LabelingItem.is_gold).join(LabelingItem, LabelingItem.id == LabelingClaim.item_id)
            .where(LabelingClaim.annotator == f"study:{STUDY}:{external_id}").order_by(LabelingClaim.id)).all()]


def _rows(export, name: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(export.files[name].decode())))


@pytest.fixture
def demo(sqlite_db):
    assert STUDY in load_demo_data()  # what `make run` loads: the demo project and this study over it
    return labeling.get_project(C.PROJECT)


def test_a_demo_panel_worker_labels_new_items_with_gold_at_the_projects_rate(demo):
    # The settings the expectation is worked out from: the demo project's 10-item quiz and one
    # gold check after every 9 new items, and the study's 20 items after the quiz.
    assert (demo.quiz_size, demo.gold_every, C.ITEMS) == (10, 9, 20)
    report = run_bot(STUDY, Worker(), "worker-1")
    assert (report.status, report.completion_code) == ("completed", "JUDGE2026")
    # The quiz (10 gold items), then 9 new items and a gold check, twice: 18 new, 12 gold in all.
    expected = [("quiz", True)] * 10 + ([("queue", False)] * 9 + [("gold", True)]) * 2
    assert _claims("worker-1") == expected
    new = [key for key in _claims("worker-1") if not key[1]]
    assert len(new) == 18


def test_the_plan_says_how_many_items_each_worker_gets_and_how_many_are_gold(demo):
    planned = labeling_queue.panel_plan(C.PROJECT, C.ITEMS)
    assert (planned.quiz, planned.items, planned.new, planned.gold_checks, planned.gold, planned.rounds) == (
        10, 20, 18, 2, 12, 30)
    assert planned.summary() == (
        "Each worker first rates the project's 10 qualification items (all gold; 80% must agree with the known "
        "score, else the worker is screened out), then up to 20 items from the queue of 'demo-labeling': 18 new "
        "and 2 gold checks (one after every 9 new items). In all at most 30 items, 12 of them gold.")
    consent = runtime.current_view(runtime.enter(STUDY, {"PROLIFIC_PID": "reader-1"}).participant_id)
    assert consent.step.step is Consent
    text = Consent.body.format(**consent.template_vars)
    assert "You first rate 10 qualification responses whose answers are known. If fewer than 8 of your ratings " \
           "match them, the study ends there and you receive the screen-out code" in text
    assert "Otherwise you then rate up to 20 responses. A few of them are checks whose answer is known." in text


@pytest.mark.parametrize(("items", "gold_every", "gold_left", "checks"), [
    (20, 9, 30, 2), (19, 9, 30, 1), (9, 9, 30, 0), (20, 9, 1, 1), (20, 0, 30, 0), (21, 20, 30, 1), (40, 1, 30, 20)])
def test_gold_checks_among_counts_one_check_after_every_gold_every_items(items, gold_every, gold_left, checks):
    # Worked out by hand: gold_every new items, then a check, again and again, while gold lasts.
    assert labeling_queue.gold_checks_among(items, gold_every, gold_left) == checks


def test_a_study_whose_quiz_and_items_do_not_fit_the_rounds_is_refused(demo):
    with pytest.raises(runtime.StudyError, match=r"quiz of 10 items, and with ITEMS = 45 a worker would rate 55: "
                                                 r"at most 50 fit the study\. Set ITEMS to 40 or fewer\."):
        study_admin.create_study("too-long", "judge_labeling", config={"constants": {"ITEMS": 45}})


PANEL_LINKS = {  # a worker's link from each panel, with the panel's ids
    "prolific": lambda pid: {"PROLIFIC_PID": pid, "STUDY_ID": "s1", "SESSION_ID": f"session-{pid}"},
    "mturk": lambda pid: {"workerId": pid, "assignmentId": f"assignment-{pid}", "hitId": "hit-1",
                          "turkSubmitTo": "https://workersandbox.mturk.com"},
}


def _play_from_panel(slug: str, panel: str, pid: str, bot: Bot) -> runtime.StepView:
    """``bot`` through the runtime as a worker arriving from ``panel``'s link; their last view."""
    entered = runtime.enter(slug, PANEL_LINKS[panel](pid))
    for item in iterate_with_view(bot, lambda: runtime.current_view(entered.participant_id)):
        runtime.submit(entered.participant_id, bot.view.step.index, item.data)
    return runtime.current_view(entered.participant_id)


@pytest.mark.parametrize("panel", sorted(PANEL_LINKS))
def test_a_worker_who_fails_the_quiz_is_screened_out_with_the_screen_out_code(demo, panel):
    study_admin.create_study("wave-1", "judge_labeling", config={"completion_code": "PAID1",
                                                                  "screened_out_code": "SCREEN1"})
    failed = _play_from_panel("wave-1", panel, "fails-1", Worker(right=False))
    passed = _play_from_panel("wave-1", panel, "passes-1", Worker())
    assert (failed.status, failed.completion.code, passed.status, passed.completion.code) == (
        "screened_out", "SCREEN1", "completed", "PAID1")
    # Screened out right after the quiz: consent, instructions and the 10 quiz ratings are stored.
    assert len(stored_responses(failed.participant_id)) == 12
    if panel == "prolific":  # Prolific's return link carries the screen-out code
        assert failed.completion.url == "https://app.prolific.com/submissions/complete?cc=SCREEN1"
    else:  # MTurk's form posts it with the assignment
        assert (failed.completion.url, failed.completion.fields) == (
            "https://workersandbox.mturk.com/mturk/externalSubmit",
            {"assignmentId": "assignment-fails-1", "completion_code": "SCREEN1"})


def test_every_export_says_who_was_screened_out_and_why(demo):
    study_admin.create_study("wave-2", "judge_labeling")
    run_bot("wave-2", _expecting(Worker(right=False), "screened_out"), "fails-2")
    run_bot("wave-2", Worker(), "passes-2")
    for pseudonymise in (False, True):
        export = export_study("wave-2", pseudonymise=pseudonymise)
        participants = _rows(export, "participants.csv")
        assert [(p["status"], p["screened_out"], p["screening_reason"], p["completion_code"]) for p in participants] == [
            ("screened_out", "True", "failed the qualification quiz: 0 of 10 items rated as expected, 80% needed",
             "JUDGESCREEN"),
            ("completed", "False", "", "JUDGE2026")]
        workers = _rows(export, "workers.csv")
        assert [(w["screened_out"], w["quiz_done"], w["quiz_correct"], w["quiz_passed"], w["items_labelled"],
                 w["gold_checks"], w["gold_correct"]) for w in workers] == [
            ("True", "10", "0", "False", "0", "0", "0"), ("False", "10", "10", "True", "18", "2", "2")]
        assert workers[0]["screening_reason"] == participants[0]["screening_reason"]
        assert [w["external_id"] for w in workers] == [p["external_id"] for p in participants]


def _expecting(bot: Bot, status: str) -> Bot:
    bot.expected_status = status
    return bot


def _panel_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """``python -m engines.judge panel ...`` (its COMMANDS entry): exit status, stdout, stderr."""
    from engines.judge.study.plan import COMMAND
    from engines.platform.area_cli import run_command

    try:
        run_command("python -m engines.judge", "judge", {"panel": COMMAND}, ["panel", *argv], errors=(ValueError,))
        status = 0
    except SystemExit as exc:
        status = exc.code
    out = capsys.readouterr()
    return status, out.out.strip(), out.err.strip()


def test_the_cli_says_how_many_items_each_worker_of_a_study_gets_and_how_many_are_gold(demo, capsys):
    study_admin.create_study("short", "judge_labeling", config={"constants": {"ITEMS": 19}})
    status, out, _ = _panel_cli(["--study", STUDY], capsys)
    assert status == 0 and out == labeling_queue.panel_plan(C.PROJECT, 20).summary()
    assert "then up to 20 items from the queue of 'demo-labeling': 18 new and 2 gold checks" in out
    # 19 items: the second check would be the 20th, so one check and 18 new.
    status, out, _ = _panel_cli(["--study", "short", "--json"], capsys)
    result = json.loads(out)
    assert (result["quiz"], result["items"], result["new"], result["gold_checks"], result["gold"]) == (10, 19, 18, 1, 11)
    status, out, _ = _panel_cli(["--project", C.PROJECT, "--items", "30", "--json"], capsys)
    assert (json.loads(out)["new"], json.loads(out)["gold_checks"]) == (27, 3)
    assert _panel_cli(["--study", "ghost"], capsys)[::2] == (2, "error: There is no study called 'ghost'.")


def test_the_projects_page_sentence_names_the_default_items(demo):
    from engines.judge.study.plan import project_summary

    assert project_summary(C.PROJECT).startswith(
        "A panel study over this project with ITEMS = 20 (the default): Each worker first rates the project's 10 "
        "qualification items")

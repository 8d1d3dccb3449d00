"""Groundedness metrics on small hand-built trajectories; every expected number is worked out by
hand in the comments (|S| = merged length, G = merged ground truth widened to 15 s)."""

from __future__ import annotations

import numpy as np
import pytest

from engines.video.metrics import (
    bootstrap_ci,
    by_budget,
    content_words,
    ground_truth_spans,
    keyword_support,
    question_metrics,
    semantic_groundedness,
    summarise,
    with_metrics,
)
from engines.video.spans import Span
from engines.video.trajectory import Final, FrameRef, Hit, Step, Trajectory, Verdict

OPTIONS = ("a blue truck", "a red car", "a white van", "a green bus")
QUESTION = "What vehicle parks by the gate?"


def retrieve(i, *spans, query="vehicle by the gate"):
    return Step(i, "retrieve", {"query": query}, "", 0.1, hits=tuple(Hit(s, 0.5, "caption", "caption") for s in spans))


def inspect(i, spans, verdict, frames=2):
    return Step(i, "inspect", {"spans": tuple(spans), "context": ""}, "", 1.0, verdict=verdict,
                frames=tuple(FrameRef(spans[0].start + k) for k in range(frames)))


def said(letter, evidence, cited, confidence=0.97):
    return Verdict("ANSWER", letter, confidence, evidence, tuple(cited))


def search_more(kind=None):
    return Verdict("SEARCH_MORE", None, 0.4, "not visible", (), "the vehicle", ("car",), kind)


def make(steps, final, *, gt_spans=(Span(15.0, 30.0),), gt_answer="B", duration=600.0, agent="gated",
         budget=(8, 48), uid="q"):
    return Trajectory(run_id="r", benchmark="lvbench", uid=uid, video_id="v", video_path="v.mp4", duration_s=duration,
                      question=QUESTION, options=OPTIONS, gt_answer=gt_answer, gt_spans=tuple(gt_spans),
                      budget={"max_steps": budget[0], "max_frames": budget[1], "fps": 2.0}, steps=tuple(steps),
                      final=final, models={"planner": "p", "inspector": "i"}, agent=agent)


GOOD_EVIDENCE = "At 00:00:15 a red car parks by the gate."


def grounded_run(**kw):
    """G = [15, 30]; R = [0, 16] ∪ [100, 116]; V = [100, 115] ∪ [10, 20]; A = [10, 20] (step 3)."""
    return make([
        retrieve(1, Span(0.0, 16.0), Span(100.0, 116.0)),
        inspect(2, [Span(100.0, 115.0)], search_more("PARTIAL_EVIDENCE")),
        inspect(3, [Span(10.0, 20.0)], said("B", GOOD_EVIDENCE, [15.0])),
    ], Final("B", 3, "gated"), **kw)


# --- G ---------------------------------------------------------------------------------------------------


def test_ground_truth_widening_and_merging():
    # A 15 s span is kept; a point at 100 s becomes [92.5, 107.5]; a point at 3 s would be
    # [-4.5, 10.5] and is shifted to [0, 15]; a point at 598 s in a 600 s video would be
    # [590.5, 605.5] and is shifted to [585, 600].
    traj = make([], Final(None, None, "none"),
                gt_spans=[Span(15.0, 30.0), Span(100.0, 100.0), Span(3.0, 3.0), Span(598.0, 598.0)])
    # [0, 15] and [15, 30] touch and join.
    assert ground_truth_spans(traj) == [Span(0.0, 30.0), Span(92.5, 107.5), Span(585.0, 600.0)]
    # Overlapping references merge: [10, 40] ∪ [30, 60] = [10, 60].
    overlapping = make([], Final(None, None, "none"), gt_spans=[Span(30.0, 60.0), Span(10.0, 40.0)])
    assert ground_truth_spans(overlapping) == [Span(10.0, 60.0)]
    # A 10 s video: a point at 5 s widens to the whole video [0, 10] (cut, the video is too short).
    short = make([], Final(None, None, "none"), gt_spans=[Span(5.0, 5.0)], duration=10.0)
    assert ground_truth_spans(short) == [Span(0.0, 10.0)]


# --- per question ------------------------------------------------------------------------------------


def test_grounded_gated_answer():
    m = question_metrics(grounded_run())
    # A=[10,20], G=[15,30]: |A∩G| = 5, |A∪G| = [10,30] = 20 -> tIoU 5/20 = 0.25; TG_soft = min(1, 0.25/0.05) = 1.
    assert m.tIoU == pytest.approx(0.25)
    assert m.TG_soft == 1.0 and m.TG is True
    # V = [10,20] ∪ [100,115]: |V∩G| = 5 -> coverage 5/15 = 1/3.
    assert m.coverage == pytest.approx(1 / 3)
    # |A∩G| / |A| = 5/10.
    assert m.precision == pytest.approx(0.5)
    # R = [0,16] ∪ [100,116]: |R∩G| = [15,16] = 1 -> recall 1/15.
    assert m.retrieval_recall == pytest.approx(1 / 15)
    # F1 = 2|P∩G| / (|P| + |G|): [0,16] -> 2/31; [100,116] and [100,115] -> 0; [10,20] -> 10/25 = 0.4.
    assert m.best_span_f1 == pytest.approx(0.4)
    # SG: "red", "car" are in the evidence; 15 s is inside A; final B = verdict B.
    assert (m.correct, m.answered, m.SG, m.grounded, m.misaligned_correct) == (True, True, True, True, False)


def test_zero_width_gt_is_widened():
    traj = make([inspect(1, [Span(100.0, 110.0)], said("B", "a red car at 00:01:45", [105.0]))],
                Final("B", 1, "gated"), gt_spans=[Span(100.0, 100.0)])
    m = question_metrics(traj)
    # G = [92.5, 107.5]; A = [100, 110]: |A∩G| = 7.5, |A∪G| = [92.5, 110] = 17.5 -> tIoU 7.5/17.5 = 3/7.
    assert m.tIoU == pytest.approx(3 / 7)
    assert m.precision == pytest.approx(0.75)  # 7.5 / 10
    assert m.coverage == pytest.approx(0.5)  # 7.5 / 15
    assert m.best_span_f1 == pytest.approx(15 / 25)  # 2 * 7.5 / (10 + 15)
    assert m.TG is True and m.SG is True


def test_overlapping_gt_spans_are_merged_before_iou():
    traj = make([inspect(1, [Span(0.0, 20.0)], said("B", "a red car at 00:00:12", [12.0]))],
                Final("B", 1, "gated"), gt_spans=[Span(10.0, 40.0), Span(30.0, 60.0)])
    m = question_metrics(traj)
    # G = [10, 60] (|G| = 50); A = [0, 20]: |A∩G| = 10, |A∪G| = [0, 60] = 60 -> 1/6
    # (against the unmerged [10, 40] it would have been 10/40 = 0.25).
    assert m.tIoU == pytest.approx(1 / 6)
    assert m.coverage == pytest.approx(0.2)  # 10 / 50
    assert m.precision == pytest.approx(0.5)  # 10 / 20
    assert m.best_span_f1 == pytest.approx(20 / 70)  # 2 * 10 / (20 + 50)


def test_multi_span_inspection_takes_the_best_pair_and_merges_v():
    # A = {[0, 10], [20, 35], [25, 40]}, G = [15, 30]. IoU([20,35], G) = 10/20 = 0.5;
    # IoU([25,40], G) = 5/25 = 0.2; IoU([0,10], G) = 0 -> tIoU 0.5.
    # A merged = [0,10] ∪ [20,40] (|A| = 30); |A∩G| = [20,30] = 10 -> precision 10/30.
    traj = make([inspect(1, [Span(0.0, 10.0), Span(20.0, 35.0), Span(25.0, 40.0)],
                         said("B", "a red car at 00:00:22", [22.0]))], Final("B", 1, "gated"))
    m = question_metrics(traj)
    assert m.tIoU == pytest.approx(0.5)
    assert m.precision == pytest.approx(1 / 3)
    assert m.coverage == pytest.approx(10 / 15)
    # Best F1: [20,35] -> 2*10/(15+15) = 2/3; [25,40] -> 2*5/30 = 1/3.
    assert m.best_span_f1 == pytest.approx(2 / 3)
    assert m.retrieval_recall == 0.0  # nothing retrieved


def test_temporally_ungrounded_correct_answer_is_misaligned():
    # A = [300, 315] misses G = [15, 30]: TG = 0, tIoU = 0, TG_soft = 0, precision 0/15 = 0.
    traj = make([inspect(1, [Span(300.0, 315.0)], said("B", "a red car at 00:05:05", [305.0]))],
                Final("B", 1, "gated"))
    m = question_metrics(traj)
    assert (m.tIoU, m.TG_soft, m.precision, m.TG) == (0.0, 0.0, 0.0, False)
    assert m.SG is True  # the evidence still supports B within its own span
    assert (m.correct, m.grounded, m.misaligned_correct) == (True, False, True)


def test_tiny_overlap_gives_soft_tg_below_one():
    # A = [29, 44], G = [15, 30]: |A∩G| = 1, |A∪G| = 29 -> tIoU 1/29 ≈ 0.0345; TG_soft = (1/29)/0.05 = 20/29.
    traj = make([inspect(1, [Span(29.0, 44.0)], said("B", "a red car at 00:00:29", [29.0]))],
                Final("B", 1, "gated"))
    m = question_metrics(traj)
    assert m.tIoU == pytest.approx(1 / 29)
    assert m.TG_soft == pytest.approx(20 / 29)
    assert m.TG is False  # 1/29 < 0.05: upstream's hard gate does not count a one-second brush as grounded


def test_an_answer_from_the_whole_video_is_not_temporally_grounded():
    # A = [0, 600] (the full-video fallback), G = [15, 30]: tIoU = 15 / 600 = 0.025 < 0.05 -> TG False, TG_soft 0.5.
    traj = make([inspect(1, [Span(0.0, 600.0)], said("B", "a red car at 00:00:20", [20.0]))],
                Final("B", 1, "full_video_fallback"))
    m = question_metrics(traj)
    assert m.tIoU == pytest.approx(0.025) and m.TG_soft == pytest.approx(0.5)
    assert (m.TG, m.grounded, m.misaligned_correct) == (False, False, True)


def test_coupled_answer_backed_by_the_inspection_it_saw_is_grounded():
    # The coupled planner inspected [20, 40], saw the verdict B, and answered B resting on it: A = [20, 40],
    # G = [15, 30] -> |A∩G| = 10, tIoU 10 / 25 = 0.4, precision 10 / 20 = 0.5; evidence cites 25 inside A.
    traj = make([inspect(1, [Span(20.0, 40.0)], said("B", "a red car at 00:00:25", [25.0]))],
                Final("B", 1, "coupled"), agent="coupled")
    m = question_metrics(traj)
    assert (m.TG, m.SG, m.precision) == (True, True, 0.5) and m.tIoU == pytest.approx(0.4)
    assert (m.correct, m.grounded, m.misaligned_correct) == (True, True, False)
    # Answering against the verdict it saw (C instead of B) is not semantically grounded.
    against = make([inspect(1, [Span(20.0, 40.0)], said("B", "a red car at 00:00:25", [25.0]))],
                   Final("C", 1, "coupled"), agent="coupled")
    assert question_metrics(against).SG is False


def test_coupled_answer_from_the_text_alone_has_no_authorising_inspection():
    # The coupled planner inspected [20, 40] itself but answered from the text: A = ∅ -> tIoU 0, TG 0, precision 0, SG 0.
    traj = make([inspect(1, [Span(20.0, 40.0)], said("B", "a red car at 00:00:25", [25.0]))],
                Final("B", None, "coupled"), agent="coupled")
    m = question_metrics(traj)
    assert (m.tIoU, m.TG, m.TG_soft, m.precision, m.SG) == (0.0, False, 0.0, 0.0, False)
    assert m.coverage == pytest.approx(10 / 15)  # V = [20, 40], |V∩G| = [20, 30] = 10
    assert (m.correct, m.grounded, m.misaligned_correct) == (True, False, True)


def test_no_gt_spans_gives_na_and_grounded_by_sg_only():
    traj = grounded_run(gt_spans=())
    m = question_metrics(traj)
    assert (m.tIoU, m.TG_soft, m.coverage, m.precision, m.retrieval_recall, m.best_span_f1, m.TG) == (None,) * 7
    assert m.has_gt_spans is False
    assert (m.SG, m.grounded, m.misaligned_correct) == (True, True, False)
    # Without G, a correct answer whose evidence does not support it is misaligned.
    bad = make([inspect(1, [Span(10.0, 20.0)], said("B", "a blue truck at 00:00:15", [15.0]))],
               Final("B", 1, "gated"), gt_spans=())
    assert question_metrics(bad).SG is False
    assert (question_metrics(bad).grounded, question_metrics(bad).misaligned_correct) == (False, True)


def test_a_tiny_overlap_still_counts_for_the_best_span_f1():
    # G = [15, 30] (|G| = 15); the only candidates are retrieval hits.
    # A 0.5 s hit [20, 20.5] inside G: F1 = 2 * 0.5 / (0.5 + 15) = 1 / 15.5 = 2/31.
    short_hit = make([retrieve(1, Span(20.0, 20.5))], Final(None, None, "none"))
    assert question_metrics(short_hit).best_span_f1 == pytest.approx(2 / 31)
    # A 15.5 s hit [29.5, 45] overlapping G by 0.5 s: F1 = 2 * 0.5 / (15.5 + 15) = 1 / 30.5 = 2/61.
    brushing_hit = make([retrieve(1, Span(29.5, 45.0))], Final(None, None, "none"))
    m = question_metrics(brushing_hit)
    assert m.best_span_f1 == pytest.approx(2 / 61)
    assert m.retrieval_recall == pytest.approx(0.5 / 15)


def test_tg_hard_gate_includes_exactly_five_percent():
    # A = [0, 300] contains G = [15, 30]: |A∩G| = 15, |A∪G| = 300 -> tIoU 15/300 = 0.05 exactly, which passes
    # upstream's gate 1[IoU_max >= 0.05]; TG_soft = min(1, 0.05/0.05) = 1.
    traj = make([inspect(1, [Span(0.0, 300.0)], said("B", "a red car at 00:00:20", [20.0]))],
                Final("B", 1, "gated"))
    m = question_metrics(traj)
    assert m.tIoU == pytest.approx(0.05) and m.TG_soft == pytest.approx(1.0)
    assert (m.TG, m.SG, m.grounded, m.misaligned_correct) == (True, True, True, False)


def test_one_second_inspection_has_full_precision():
    # A = [20, 21] lies inside G = [15, 30]: precision |A∩G| / |A| = 1 / 1 = 1; tIoU 1/15; coverage 1/15.
    traj = make([inspect(1, [Span(20.0, 21.0)], said("B", "a red car at 00:00:20", [20.0]))],
                Final("B", 1, "gated"))
    m = question_metrics(traj)
    assert m.precision == pytest.approx(1.0)
    assert m.tIoU == pytest.approx(1 / 15) and m.coverage == pytest.approx(1 / 15)
    assert m.TG is True  # 1/15 ≈ 0.067 >= 0.05


def test_a_clip_shorter_than_a_second_still_has_gt_spans():
    # A 0.8 s clip with the reference [0, 0.8]: widening to 15 s is cut to the clip, G = [0, 0.8] (|G| = 0.8 > 0).
    # Inspecting the whole clip: A = G -> tIoU 1, precision 1, coverage 1, F1 2 * 0.8 / 1.6 = 1.
    traj = make([inspect(1, [Span(0.0, 0.8)], said("B", "a red car at 00:00:00", [0.0]))],
                Final("B", 1, "gated"), gt_spans=[Span(0.0, 0.8)], duration=0.8)
    m = question_metrics(traj)
    assert m.has_gt_spans is True
    assert (m.tIoU, m.precision, m.coverage, m.best_span_f1) == pytest.approx((1.0, 1.0, 1.0, 1.0))
    assert (m.TG, m.SG, m.grounded) == (True, True, True)


def test_unanswered_question():
    traj = make([inspect(1, [Span(300.0, 315.0)], search_more())], Final(None, None, "none"))
    m = question_metrics(traj)
    assert (m.answered, m.correct, m.SG, m.grounded, m.misaligned_correct) == (False, False, None, False, False)
    assert (m.tIoU, m.TG, m.precision, m.coverage) == (0.0, False, 0.0, 0.0)


def test_wrong_answer_and_unlabelled_question():
    wrong = make([inspect(1, [Span(10.0, 20.0)], said("A", "a blue truck at 00:00:15", [15.0]))],
                 Final("A", 1, "gated"))
    m = question_metrics(wrong)
    assert (m.correct, m.TG, m.SG, m.grounded, m.misaligned_correct) == (False, True, True, False, False)
    unlabelled = grounded_run(gt_answer=None)
    m = question_metrics(unlabelled)
    assert (m.correct, m.grounded, m.misaligned_correct) == (None, None, None)
    assert m.SG is True and m.TG is True


# --- SG conditions ------------------------------------------------------------------------------------


def sg_of(evidence="a red car at 00:00:15", cited=(15.0,), verdict_letter="B", final=("B", "gated")):
    steps = [inspect(1, [Span(10.0, 20.0)], said(verdict_letter, evidence, cited))]
    return semantic_groundedness(make(steps, Final(final[0], 1, final[1])))


def test_sg_conditions():
    assert sg_of() is True
    assert sg_of(evidence="a blue truck at 00:00:15") is False  # the evidence speaks of another option
    assert sg_of(cited=()) is False  # no cited time
    assert sg_of(cited=(300.0,)) is False  # cited time outside A = [10, 20]
    assert sg_of(cited=(21.0,)) is True  # 1 s past the end: inside the tolerance
    assert sg_of(cited=(21.5,)) is False  # 1.5 s past the end
    assert sg_of(cited=(300.0, 12.0)) is True  # at least one citation inside A
    # A forced answer that differs from the forced inspection's verdict.
    assert sg_of(verdict_letter="B", final=("C", "forced_last_step")) is False
    assert sg_of(verdict_letter="A,C", final=("A,C", "forced_last_step")) is False  # no single option text


def test_sg_uses_the_given_judge():
    calls = []

    def judge(evidence, question, option_text):
        calls.append((evidence, question, option_text))
        return False

    traj = grounded_run()
    assert question_metrics(traj, judge=judge).SG is False
    assert calls == [(GOOD_EVIDENCE, QUESTION, "a red car")]


# --- keyword judge ------------------------------------------------------------------------------------


def test_content_words():
    # "a" and "in" are shorter than 3 letters; "the" and "with" are stop words; numbers are kept.
    assert content_words("A man in the blue coat with 3 dogs") == ["man", "blue", "coat", "3", "dogs"]


@pytest.mark.parametrize(
    ("evidence", "option", "supported"),
    [
        ("The RED car parks.", "a red car", True),  # both content words, any case
        ("A red truck parks.", "a red car", False),  # "car" missing (<= 3 words: all needed)
        ("Three red cars park.", "a red car", False),  # exact words: "cars" is not "car"
        # 5 content words (man, blue, coat, opens, door): at least 2/3 needed, 3*found >= 10 -> found >= 4.
        ("a man in a blue coat opens the gate", "man in blue coat opens door", True),  # 4 found
        ("a man in a blue shirt opens the gate", "man in blue coat opens door", False),  # 3 found
        # 3 content words (man, blue, coat): all three needed.
        ("a man in blue", "man in blue coat", False),
        ("3 people wait", "3", True),  # numbers count
        ("three people wait", "3", False),
        ("No, nobody enters.", "No", True),  # no content word: whole-word match
        ("Nobody enters.", "No", False),
        # 4 content words (man, blue, coat, door): 2/3 rule, 3*found >= 8 -> found >= 3 (not all four).
        ("a man in a blue coat", "man blue coat door", True),  # 3 found
        ("a man in a blue shirt", "man blue coat door", False),  # 2 found
        # 6 content words (man, blue, coat, opens, red, door): 3*found >= 12 -> found >= 4; exactly 2/3 counts.
        ("a man in a blue coat opens the gate", "man blue coat opens red door", True),  # 4 found
        ("a man in a blue coat shuts the gate", "man blue coat opens red door", False),  # 3 found
        # "No one": "no" is short and "one" a stop word, so the whole phrase "no one" must appear.
        ("No one enters the gate.", "No one", True),
        ("Nobody enters, one man waits.", "No one", False),
    ],
)
def test_keyword_support(evidence, option, supported):
    assert keyword_support(evidence, QUESTION, option) is supported


# --- aggregates --------------------------------------------------------------------------------------


def four_runs():
    """a: grounded gated answer (3 steps, 4 frames; SEARCH_MORE PARTIAL_EVIDENCE), budget (8, 48).
    b: coupled correct answer, V = [20, 40] (1 step, 2 frames), budget (8, 48).
    c: no GT spans, gated correct answer with SG (1 step, 2 frames), budget (16, 64).
    d: unanswered, GT [15, 30], one SEARCH_MORE without type on [300, 315] (1 step, 2 frames), budget (16, 64)."""
    a = grounded_run(uid="a")
    b = make([inspect(1, [Span(20.0, 40.0)], said("B", "a red car at 00:00:25", [25.0]))],
             Final("B", None, "coupled"), agent="coupled", uid="b")
    c = make([inspect(1, [Span(10.0, 20.0)], said("A", "a blue truck at 00:00:15", [15.0]))],
             Final("A", 1, "gated"), gt_spans=(), gt_answer="A", budget=(16, 64), uid="c")
    d = make([inspect(1, [Span(300.0, 315.0)], search_more())], Final(None, None, "none"), gt_answer="C",
             budget=(16, 64), uid="d")
    return [a, b, c, d]


def test_summarise_by_hand():
    s = summarise(four_runs())
    assert (s["n"], s["n_scored"], s["n_answered"], s["n_with_gt_spans"]) == (4, 4, 3, 3)
    assert s["accuracy"] == pytest.approx(0.75)  # a, b, c correct; d unanswered
    assert s["answered_rate"] == pytest.approx(0.75)
    # With GT: a, b, d. tIoU 0.25, 0, 0 -> 0.25/3; TG_soft 1, 0, 0 -> 1/3.
    assert s["mean_tIoU"] == pytest.approx(0.25 / 3)
    assert s["mean_TG_soft"] == pytest.approx(1 / 3)
    # coverage 1/3, 2/3, 0 -> (1/3 + 2/3 + 0)/3 = 1/3; precision 0.5, 0, 0 -> 1/6.
    assert s["mean_coverage"] == pytest.approx(1 / 3)
    assert s["mean_precision"] == pytest.approx(1 / 6)
    # recall 1/15, 0, 0 -> 1/45; F1 0.4, 2*10/(20+15) = 4/7, 0 -> (0.4 + 4/7)/3.
    assert s["mean_retrieval_recall"] == pytest.approx(1 / 45)
    assert s["mean_best_span_f1"] == pytest.approx((0.4 + 4 / 7) / 3)
    assert s["TG_rate"] == pytest.approx(1 / 3)  # only a
    # SG over answered a, b, c: True, False (coupled), True -> 2/3; hallucination 1/3.
    assert s["SG_rate"] == pytest.approx(2 / 3)
    assert s["semantic_hallucination"] == pytest.approx(1 / 3)
    # grounded: a (TG and SG), c (no GT: SG) -> 2/4; misaligned: b -> 1/4.
    assert s["grounded_accuracy"] == pytest.approx(0.5)
    assert s["misaligned_correct_rate"] == pytest.approx(0.25)
    assert s["final_modes"] == {"gated": 2, "forced_last_step": 0, "full_video_fallback": 0, "coupled": 1, "none": 1}
    assert s["search_more_types"] == {"SPAN_MISMATCH": 0, "PARTIAL_EVIDENCE": 1, "VISUAL_UNCLEAR": 0,
                                      "IDENTITY_AMBIGUOUS": 0, "REPEATED_FAIL": 0, "UNTYPED": 1}
    assert s["mean_steps"] == pytest.approx(6 / 4)  # 3 + 1 + 1 + 1
    assert s["mean_frames"] == pytest.approx(10 / 4)  # 4 + 2 + 2 + 2
    low, high = s["accuracy_ci"]
    assert 0.0 <= low <= 0.75 <= high <= 1.0


def test_summarise_of_nothing():
    s = summarise([])
    assert s["n"] == 0 and s["accuracy"] is None and s["accuracy_ci"] is None and s["SG_rate"] is None
    assert s["semantic_hallucination"] is None and s["mean_steps"] is None
    assert sum(s["final_modes"].values()) == 0


def test_by_budget_groups_and_orders():
    groups = by_budget(reversed(four_runs()))
    assert list(groups) == [(8, 48), (16, 64)]
    assert groups[(8, 48)]["n"] == 2 and groups[(8, 48)]["accuracy"] == 1.0  # a, b correct
    assert groups[(16, 64)]["n"] == 2 and groups[(16, 64)]["accuracy"] == 0.5  # c correct, d unanswered
    assert groups[(16, 64)]["n_with_gt_spans"] == 1  # only d


def test_with_metrics_fills_the_cache():
    traj = with_metrics(grounded_run())
    assert traj.metrics["tIoU"] == pytest.approx(0.25) and traj.metrics["SG"] is True
    assert traj.metrics["correct"] is True
    # The given judge decides SG: one that never supports makes the same run ungrounded (TG alone is not enough).
    rejected = with_metrics(grounded_run(), judge=never_supports)
    assert rejected.metrics["SG"] is False and rejected.metrics["TG"] is True
    assert (rejected.metrics["grounded"], rejected.metrics["misaligned_correct"]) == (False, True)


def never_supports(evidence, question, option_text):
    return False


def test_aggregates_use_the_given_judge():
    # With a judge that never supports, no answer is semantically grounded: SG_rate 0 over the answered a, b, c,
    # hallucination 1, grounded accuracy 0, and every correct answer (a, b, c of 4) is misaligned -> 3/4.
    s = summarise(four_runs(), never_supports)
    assert (s["SG_rate"], s["semantic_hallucination"], s["grounded_accuracy"]) == (0.0, 1.0, 0.0)
    assert s["misaligned_correct_rate"] == pytest.approx(0.75)
    # by_budget passes the judge on: (8, 48) holds a, b (both correct, now misaligned); (16, 64) holds c, d.
    groups = by_budget(four_runs(), never_supports)
    assert groups[(8, 48)]["SG_rate"] == 0.0 and groups[(8, 48)]["misaligned_correct_rate"] == 1.0
    assert groups[(16, 64)]["SG_rate"] == 0.0 and groups[(16, 64)]["grounded_accuracy"] == 0.0


def reference_ci(successes, n, *, n_resamples=2000, seed=0, level=0.95):
    """The docstring's procedure written out with numpy (not the code under test): n_resamples draws of
    Binomial(n, successes/n)/n from default_rng(seed), cut at the (1 - level)/2 and (1 + level)/2 quantiles."""
    means = np.random.default_rng(seed).binomial(n, successes / n, size=n_resamples) / n
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def test_summarise_intervals_follow_the_given_resampling():
    runs = four_runs()
    # accuracy outcomes a, b, c, d = 1, 1, 1, 0 (3 of 4); grounded outcomes = 1, 0, 1, 0 (2 of 4).
    s = summarise(runs, n_resamples=7, seed=3)
    assert s["accuracy_ci"] == pytest.approx(reference_ci(3, 4, n_resamples=7, seed=3))
    assert s["grounded_accuracy_ci"] == pytest.approx(reference_ci(2, 4, n_resamples=7, seed=3))
    # These differ from the defaults' intervals, so the arguments visibly matter.
    assert reference_ci(3, 4, n_resamples=7, seed=3) not in (reference_ci(3, 4, n_resamples=7), reference_ci(3, 4, seed=3))
    assert reference_ci(2, 4, n_resamples=7, seed=3) not in (reference_ci(2, 4, n_resamples=7), reference_ci(2, 4, seed=3))
    # One resample: both ends of each interval are that single draw.
    one = summarise(runs, n_resamples=1)
    assert one["accuracy_ci"][0] == one["accuracy_ci"][1]
    assert one["grounded_accuracy_ci"][0] == one["grounded_accuracy_ci"][1]
    # by_budget passes the resampling on: (16, 64) holds c (correct, grounded) and d (unanswered): 1 of 2.
    groups = by_budget(runs, n_resamples=7, seed=3)
    assert groups[(16, 64)]["accuracy_ci"] == pytest.approx(reference_ci(1, 2, n_resamples=7, seed=3))
    assert groups[(16, 64)]["accuracy_ci"] != pytest.approx(reference_ci(1, 2))


def test_summarise_default_intervals():
    # 13 scored runs: 5 grounded correct answers (grounded_run) and 8 wrong ones (answer A, gt B) -> accuracy
    # and grounded accuracy 5/13; the defaults are 2000 resamples, seed 0, a 95 % interval.
    wrong = make([inspect(1, [Span(10.0, 20.0)], said("A", "a blue truck at 00:00:15", [15.0]))], Final("A", 1, "gated"))
    runs = [grounded_run(uid=f"g{i}") for i in range(5)] + [wrong] * 8
    s = summarise(runs)
    assert s["accuracy"] == pytest.approx(5 / 13) and s["grounded_accuracy"] == pytest.approx(5 / 13)
    assert s["accuracy_ci"] == pytest.approx(reference_ci(5, 13))
    assert s["grounded_accuracy_ci"] == pytest.approx(reference_ci(5, 13))


# --- bootstrap -----------------------------------------------------------------------------------------


def test_bootstrap_ci():
    # 50 of 100: standard error sqrt(0.5 * 0.5 / 100) = 0.05, so the 95 % interval is about 0.5 ± 0.098.
    outcomes = [1] * 50 + [0] * 50
    low, high = bootstrap_ci(outcomes, seed=0)
    assert 0.38 <= low <= 0.42 and 0.58 <= high <= 0.62
    assert bootstrap_ci(outcomes, seed=0) == (low, high)  # seeded: the same interval again
    assert bootstrap_ci([True] * 7) == (1.0, 1.0)  # no variation to resample
    assert bootstrap_ci([0, 0, 0]) == (0.0, 0.0)
    assert bootstrap_ci([]) is None
    with pytest.raises(ValueError, match=r"^bootstrap_ci takes 0/1 outcomes \(a rate\)$"):
        bootstrap_ci([0.5, 1.0])


def test_bootstrap_ci_defaults_are_the_documented_procedure():
    # 5 of 13: defaults 2000 resamples, seed 0, level 0.95 (the 2.5 % and 97.5 % quantiles).
    outcomes = [1] * 5 + [0] * 8
    assert bootstrap_ci(outcomes) == pytest.approx(reference_ci(5, 13))
    # The given seed is used: 7 resamples from seed 3 (any other seed would draw differently).
    assert bootstrap_ci(outcomes, n_resamples=7, seed=3) == pytest.approx(reference_ci(5, 13, n_resamples=7, seed=3))
    assert reference_ci(5, 13, n_resamples=7, seed=3) != pytest.approx(reference_ci(5, 13, n_resamples=7))
    # A 50 % interval: the 25 % and 75 % quantiles.
    assert bootstrap_ci(outcomes, level=0.5) == pytest.approx(reference_ci(5, 13, level=0.5))

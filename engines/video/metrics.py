"""Accuracy and groundedness of long-video QA trajectories (docs/video.md, "Method: temporal
and semantic groundedness"; VideoSEAL's groundedness, with upstream's reward code for the formulas).

Span sets (|S| = length of the merged union, :mod:`engines.video.spans`):

- G: the ground-truth evidence spans, each shorter than w = 15 s widened to w (``spans.widen``, kept
  inside the video, as upstream ``normalize_window_min_width`` widens inspected spans), then merged;
- A: the spans of the inspection whose verdict authorised the answer; for the coupled agent, whose
  planner answers by itself, the inspection it had last seen (empty when it answered from the
  retrieved text alone, and when nothing was answered);
- V: every inspected span; R: every retrieved hit span.

Per question (``None`` = not applicable):

==================  ==============================================================================
correct             final answer == gt answer (no answer: False; no gt answer: None)
tIoU                max over a in A, g in G of |a ∩ g| / |a ∪ g| (upstream ``visual_inspect_iou_max``)
coverage            |V ∩ G| / |G|
precision           |A ∩ G| / |A| (0.0 when A is empty)
retrieval_recall    |R ∩ G| / |G|
best_span_f1        max over every retrieved or inspected span P of the F1 of |P ∩ G|/|P| and
                    |P ∩ G|/|G|, = 2|P ∩ G| / (|P| + |G|) (upstream ``tool_time_f1_best``)
TG                  tIoU >= 0.05, upstream's hard gate ``1[IoU_max >= 0.05]``; TG_soft = clip(tIoU /
                    0.05, 0, 1), its soft gate. (Any overlap, |A ∩ G| > 0, would call an answer
                    from an inspection of the whole video grounded whatever it looked at.)
SG                  the judge finds the authorising verdict's evidence supports "answer = option
                    text", the evidence cites a time inside A (± 1 s), and the final answer is the
                    verdict's answer; None without an answer
grounded            correct and TG and SG (without G: correct and SG)
misaligned_correct  correct and not (TG and SG) (without G: correct and not SG)
==================  ==============================================================================

Without ground-truth spans (every benchmark but LVBench) tIoU, coverage, precision, recall, F1,
TG and TG_soft are None. The default judge, :func:`keyword_support`, is a keyword rule, not NLI
or an LLM: pass an LLM judge with the same signature for the paper's setting.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace

import numpy as np

from engines.video.spans import MIN_WIDTH_S, Span, intersection_length, iou, merge, total_length, widen
from engines.video.trajectory import FINAL_MODES, SEARCH_MORE_TYPES, Trajectory

GT_MIN_WIDTH_S = MIN_WIDTH_S  # w: a point-like reference becomes a 15 s window
TG_SOFT_IOU = 0.05  # upstream soft gate: g = clip(IoU_max / 0.05)
CITE_TOLERANCE_S = 1.0  # a cited time counts as inside A within this margin (citations are whole seconds)
UNTYPED = "UNTYPED"  # search_more_types key of a SEARCH_MORE verdict without a SearchMoreType

Judge = Callable[[str, str, str], bool]  # (evidence, question, option_text) -> supported?

# ---------------------------------------------------------------------------------------------------
# The offline judge.

STOP_WORDS = frozenset(
    "the and are was were for with from into onto that this these those there their them they then than "
    "his her its she him has have had not but all any can who whom what which when where why how does did "
    "doing one some about over under out off very just also been being will would should could".split()
)


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def content_words(text: str) -> list[str]:
    """The content words of ``text``: lowercase words of 3+ characters minus STOP_WORDS, and numbers
    of any length ("3", "10"), without repeats."""
    words = (w for w in _tokens(text) if w.isdigit() or (len(w) >= 3 and w not in STOP_WORDS))
    return list(dict.fromkeys(words))


def keyword_support(evidence: str, question: str, option_text: str) -> bool:
    """Offline judge: does ``evidence`` mention the content of ``option_text``?

    A keyword rule, not entailment (no NLI model, no LLM): True iff the evidence contains every
    content word of the option (:func:`content_words`), or at least 2/3 of them when the option has
    more than three. Exact lowercase words: "cars" does not match "car". An option with no content
    word ("No", "A") is supported when the evidence contains it as a whole word. ``question`` is
    part of the judge interface (an LLM judge reads it) and unused here.
    """
    del question  # the keyword rule looks only at the option and the evidence
    words = content_words(option_text)
    evidence_words = set(_tokens(evidence))
    if not words:
        phrase = " ".join(_tokens(option_text))
        return bool(phrase) and re.search(rf"\b{re.escape(phrase)}\b", " ".join(_tokens(evidence))) is not None
    found = sum(word in evidence_words for word in words)
    if len(words) <= 3:
        return found == len(words)
    return 3 * found >= 2 * len(words)


# ---------------------------------------------------------------------------------------------------
# One question.


@dataclass(frozen=True)
class QuestionMetrics:
    """The metrics of one trajectory (see the module docstring); ``None`` where not applicable."""

    correct: bool | None
    answered: bool
    has_gt_spans: bool
    tIoU: float | None
    TG_soft: float | None
    coverage: float | None
    precision: float | None
    retrieval_recall: float | None
    best_span_f1: float | None
    TG: bool | None
    SG: bool | None
    grounded: bool | None
    misaligned_correct: bool | None

    def to_dict(self) -> dict:
        return asdict(self)


def ground_truth_spans(trajectory: Trajectory, min_width_s: float = GT_MIN_WIDTH_S) -> list[Span]:
    """G: the trajectory's ground-truth spans widened to ``min_width_s`` (inside the video) and merged."""
    return merge(widen(span, min_width_s, trajectory.duration_s) for span in trajectory.gt_spans)


def _best_span_f1(candidates: Iterable[Span], gt: list[Span], gt_length: float) -> float:
    best = 0.0
    for span in candidates:
        overlap = intersection_length([span], gt)
        if span.length > 0 and overlap > 0:
            best = max(best, 2 * overlap / (span.length + gt_length))  # F1 of overlap/|P| and overlap/|G|
    return best


def semantic_groundedness(trajectory: Trajectory, judge: Judge = keyword_support) -> bool | None:
    """SG of one trajectory: None without an answer; False when no inspector's verdict backs the
    answer (a coupled planner that answered from the text alone, or against the verdict it saw)."""
    answer = trajectory.final.answer
    if answer is None:
        return None
    verdict = trajectory.authorising_verdict
    if verdict is None or verdict.answer != answer:
        return False
    authorising = trajectory.authorising_spans
    if not any(span.contains(t, CITE_TOLERANCE_S) for t in verdict.cited_times for span in authorising):
        return False
    option = trajectory.option_text(answer)
    if option is None:  # e.g. "A,C": no single option text to check
        return False
    return bool(judge(verdict.evidence, trajectory.question, option))


def question_metrics(trajectory: Trajectory, *, judge: Judge = keyword_support) -> QuestionMetrics:
    """The metrics of one trajectory.

    Args:
        trajectory: a finished run of one question.
        judge: ``(evidence, question, option_text) -> bool``, the semantic-support judge of SG.

    Returns:
        QuestionMetrics with the fields of the module docstring's table.
    """
    t = trajectory
    answered = t.final.answer is not None
    correct = None
    if t.gt_answer is not None:
        correct = answered and t.final.answer.strip().upper() == t.gt_answer.strip().upper()
    sg = semantic_groundedness(t, judge)
    gt = ground_truth_spans(t)
    gt_length = total_length(gt)
    has_gt = gt_length > 0
    if has_gt:
        authorising = t.authorising_spans
        inspected, retrieved = t.inspected_spans, t.retrieved_spans
        t_iou = max((iou(a, g) for a in authorising for g in gt), default=0.0)
        overlap_a = intersection_length(authorising, gt)
        tg: bool | None = t_iou >= TG_SOFT_IOU
        tg_soft = min(1.0, max(0.0, t_iou / TG_SOFT_IOU))
        coverage = intersection_length(inspected, gt) / gt_length
        length_a = total_length(authorising)
        precision = overlap_a / length_a if length_a > 0 else 0.0
        recall = intersection_length(retrieved, gt) / gt_length
        f1 = _best_span_f1((*retrieved, *inspected), gt, gt_length)
    else:
        t_iou = tg = tg_soft = coverage = precision = recall = f1 = None
    if correct is None:
        grounded = misaligned = None
    else:
        supported = bool(sg) and (tg if has_gt else True)
        grounded, misaligned = correct and supported, correct and not supported
    return QuestionMetrics(
        correct=correct, answered=answered, has_gt_spans=has_gt, tIoU=t_iou, TG_soft=tg_soft, coverage=coverage,
        precision=precision, retrieval_recall=recall, best_span_f1=f1, TG=tg, SG=sg, grounded=grounded,
        misaligned_correct=misaligned,
    )


def with_metrics(trajectory: Trajectory, *, judge: Judge = keyword_support) -> Trajectory:
    """``trajectory`` with ``metrics`` filled in (the cache the viewer reads)."""
    return replace(trajectory, metrics=question_metrics(trajectory, judge=judge).to_dict())


# ---------------------------------------------------------------------------------------------------
# Aggregates.


def bootstrap_ci(outcomes: Iterable[bool | float], *, n_resamples: int = 2000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float] | None:
    """Percentile bootstrap interval of a rate (the mean of 0/1 outcomes); ``None`` for no outcomes.

    Resampling n outcomes with replacement and taking the mean is a draw of Binomial(n, p)/n with p
    the observed rate, so the resamples are drawn that way directly (seeded, ``np.random.default_rng``).
    """
    values = np.asarray([float(x) for x in outcomes])
    if values.size == 0:
        return None
    if np.any((values != 0) & (values != 1)):
        raise ValueError("bootstrap_ci takes 0/1 outcomes (a rate)")
    n, rate = values.size, float(values.mean())
    rng = np.random.default_rng(seed)
    means = rng.binomial(n, rate, size=n_resamples) / n
    alpha = (1.0 - level) / 2
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)


def _mean(values: Iterable[float | bool | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return sum(present) / len(present) if present else None


def summarise(trajectories: Iterable[Trajectory], judge: Judge = keyword_support, *, n_resamples: int = 2000,
              seed: int = 0) -> dict:
    """The aggregate metrics of a run.

    Returns:
        dict with ``n``; ``n_scored`` (with a gt answer), ``n_answered``, ``n_with_gt_spans``;
        ``accuracy`` (over n_scored; no answer counts as wrong) and ``accuracy_ci``;
        ``answered_rate``; ``mean_tIoU``, ``mean_TG_soft``, ``mean_coverage``, ``mean_precision``,
        ``mean_retrieval_recall``, ``mean_best_span_f1`` and ``TG_rate`` over the questions with
        gt spans; ``SG_rate`` and ``semantic_hallucination`` (= 1 - SG_rate) over the answered
        questions; ``grounded_accuracy`` (with ``grounded_accuracy_ci``) and
        ``misaligned_correct_rate`` over n_scored; ``final_modes`` (count per FINAL_MODES);
        ``search_more_types`` (count per SEARCH_MORE_TYPES and UNTYPED over every SEARCH_MORE
        verdict); ``guesses`` (answers that rest on nothing seen, ``Final.guess``) and ``guess_rate``
        over the answered questions; ``mean_steps`` and ``mean_frames`` (steps and frames used). Rates and means are
        ``None`` when their denominator is 0; intervals are 95 % bootstrap intervals.
    """
    trajectories = list(trajectories)
    rows = [question_metrics(t, judge=judge) for t in trajectories]
    scored = [r for r in rows if r.correct is not None]
    with_gt = [r for r in rows if r.has_gt_spans]
    answered = [r for r in rows if r.answered]
    sg_rate = _mean(r.SG for r in answered)
    search_more = Counter(
        step.verdict.search_more_type or UNTYPED
        for t in trajectories for step in t.steps
        if step.verdict is not None and step.verdict.status == "SEARCH_MORE"
    )
    modes = Counter(t.final.mode for t in trajectories)
    return {
        "n": len(rows),
        "n_scored": len(scored),
        "n_answered": len(answered),
        "n_with_gt_spans": len(with_gt),
        "accuracy": _mean(r.correct for r in scored),
        "accuracy_ci": bootstrap_ci([r.correct for r in scored], n_resamples=n_resamples, seed=seed),
        "answered_rate": _mean(r.answered for r in rows),
        "mean_tIoU": _mean(r.tIoU for r in with_gt),
        "mean_TG_soft": _mean(r.TG_soft for r in with_gt),
        "mean_coverage": _mean(r.coverage for r in with_gt),
        "mean_precision": _mean(r.precision for r in with_gt),
        "mean_retrieval_recall": _mean(r.retrieval_recall for r in with_gt),
        "mean_best_span_f1": _mean(r.best_span_f1 for r in with_gt),
        "TG_rate": _mean(r.TG for r in with_gt),
        "SG_rate": sg_rate,
        "semantic_hallucination": None if sg_rate is None else 1.0 - sg_rate,
        "grounded_accuracy": _mean(r.grounded for r in scored),
        "grounded_accuracy_ci": bootstrap_ci([r.grounded for r in scored], n_resamples=n_resamples, seed=seed),
        "misaligned_correct_rate": _mean(r.misaligned_correct for r in scored),
        "final_modes": {mode: modes.get(mode, 0) for mode in FINAL_MODES},
        "guesses": sum(1 for t in trajectories if t.final.guess),
        "guess_rate": _mean(t.final.guess for t in trajectories if t.final.answer is not None),
        "search_more_types": {kind: search_more.get(kind, 0) for kind in (*SEARCH_MORE_TYPES, UNTYPED)},
        "mean_steps": _mean(len(t.steps) for t in trajectories),
        "mean_frames": _mean(t.frames_used for t in trajectories),
    }


def by_budget(trajectories: Iterable[Trajectory], judge: Judge = keyword_support, **kw) -> dict[tuple[int, int], dict]:
    """:func:`summarise` per budget ``(max_steps, max_frames)``, in increasing budget order (the
    budget-scaling table: does accuracy rise or fall with more steps?)."""
    groups: dict[tuple[int, int], list[Trajectory]] = {}
    for t in trajectories:
        groups.setdefault((t.budget["max_steps"], t.budget["max_frames"]), []).append(t)
    return {key: summarise(groups[key], judge, **kw) for key in sorted(groups)}

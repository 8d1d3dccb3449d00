"""The judge audit: every judge against the human labels, pooled and by model, attack, category and cell.

Implements the measurements of Schwinn et al. 2026 ("A Coin Flip for Safety", ICML 2026,
arXiv:2603.06594; ``docs/judge.md``, Method) on the project's items:

- per judge, accuracy, precision, recall, F1, balanced accuracy, Cohen's kappa and AUROC
  (``metrics``), pooled and by victim model, attack, semantic category and model x attack cell;
- with ``bootstrap`` > 0, 95% percentile intervals clustered by behaviour: each resample draws
  behaviours with replacement and takes all their items, so it is one vector of behaviour
  multiplicities shared by every judge and breakdown, applied to per-behaviour counts (and, for
  AUROC, to a behaviour x behaviour matrix of ranked pairs), never to items one by one;
- per cell the judge's ASR, its precision-corrected value and the inflation (``asr``);
- inter-annotator agreement and judge concordance (``agreement``);
- optionally the ReliableBench-like and JudgeStressTest-like subsets (``subsets``).

Items without a human label (no label, or a tie with no adjudicator) and verdicts that did not
parse are left out of the metrics and counted in the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from engines.judge import metrics as m
from engines.judge.agreement import AgreementResult, ConcordanceResult, annotator_agreement, judge_concordance
from engines.judge.asr import CellASR, any_per_behaviour, cell_asr
from engines.judge.audit_table import HUMAN_RULES, PARTITIONS, AuditTable, HumanRule, build_table
from engines.judge.items import Item, Label, Verdict
from engines.judge.subsets import (
    ReliableBenchConfig,
    ReliableBenchResult,
    StressTestConfig,
    StressTestResult,
    reliable_bench,
    stress_test,
)
from engines.platform.config_schema import check_fields
from engines.platform.progress import Progress

BREAKDOWNS = PARTITIONS[1:]  # by_model, by_attack, by_category, by_cell


@dataclass(frozen=True)
class AuditConfig:
    """What the audit computes.

    ``bootstrap`` resamples of behaviours give the intervals (0: none; 1,000 is usual); ``seed``
    fixes them. The subsets' class balancing has its own seed in their configs. Each field's
    metadata is its one declaration (``engines.platform.config_schema``): the ``audit`` command's
    option and the ``judge.audit`` job's parameter.
    """

    human_rule: HumanRule = field(default="majority", metadata={
        "help": "an item's human label: the majority of its labels (ties to the adjudicator) or its first label",
        "title": "Human label of an item", "choices": HUMAN_RULES, "cli": {"type": str}})
    bootstrap: int = field(default=0, metadata={
        "help": "resamples of behaviours for 95% intervals (0: none)", "min": 0, "max": 10_000})
    seed: int = field(default=0, metadata={"help": "seed of the bootstrap and the subsets", "min": 0})
    confidence: float = field(default=0.95, metadata={"gt": 0, "lt": 1, "cli": False, "job": False})
    subsets: bool = field(default=False, metadata={
        "help": "also build the ReliableBench-like and JudgeStressTest-like subsets"})
    reliable_bench: ReliableBenchConfig = field(default_factory=ReliableBenchConfig,
                                                metadata={"cli": False, "job": False})
    stress_test: StressTestConfig = field(default_factory=StressTestConfig, metadata={"cli": False, "job": False})

    def __post_init__(self) -> None:
        check_fields(self)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class MetricSet:
    """One judge's metrics on one group of items; None = undefined, with the reason in ``undefined``."""

    n: int
    tp: int
    fp: int
    tn: int
    fn: int
    accuracy: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    balanced_accuracy: float | None
    cohen_kappa: float | None
    auroc: float | None
    undefined: dict[str, str] = field(default_factory=dict)
    ci: dict[str, list] | None = None  # metric: [lo, hi], with bootstrap

    def to_dict(self) -> dict:
        data = asdict(self)
        if self.ci is None:
            data.pop("ci")
        return data


@dataclass
class JudgeReport:
    """Everything the audit says about one judge."""

    judge: str
    n_verdicts: int  # verdicts given, parsed or not
    n_unparsed: int  # verdicts whose reply did not parse
    n_unparsed_labelled: int  # ... on human-labelled items: left out of the metrics
    n_unjudged_labelled: int  # human-labelled items the judge has no verdict on
    pooled: MetricSet
    by_model: dict[str, MetricSet]
    by_attack: dict[str, MetricSet]
    by_category: dict[str, MetricSet]
    by_cell: dict[str, MetricSet]  # keyed "model|attack"
    asr: dict[str, CellASR]  # keyed "model|attack"

    def to_dict(self) -> dict:
        data = {k: getattr(self, k) for k in ("judge", "n_verdicts", "n_unparsed", "n_unparsed_labelled",
                                              "n_unjudged_labelled")}
        data["pooled"] = self.pooled.to_dict()
        for name in BREAKDOWNS:
            data[name] = {group: ms.to_dict() for group, ms in getattr(self, name).items()}
        data["asr"] = {cell: figures.to_dict() for cell, figures in self.asr.items()}
        return data


@dataclass
class AuditResult:
    """The audit's answer; ``to_dict`` is the JSON of ``python -m engines.judge audit --json``."""

    config: AuditConfig
    n_items: int
    n_labels: int  # submitted labels
    n_human_labelled: int  # items with a human label (in the metrics)
    human_label_how: dict[str, int]  # items by how their label was reached: majority, first, adjudicated, tie, ...
    judges: dict[str, JudgeReport]
    agreement: AgreementResult
    concordance: ConcordanceResult
    reliable_bench: ReliableBenchResult | None = None
    stress_test: StressTestResult | None = None

    @property
    def summary(self) -> str:
        parts = [f"{self.n_human_labelled}/{self.n_items} items with a human label ({self.config.human_rule})"]
        for name, report in self.judges.items():
            acc = report.pooled.accuracy
            parts.append(f"{name}: accuracy {'n/a' if acc is None else f'{acc:.3f}'} on {report.pooled.n}")
        kappa = self.agreement.kappa_binary
        parts.append(f"annotator kappa {'n/a' if kappa is None else f'{kappa:.3f}'} on {self.agreement.n_items} pairs")
        return "; ".join(parts)

    def to_dict(self) -> dict:
        data = {"config": self.config.to_dict(), "n_items": self.n_items, "n_labels": self.n_labels,
                "n_human_labelled": self.n_human_labelled, "human_label_how": self.human_label_how,
                "judges": {name: report.to_dict() for name, report in self.judges.items()},
                "agreement": self.agreement.to_dict(), "concordance": self.concordance.to_dict()}
        if self.reliable_bench is not None or self.stress_test is not None:
            data["subsets"] = {"reliable_bench": self.reliable_bench.to_dict() if self.reliable_bench else None,
                               "stress_test": self.stress_test.to_dict() if self.stress_test else None}
        data["summary"] = self.summary
        return data


def resample_weights(n_behaviours: int, n_resamples: int, seed: int) -> np.ndarray:
    """(resamples, behaviours): how often each behaviour is drawn when drawing n_behaviours with replacement."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_behaviours, size=(n_resamples, n_behaviours))
    flat = (np.arange(n_resamples)[:, None] * n_behaviours + draws).ravel()
    return np.bincount(flat, minlength=n_resamples * n_behaviours).reshape(n_resamples, n_behaviours).astype(float)


def _metric_sets(table: AuditTable, j: int, rows: np.ndarray, partition: str, weights: np.ndarray | None,
                 confidence: float) -> tuple[dict[str, MetricSet], np.ndarray]:
    """The metric sets of judge ``j`` over the groups of one breakdown, and its per-behaviour counts.

    ``rows``: the items in the metrics (human label and parsed verdict), in ascending score order.
    """
    group, names = table.partition(partition)
    nb = len(table.behaviours)
    y, y_hat = table.human[rows], table.label[j, rows]
    g, b, s = group[rows], table.behaviour[rows], table.score[j, rows]
    counts = m.grouped_counts(y, y_hat, g, len(names), b, nb)  # (groups, behaviours, 4)
    totals = counts.sum(axis=1)
    rates = m.rates_from_counts(totals)
    aurocs = np.full(len(names), np.nan)
    intervals = None
    if weights is None:
        for k in range(len(names)):
            in_group = g == k
            aurocs[k] = m.auroc(y[in_group], s[in_group])
    else:
        resampled = m.rates_from_counts(m.resample_counts(weights, counts))  # each (groups, resamples)
        samples = {name: resampled[name] for name in m.RATE_NAMES}
        samples["auroc"] = np.full((len(names), len(weights)), np.nan)
        everyone = np.ones((1, nb))
        for k in range(len(names)):
            n_pos, n_neg = counts[k, :, 0] + counts[k, :, 3], counts[k, :, 1] + counts[k, :, 2]
            if n_pos.sum() and n_neg.sum():
                in_group = g == k
                pairs = m.auroc_pair_matrix(y[in_group] == 1, s[in_group], b[in_group], nb, presorted=True)
                aurocs[k] = m.auroc_resampled(pairs, n_pos, n_neg, everyone)[0]
                samples["auroc"][k] = m.auroc_resampled(pairs, n_pos, n_neg, weights)
        intervals = {name: m.percentile_interval(v, confidence) for name, v in samples.items()}
    out = {}
    for k, name in enumerate(names):
        tp, fp, tn, fn = (int(v) for v in totals[k])
        values = {metric: m.as_number(rates[metric][k]) for metric in m.RATE_NAMES}
        values["auroc"] = m.as_number(aurocs[k])
        ci = {metric: intervals[metric][k] for metric in m.METRIC_NAMES} if intervals is not None else None
        out[name] = MetricSet(n=tp + fp + tn + fn, tp=tp, fp=fp, tn=tn, fn=fn, **values,
                              undefined=m.undefined_reasons(values), ci=ci)
    return out, counts


def audit_from_table(table: AuditTable, config: AuditConfig = AuditConfig(),
                     progress: Progress | None = None) -> AuditResult:
    """The audit of a built table (``audit_table.build_table``); see ``audit``.

    ``progress(judges done, judges and agreement, message)`` (``engines.platform.progress``) is called after each judge.
    """
    weights = resample_weights(len(table.behaviours), config.bootstrap, config.seed) if config.bootstrap else None
    labelled = table.human >= 0
    nb = len(table.behaviours)
    human_any, human_present = any_per_behaviour(table.cell, table.behaviour, table.human == 1, labelled,
                                                 len(table.cells), nb)
    cells = table.cell_parts()
    reports = {}
    for j, judge in enumerate(table.judges):
        parsed = table.label[j] >= 0
        valid = np.flatnonzero(labelled & parsed)
        rows = valid[np.argsort(table.score[j, valid], kind="stable")]  # one sort serves every group's AUROC
        groups: dict[str, dict[str, MetricSet]] = {}
        cell_counts = None
        for partition in PARTITIONS:
            groups[partition], counts = _metric_sets(table, j, rows, partition, weights, config.confidence)
            if partition == "by_cell":
                cell_counts = counts
        judge_any, judge_present = any_per_behaviour(table.cell, table.behaviour, table.label[j] == 1, parsed,
                                                     len(table.cells), nb)
        asr = cell_asr(cells, judge_any, judge_present, human_any, human_present, cell_counts, weights,
                       config.confidence)
        reports[judge] = JudgeReport(
            judge=judge, n_verdicts=table.n_verdicts[judge], n_unparsed=table.n_unparsed[judge],
            n_unparsed_labelled=int(np.sum(labelled & table.has_verdict[j] & ~parsed)),
            n_unjudged_labelled=int(np.sum(labelled & ~table.has_verdict[j])), pooled=groups["pooled"]["all"],
            by_model=groups["by_model"], by_attack=groups["by_attack"], by_category=groups["by_category"],
            by_cell=groups["by_cell"], asr={table.cells[c]: a for c, a in enumerate(asr)})
        if progress is not None:
            progress(j + 1, len(table.judges) + 1, f"judge {judge} audited")
    judged = table.label >= 0
    concordance = judge_concordance((table.label == 1).sum(axis=0), judged.sum(axis=0))
    return AuditResult(
        config=config, n_items=table.n_items, n_labels=sum(len(s) for s in table.scores),
        n_human_labelled=int(labelled.sum()), human_label_how=table.human_how, judges=reports,
        agreement=annotator_agreement(table.scores), concordance=concordance,
        reliable_bench=reliable_bench(table, config.reliable_bench) if config.subsets else None,
        stress_test=stress_test(table, config.stress_test) if config.subsets else None)


def audit(items: Sequence[Item], labels: Iterable[tuple[str, Label]] | None = None,
          verdicts: Iterable[tuple[str, Verdict]] | None = None, config: AuditConfig = AuditConfig(),
          progress: Progress | None = None) -> AuditResult:
    """Audit every judge against the human labels.

    Args:
        items: the items (``items.read_items``).
        labels: (item_key, label) in labelling order (``items.read_labels``); None: the items' own labels.
        verdicts: (item_key, verdict) (``items.read_verdicts``); None: the items' own ``judges``.
        config: the human-label rule, the bootstrap and the subsets.
        progress: ``progress(done, total, message)`` after each judge (``engines.platform.progress``).

    Returns:
        ``AuditResult``; its ``to_dict()`` is the command line's JSON.

    Examples::

        result = audit(read_items("items.jsonl"), read_labels("labels.csv"), read_verdicts("verdicts.csv"),
                       AuditConfig(bootstrap=1000))
        result.judges["llamaguard3"].by_cell["llama-3.1-8b|GCG"].accuracy
    """
    return audit_from_table(build_table(items, labels, verdicts, config.human_rule), config, progress)

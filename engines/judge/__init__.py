"""Safety-judge labeling and audit: humans label red-teaming outputs, the app measures the judges.

Implements the workflow of "A Coin Flip for Safety: LLM Judges Fail to Reliably Measure
Adversarial Robustness" (Schwinn, Ladenburger, Beyer, Mofakhami, Gidel, Günnemann; ICML 2026,
PMLR v306 schwinn26a, arXiv:2603.06594; code SchwinnL/LLMJudgeReliability): victim-model
generations under attack are labelled by people on the paper's 1-5 scale (>= 3 is harmful), and
safety judges are audited against those labels across victim models, attacks and semantic
categories, with attack success rates (ASR) corrected for the judges' precision. Formats follow
HarmBench (Mazeika et al. 2024, ``cais/HarmBench``) and JailbreakBench (Chao et al. 2024,
``JailbreakBench/jailbreakbench``). See ``shared/specs/judge.md``.

Modules, one job each:

- data: ``items`` (the item schema), ``importers`` (HarmBench, JailbreakBench, generic JSONL/CSV),
  ``exporters`` (back to HarmBench results and JBB ``jailbreaks[]``, with the human labels),
  ``demo`` (the synthetic, redacted demo set in ``assets/judge/``);
- the judges: ``judges`` (string, prompt and learned judges behind one interface), ``backends``
  (the model role: local transformers, OpenAI-compatible endpoints, the offline default),
  ``judging`` (a batch run with a resumable cache);
- the audit: ``audit`` (metrics, breakdowns, clustered bootstrap, ASR inflation, agreement, subsets);
- the surfaces: ``jobs`` (background jobs) and ``__main__`` (``python -m engines.judge``).
"""

"""Safety-judge labeling and audit: humans label red-teaming outputs, the app measures the judges.

Implements the workflow of "A Coin Flip for Safety: LLM Judges Fail to Reliably Measure
Adversarial Robustness" (Schwinn, Ladenburger, Beyer, Mofakhami, Gidel, Günnemann; ICML 2026,
PMLR v306 schwinn26a, arXiv:2603.06594; code SchwinnL/LLMJudgeReliability): victim-model
generations under attack are labelled by people on the paper's 1-5 scale (>= 3 is harmful), and
safety judges are audited against those labels across victim models, attacks and semantic
categories, with attack success rates (ASR) corrected for the judges' precision. Formats follow
HarmBench (Mazeika et al. 2024, ``cais/HarmBench``) and JailbreakBench (Chao et al. 2024,
``JailbreakBench/jailbreakbench``). The method: ``docs/judge.md``, "Method".

Modules, one job each:

- data: ``items`` (the item schema), ``importers`` (HarmBench, JailbreakBench, generic JSONL/CSV),
  ``exporters`` (back to HarmBench results and JBB ``jailbreaks[]``, with the human labels),
  ``demo`` (the synthetic, redacted demo set in ``assets/judge/``);
- the judges: ``prompts`` (the upstream prompts and parsers), ``judges`` (string, prompt and
  learned judges behind one interface), ``offline.learned`` (the offline MiniLM + logistic-regression
  judge), ``backends`` (the model role: local transformers, OpenAI-compatible endpoints),
  ``judging`` (a batch run with a resumable cache);
- the audit: ``audit_table`` (items, labels and verdicts as arrays), ``metrics`` (confusion
  metrics, AUROC, the clustered bootstrap), ``asr`` (ASR, precision correction, inflation),
  ``agreement`` (kappa, alpha, concordance), ``subsets`` (ReliableBench- and JudgeStressTest-like),
  ``audit`` (the report), ``audit_cli``;
- labeling: ``models`` (tables), ``labeling`` (projects: creation, import, opening), ``labeling_queue``
  (the annotator's queue: claims, labels, skips, undo, panel plans), ``review`` (progress,
  disagreements, adjudication, the labelled items),
  ``members`` (project teams: who may label what), ``study/`` (the panel study's queue),
  ``demo_data`` (the demo project ``make run`` loads);
- the surfaces: ``cli_data``, ``uploads`` (data sets imported on the audit page), ``jobs``
  (background jobs) and ``__main__`` (``python -m engines.judge``).
"""

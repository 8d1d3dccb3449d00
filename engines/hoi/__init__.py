"""Human–object-interaction image editing: the HOI-Edit benchmark and its HOI-Eval scores.

Implements the benchmark side of HOI-Edit (ICML 2026; code ``oceanflowlab/HOI-Edit``, commit
``4022133``): instruction-driven edits of how a person interacts with an object, at three levels
(L1 foundational, L2 context spatial understanding, L3 causal and physical reasoning), judged by
HOI-Eval as interaction I, human consistency H, object consistency O and I+Q&A. See
``shared/specs/hoi_edit.md``.

Modules, one job each:

- ``benchmark``: the items of the two upstream annotation JSONs, read verbatim and checked
  (``load_benchmark``, ``BenchmarkItem``, ``BenchmarkFormatError``);
- ``scoring``: HOI-Eval's combination of the evaluator's records into per-tag, per-level and
  paper-table scores, as upstream ``evaluation/compute_scoring_final_scores.py``
  (``read_records``, ``compute_scores``, ``Scores.paper_table``);
- ``judge_replies``: the VLM judge's replies (fenced JSON, numbers as text) read into upstream's
  record fields; a reply that does not parse becomes the field's ``*_error``, never a zero;
- ``ratings``: the arena's Elo and Bradley–Terry ratings with bootstrap intervals and the
  win-rate matrix, as GenAI-Arena's ``arena_elo/elo_rating/elo_analysis.py``;
- ``cli`` and ``__main__``: ``python -m engines.hoi score`` and ``ratings``.

Upstream's release reads ``tags_v4``, which its JSONs lack (every item skipped); ``tags_v6`` is
used here.
"""

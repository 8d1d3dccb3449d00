"""Human–object-interaction image editing: the HOI-Edit benchmark, HOI-Eval, SCPE and the arena.

Implements the tooling of HOI-Edit (ICML 2026; code ``oceanflowlab/HOI-Edit``, commit
``4022133``): instruction-driven edits of how a person interacts with an object, at three levels
(L1 foundational, L2 context spatial understanding, L3 causal and physical reasoning), judged by
HOI-Eval as interaction I, human consistency H, object consistency O and I+Q&A; SCPE, which edits
through an image-to-video model steered by a learned prompt playbook; and a GenAI-Arena-style
voting arena. See ``docs/hoi.md`` (its "Method" section explains what the modules cite).

Modules, one job each:

- ``benchmark``: the items of the two upstream annotation JSONs, read verbatim and checked
  (``load_benchmark``, ``BenchmarkItem``, ``BenchmarkFormatError``);
- ``roles`` and ``backends``: the model roles (grounder, VLM judge, image editor, I2V generator,
  prompt refiner) behind protocols, and every registered implementation by name;
- ``evaluate``: HOI-Eval steps 1-6 over a method's edits into records (``evaluate_method``);
- ``drawing``: upstream's boxes on images (person blue, object red, tool yellow, numbered
  candidates, BEFORE/AFTER titles);
- ``judge_replies``: the VLM judge's replies read into upstream's record fields; a reply that does
  not parse becomes the field's ``*_error``, never a zero;
- ``scoring``: HOI-Eval's combination of records into per-tag, per-level and paper-table scores,
  as upstream ``evaluation/compute_scoring_final_scores.py``;
- ``adapters``: the judge ``openai`` (an OpenAI-compatible multimodal endpoint) and the grounder
  ``transformers`` (Grounding DINO or OWLv2 from a local folder);
- ``generation`` and ``serve``: image editors and I2V models through diffusers pipelines chosen by
  a checked config, and ``python -m engines.hoi serve`` with the ``gradio`` roles that call it;
- ``playbook`` and ``scpe``: SCPE's prompt playbook (merge without repeats, normalize) and its
  learning epochs, final generation, frame sampling and selection, traces (``run_scpe``);
- ``offline``: the offline stand-ins, fenced off (only ``backends`` imports them): the drawn demo
  world, the offline default roles on it, tiny random diffusers pipelines, the synthetic demo
  benchmark and ``python -m engines.hoi demo``;
- ``methods``: a benchmark folder's methods (``<method>_frames`` and ``methods.json``), also read
  over the result folders of the jobs run on it (``method_sources``);
- ``folders``: which folders the area reads benchmarks and files from and writes outputs to (the
  platform's path policy);
- ``arena``, ``votes`` and ``ratings``: the arena's anonymous side-swapped pairs for participants
  (``studies/hoi_arena``), the vote log and its reader; Elo and Bradley–Terry ratings with bootstrap intervals
  and the win-rate matrix, as GenAI-Arena's ``arena_elo/elo_rating/elo_analysis.py``;
- ``browse`` and ``plots``: what the page shows (workspace, items, thumbnails) and its figures;
- ``jobs``: ``hoi.evaluate`` and ``hoi.scpe``; ``cli``, ``scpe_cli`` and ``__main__``: ``python -m engines.hoi``.

Upstream's release reads ``tags_v4``, which its JSONs lack (every item skipped); ``tags_v6`` is
used here.
"""

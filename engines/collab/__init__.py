"""Multi-round human–AI collaboration under online counterfactual-harm and complementarity control.

Implements "Multi-Round Human–AI Collaboration with User-Specified Requirements" (Noorani, Kiyani,
Hassani, Pappas; ICML 2026, arXiv:2602.17646): over several rounds of one decision the AI shows a
prediction set built from the interaction prefix; two thresholds, frozen within an interaction and
updated online by quantile tracking once the truth is revealed, hold the counterfactual-harm and
complementarity violation rates at user-set targets for any sequence of humans and cases. Upstream
references: the precursor arXiv:2510.23476 and its code (nooranisima/Human-AI-Collaborative-UQ),
conformal PID / quantile tracking (Angelopoulos, Candès, Tibshirani 2023), Rolling Risk Control
(Feldman et al. 2023). The method: ``docs/collab.md``, "Method".

Modules, one job each:

- the task and the AI: ``shapes`` (the pictorial shape-counting task), ``counter`` /
  ``counter_training`` (the CNN that counts), ``medical`` (the synthetic DDXPlus-style diagnosis task),
  ``ddxplus`` (the real DDXPlus release, read as shipped), ``ai_sources`` (the AI's probabilities per task for simulations);
- the method: ``rules`` (harm / complementarity label rules, a registry), ``controller`` (the online
  two-threshold controller and its bounds), ``rates`` (running and local rates, the band over time);
- the collaborators: ``humans`` (parametric humans and shift schedules), ``llm_human`` (a language
  model as the collaborator), ``backends`` (the chat models behind it: the area's model role);
- simulations: ``loop_reference`` (one interaction at a time over a ``Collaborator``),
  ``loop_fast`` (the same loop compiled), ``trace``, ``simulate`` (the experiment, its config and
  result), ``sweep`` (a grid of targets), ``llm_simulate`` (the LLM collaborator's run),
  ``result_files`` (the result JSON, read back);
- storage and studies: ``models`` (tables), ``store`` (one controller stream per condition in the
  database, its audit and queries), ``study/`` (what the crowdsourced study needs);
- the surfaces: ``plots`` and ``rate_traces`` (figures), ``jobs`` (background jobs), ``cli`` and
  ``__main__`` (``python -m engines.collab``).
"""

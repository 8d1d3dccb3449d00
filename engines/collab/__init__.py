"""Multi-round human–AI collaboration under online counterfactual-harm and complementarity control.

Implements "Multi-Round Human–AI Collaboration with User-Specified Requirements" (Noorani,
Kiyani, Hassani, Pappas; ICML 2026, arXiv:2602.17646): over several rounds of one decision the
AI shows a prediction set built from the interaction prefix; two thresholds, frozen within an
interaction and updated online by quantile tracking once the truth is revealed, hold the
counterfactual-harm and complementarity violation rates at user-set targets for any sequence of
humans and cases. Upstream references: the precursor arXiv:2510.23476 and its code
(nooranisima/Human-AI-Collaborative-UQ), conformal PID / quantile tracking (Angelopoulos,
Candès, Tibshirani 2023), Rolling Risk Control (Feldman et al. 2023). See ``shared/specs/collab.md``.

Modules: ``shapes`` (the pictorial shape-counting task), ``counter`` (the CNN that counts),
``rules`` (harm / complementarity label rules), ``controller`` (the online two-threshold
controller and its bound), ``humans`` (simulated collaborators and shift schedules),
``medical`` (the synthetic DDXPlus-style diagnosis task and the DDXPlus loader), ``llm_human`` (a
language model as the collaborator), ``simulate`` / ``llm_simulate`` / ``sweep`` (the CLI experiments).
"""

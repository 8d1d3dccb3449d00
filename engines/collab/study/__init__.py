"""What a participant study of multi-round collaboration needs from the engine.

The crowdsourced shape-counting study (``studies/collab_shapes``) after "Multi-Round Human–AI
Collaboration with User-Specified Requirements" (Noorani, Kiyani, Hassani, Pappas; ICML 2026,
arXiv:2602.17646): participants count triangles over several rounds while an online two-threshold
controller, one stream per condition shared by its participants, decides which counts the AI shows.

Modules (import the one you need: ``from engines.collab.study import report, setup``):

- ``record``: the typed interaction record stored in a participant's vars (``InteractionRecord``,
  ``RoundRecord``, ``InteractionLog``), in the JSON layout the study has always stored.
- ``rounds``: ``submit_round``, the one engine call the study's trial step makes per submitted
  round (freeze the thresholds, the rule masks and the AI's set, the errors and the stream update
  in the step's transaction), and the reads its other hooks use.
- ``images``: which image a participant sees (seeded per participant and interaction) and its PNG.
- ``cases``: the AI on an image: the shipped CNN's probabilities over the counts, with the truth.
- ``conditions``: a condition's parameters as the controller's settings (q_1, calibration batch).
- ``sets``: the AI's set of a round: the rules' masks on the participant's answers, the prediction set.
- ``stored``: the study's interaction records read back from the database.
- ``setup``: a study designed on the New study page (condition table, rules) as the protocol's constants.
- ``report``: the Participants page's summaries of a running study (accuracy human alone vs final, sets).
- ``export``: the study's own export files (interactions, stream histories and their audit).
"""

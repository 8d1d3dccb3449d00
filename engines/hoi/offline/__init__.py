"""The HOI-Edit area's offline stand-ins, fenced off from the real path.

Everything here stands in for a real model or real data so that every command and view runs with
nothing downloaded and no GPU; none of it models the real benchmark:

- ``scenes`` and ``scene_edits``: the drawn demo world (scenes, drawing, reading them back) and how
  a scene changes (instruction language, HOI-Eval's questions, motion, an editor's mistakes);
- ``reading``: the drawn scenes' pixels read back (regions, places, boxes drawn on the images);
- ``grounder_judge`` and ``generation``: the offline defaults of the roles (``offline``: grounder
  and judge; editors, I2V, refiner);
- ``tiny_pipelines``: tiny random diffusers pipelines that load like real checkpoints;
- ``demo_data`` and ``demo``: the synthetic benchmark in upstream's format and the shipped demo
  (``python -m engines.hoi demo``).

Nothing outside this package imports it but the role registry ``engines.hoi.backends``, which
names the stand-ins (``tests/hoi/test_hoi_offline_fence.py``).
"""

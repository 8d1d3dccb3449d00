"""The video area's offline stand-ins, fenced off from the real path.

They let every command and view run with nothing downloaded and no GPU, in place of an LLM planner
and a VLM inspector and captioner (``engines.video.adapters``):

- ``planner``: the heuristic planner (and the coupled baseline's), and the frame-model inspector and
  captioner of the synthetic benchmark;
- ``asking``: what a question asks, read from its words (times, kinds, the object named);
- ``perception``, ``pixels`` and ``pixels_inspector``: general perception from pixels (regions that
  differ from the local background, colour names, places, motion, on-screen text), the ``pixels``
  captioner and the ``pixels`` inspector built on it;
- ``frame_model`` and ``train_inspector``: the small CNN of the synthetic benchmark and its training
  (``python -m engines.video train-inspector``).

Nothing outside this package imports it but the role registry ``engines.video.backends``, which
names the stand-ins, and the command line's ``train-inspector`` (``tests/video/test_video_offline_fence.py``).
"""

"""Long-video question answering with a gated planner–inspector agent, and its groundedness.

Implements the framework of VideoSEAL (ICML 2026; code ``Echochef/VideoSEAL``): a text-only
planner searches a caption and subtitle index of a long video but never answers; a visual
inspector looks at the frames of the time spans the planner chooses and alone holds the answer
authority; the final answer is gated on frame-level verification. Temporal and semantic
groundedness say whether a correct answer is supported by the evidence that was looked at.
Formats follow LVBench (``THUDM/LVBench``), LongVideoBench, Video-MME, MLVU and EgoSchema. See
docs/video.md, "Method".

Modules, one job each:

- ``spans``: time spans, benchmark time references, the span set arithmetic of the metrics;
- ``decode``: frame-accurate frames at given times with PyAV (seek to the keyframe, decode forward);
- ``synthetic``: the project's synthetic long-video benchmark (scripted events, LVBench questions);
- ``questions``: the Question type; ``loaders``: its readers (LVBench, LongVideoBench, Video-MME, MLVU, EgoSchema);
- ``trajectory``: the run record (``lvqa-traj/1``), ``gate``: the answer gate, ``metrics``: accuracy and groundedness;
- ``subtitles`` (SRT), ``index`` (clip captions and dialogue, BM25 and embedding search);
- ``roles`` (planner, inspector and captioner protocols), ``offline`` (their offline defaults on the
  ``frame_model`` that ``train_inspector`` trains), ``backends`` (the roles by name);
- ``agent`` (the gated loop and the coupled baseline), ``cli`` and ``__main__`` (``python -m engines.video``).
"""

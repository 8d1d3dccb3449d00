"""The judge area's offline stand-in, fenced off from the real path.

``learned``: the offline default judge ``minilm-logreg`` (sentence embeddings from a model that ships
inside a package, and a logistic-regression head trained on the project's labels), which stands in for
an LLM judge behind an endpoint or a local model folder (``engines.judge.backends``) so that the audit
runs with nothing downloaded and no GPU. The upstream judges (refusal strings, the prompt-based
judges) are the paper's own and live in ``engines.judge.judges``.

Nothing outside this package imports it but the judge registry ``engines.judge.judges``, which names
the stand-in (``tests/test_area_shape.py``).
"""

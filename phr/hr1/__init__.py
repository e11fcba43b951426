"""Hallucination-R1 (arXiv 2609.21227v1): the artifact's definition, beside ``phr.bench`` (PHRBench).

``records`` (typed rows between stages), ``prompts`` (the paper's four prompts, verbatim, as cited files),
``parse`` (``<paraphrase>`` / ``<answer>`` extraction with recorded reasons), ``settings`` (the paper's
decoding and the named choices where it is silent), ``corpora`` (the three corpus kinds and their layout).
Builders, validation, eval and training use these; see docs/hr1.md.
"""

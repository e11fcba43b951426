"""PHR toolkit: PHRBench and Hallucination-R1 — build, validate, evaluate, train, publish."""

__version__ = "0.1.0"

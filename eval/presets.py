"""The evaluation run's named presets and output-length default, apart from ``phr.eval.runner`` (which loads
pyarrow, the dataset layer and the LLM client) so the CLI can declare its options without importing those. Owned
by the command's config (``phr.config.ops.EvalPhrbenchConfig``); re-exported here."""

from __future__ import annotations

from typing import Any

from phr.config.ops import DEFAULT_MAX_TOKENS, PAPER_SCORER, EvalPhrbenchConfig

#: ``--preset paper`` (§4.1, App. B.1): 10 samples at temperature 0.7, the model's maximum output length
#: (``max_tokens: "model"``: ``model_max_output``), the paper's reference scorer.
PRESETS: dict[str, dict[str, Any]] = EvalPhrbenchConfig.presets

__all__ = ["DEFAULT_MAX_TOKENS", "PAPER_SCORER", "PRESETS"]

"""Configurable price table for token cost estimates."""

from __future__ import annotations

import fnmatch
import os
import tomllib
from importlib import resources
from pathlib import Path


class PriceTable:
    """Maps "<provider>:<model>" globs to (input, output) USD per million tokens; first exact, then glob.
    ``batch``: globs to the share of that price a call through the provider's batch API pays (``--batch``)."""

    def __init__(self, prices: dict[str, tuple[float, float]], batch: dict[str, float] | None = None):
        self.prices = {k: (float(v[0]), float(v[1])) for k, v in prices.items()}
        self.batch = {k: float(v) for k, v in (batch or {}).items()}

    @classmethod
    def load(cls, path: str | Path | None = None) -> "PriceTable":
        """The packaged table, updated by ``path`` or the file named in PHR_PRICES."""
        packaged = tomllib.loads(resources.files("phr.llm").joinpath("prices.toml").read_text())
        table, batch = packaged["prices"], packaged.get("batch", {})
        extra = path or os.environ.get("PHR_PRICES")
        if extra:
            doc = tomllib.loads(Path(extra).expanduser().read_text())
            user = doc.get("prices", {})
            for key, val in user.items():
                if not (isinstance(val, list) and len(val) == 2):
                    raise ValueError(f"{extra}: price for {key!r} must be [input, output] USD per 1M tokens")
            table = {**user, **table} | user  # user entries first (so their globs win) and override
            user_batch = doc.get("batch", {})
            batch = {**user_batch, **batch} | user_batch
        return cls(table, batch)

    def lookup(self, spec: str) -> tuple[float, float] | None:
        if spec in self.prices:
            return self.prices[spec]
        for pattern, price in self.prices.items():
            if fnmatch.fnmatchcase(spec, pattern):
                return price
        return None

    def batch_share(self, spec: str) -> float:
        """The share of the price a call through the batch API pays (1.0 where the table gives none)."""
        if spec in self.batch:
            return self.batch[spec]
        return next((v for k, v in self.batch.items() if fnmatch.fnmatchcase(spec, k)), 1.0)

    def cost(self, spec: str, prompt_tokens: int, completion_tokens: int, *, batch: bool = False) -> float | None:
        """Estimated USD, or None when the model has no price; ``batch``: at the batch rate."""
        price = self.lookup(spec)
        if price is None:
            return None
        share = self.batch_share(spec) if batch else 1.0
        return share * (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000

"""Configurable price table for token cost estimates."""

from __future__ import annotations

import fnmatch
import os
import tomllib
from importlib import resources
from pathlib import Path


class PriceTable:
    """Maps "<provider>:<model>" globs to (input, output) USD per million tokens; first exact, then glob."""

    def __init__(self, prices: dict[str, tuple[float, float]]):
        self.prices = {k: (float(v[0]), float(v[1])) for k, v in prices.items()}

    @classmethod
    def load(cls, path: str | Path | None = None) -> "PriceTable":
        """The packaged table, updated by ``path`` or the file named in PHR_PRICES."""
        table = tomllib.loads(resources.files("phr.llm").joinpath("prices.toml").read_text())["prices"]
        extra = path or os.environ.get("PHR_PRICES")
        if extra:
            user = tomllib.loads(Path(extra).expanduser().read_text()).get("prices", {})
            for key, val in user.items():
                if not (isinstance(val, list) and len(val) == 2):
                    raise ValueError(f"{extra}: price for {key!r} must be [input, output] USD per 1M tokens")
            table = {**user, **table} | user  # user entries first (so their globs win) and override
        return cls(table)

    def lookup(self, spec: str) -> tuple[float, float] | None:
        if spec in self.prices:
            return self.prices[spec]
        for pattern, price in self.prices.items():
            if fnmatch.fnmatchcase(spec, pattern):
                return price
        return None

    def cost(self, spec: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        """Estimated USD, or None when the model has no price."""
        price = self.lookup(spec)
        if price is None:
            return None
        return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000

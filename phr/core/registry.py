"""The one registry idiom: a plugin registers itself under a name with a decorator (as inspect's ``@modelapi``),
so a new backend is one module. Model providers (``phr.llm.spec.PROVIDERS``, via ``@provider``), hub artifact kinds
(``phr.hub.kinds``, via ``register_kind``; installed packages add theirs by entry point), PHRBench scorers
(``phr.eval.scorers.SCORERS``), GRPO rewards (``phr.training.grpo.REWARDS``, via ``@REWARDS.register``) and the
packaged training recipes (``phr.training.config.RECIPES``) are registries of this kind.

    REWARDS: Registry[RewardFactory] = Registry("reward")

    @REWARDS.register("paraphrase_tag")
    def _tag(settings, stage, num_generations): ...

    REWARDS["paraphrase_tag"]    # a KeyError names the known entries
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Named entries in registration order; a later registration under a name replaces the earlier one."""

    def __init__(self, what: str):
        self.what = what
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: register the decorated object under ``name`` (and return it unchanged)."""

        def deco(entry: T) -> T:
            self.add(name, entry)
            return entry

        return deco

    def add(self, name: str, entry: T) -> None:
        self._entries[name] = entry

    def remove(self, name: str) -> None:
        self._entries.pop(name, None)

    def copy(self) -> Registry[T]:
        """A registry with the same entries (a test registers into it without touching this one)."""
        other: Registry[T] = Registry(self.what)
        other._entries = dict(self._entries)
        return other

    def __getitem__(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"no {self.what} {name!r} (known: {', '.join(self._entries) or 'none'})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

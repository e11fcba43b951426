"""The base of every operation's plan: ``Plan[C]``, the operation's config ``C`` resolved without calling a model.

An operation (a module of ``phr.ops`` named after its command) has ``plan(cfg: C) -> P`` and ``run(p: P)``, where
``P`` subclasses ``Plan[C]`` with what the run needs (loaded datasets, screened rows, models per role, decoding);
``run`` executes exactly that plan and reads nothing else from the config than what the plan holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from phr.config.base import OpConfig
from phr.llm.preflight import Preflight

C = TypeVar("C", bound=OpConfig)


@dataclass
class Plan(Generic[C]):
    """An operation resolved without calling a model (``phr.api.plan``): its config and its preflight (problems,
    notes, warnings, the calls with their cached share, tokens and cost)."""

    config: C
    preflight: Preflight = field(default_factory=Preflight)

    @property
    def problems(self) -> list[str]:
        return self.preflight.problems

    def lines(self) -> list[str]:
        """What ``--dry-run`` prints (and a run prints first): the warnings, then the plan."""
        return [f"warning: {w}" for w in self.preflight.warnings] + self.preflight.lines()


@dataclass
class StepPlan(Plan[C]):
    """The plan of an operation that calls no model (push, pull, validate, review, ...): it prints its warnings
    and, when it has any, its notes; no bare ``plan:`` line ahead of the command's own output (``--json`` stays
    JSON)."""

    def lines(self) -> list[str]:
        if self.preflight.notes or self.preflight.usage:
            return super().lines()
        return [f"warning: {w}" for w in self.preflight.warnings]


@dataclass
class QuietPlan(Plan[C]):
    """A plan with nothing to print before its run (``llm ping``, ``cache stats`` / ``clear``)."""

    def lines(self) -> list[str]:
        return []

"""The base of every operation's plan: ``Plan[C]``, the operation's config ``C`` resolved without calling a model.

An operation (a module of ``phr.ops`` named after its command) has ``plan(cfg: C) -> P`` and ``run(p: P)``, where
``P`` subclasses ``Plan[C]`` with what the run needs (loaded datasets, screened rows, models per role, decoding);
``run`` executes exactly that plan and reads nothing else from the config than what the plan holds.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from phr.config.base import OpConfig, command_line
from phr.core.launch import Launch, current_launch
from phr.llm.preflight import Preflight

C = TypeVar("C", bound=OpConfig)


@dataclass
class Plan(Generic[C]):
    """An operation resolved without calling a model (``phr.api.plan``): its config and its preflight (problems,
    notes, warnings, the calls with their cached share, tokens and cost)."""

    config: C
    preflight: Preflight = field(default_factory=Preflight)
    #: the launch this process is a rank of (``torchrun`` / ``accelerate launch``); None: one process
    launch: Launch | None = field(default_factory=current_launch, kw_only=True)

    @property
    def problems(self) -> list[str]:
        return self.preflight.problems

    def lines(self) -> list[str]:
        """What ``--dry-run`` prints (and a run prints first): the warnings, the launch, then the plan."""
        launch = [f"launch: {self.launch.describe()}"] if self.launch is not None else []
        return [f"warning: {w}" for w in self.preflight.warnings] + launch + self.preflight.lines()

    def rerun_command(self, *flags: str) -> str:
        """The command that repeats this run (``flags`` added, e.g. ``--resume``): the config's command line,
        under a launcher the same launch of it."""
        line = command_line(self.config) + "".join(f" {shlex.quote(f)}" for f in flags)
        if self.launch is None:
            return line
        return self.launch.command(shlex.split(line)[1:])


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

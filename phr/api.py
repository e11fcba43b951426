"""The library's entry point to every operation: ``run(plan(cfg))``, what the CLI does for the same config.

    from phr.api import plan, run
    from phr.config.ops import EvalHr1Config

    p = plan(EvalHr1Config(preset="mini"))   # everything resolved; no model called
    print("\\n".join(p.lines()))              # what `--dry-run` prints
    result = run(p)                          # executes exactly that plan

``plan`` finds the operation by its config's ``operation`` (the module that owns it: ``plan(cfg) -> Plan`` and
``run(plan) -> result``); a plan with problems is refused by ``run`` (``PreflightError``, every problem listed).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from phr.config.base import OpConfig
from phr.llm.preflight import Plan


def _module(cfg: OpConfig) -> ModuleType:
    name = type(cfg).operation
    if not name:
        raise TypeError(f"{type(cfg).__name__} names no operation module (OpConfig.operation)")
    return importlib.import_module(name)


def plan(cfg: OpConfig) -> Plan:
    """Resolve ``cfg`` into its operation's plan: inputs, models and roles, every call with its cached share,
    tokens and cost, and the problems found. Nothing is called and nothing is written."""
    return _module(cfg).plan(cfg)


def run(p: Plan) -> Any:
    """Execute ``p`` exactly (``PreflightError`` listing its problems when it has any)."""
    p.preflight.raise_problems()
    return _module(p.config).run(p)

"""The library's entry point to every operation: ``run(plan(cfg))``, what the CLI does for the same config.

    from phr.api import plan, run
    from phr.config.ops import EvalHr1Config

    p = plan(EvalHr1Config(preset="mini"))   # everything resolved; no model called
    print("\\n".join(p.lines()))              # what `--dry-run` prints
    result = run(p)                          # executes exactly that plan

``plan`` finds the operation by its config's command (the module of ``phr.ops`` named after it: ``build hr1-sft``
-> ``phr.ops.build_hr1_sft``, with its ``plan(cfg) -> Plan`` and ``run(plan) -> result``); a plan with problems is refused by ``run`` (``PreflightError``, every problem listed).

A config with ``batch: true`` (``--batch``, docs/scaling.md "Batch mode") runs in a batch session
(``phr.llm.batch``): the operation's hosted calls not in the cache are queued instead of sent; after the operation
returns, the queued calls go through the providers' batch APIs, the command waits for them, and the operation runs
again, until a pass queues nothing: the last pass finds every answer in the call cache.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from phr.config.base import OpConfig
from phr.ops.plan import Plan


def _module(cfg: OpConfig) -> ModuleType:
    return importlib.import_module(module_name(type(cfg)))


def module_name(cls: type[OpConfig]) -> str:
    """The module of an operation: ``phr.ops.<command words joined by _>`` (``build hr1-sft`` ->
    ``phr.ops.build_hr1_sft``), or the ``operation`` a config outside the toolkit names."""
    if cls.operation:
        return cls.operation
    if not cls.command:
        raise TypeError(f"{cls.__name__} has no command, so no operation module")
    return "phr.ops." + "_".join(cls.command).replace("-", "_")


def plan(cfg: OpConfig) -> Plan:
    """Resolve ``cfg`` into its operation's plan: inputs, models and roles, every call with its cached share,
    tokens and cost, and the problems found. Nothing is called and nothing is written."""
    p = _module(cfg).plan(cfg)
    if getattr(cfg, "batch", False):
        from phr.llm.batch import plan_batch

        plan_batch(p.preflight, cfg)
    return p


def run(p: Plan) -> Any:
    """Execute ``p`` exactly (``PreflightError`` listing its problems when it has any); with ``batch``, in passes
    until the batch APIs have answered every call (the module docstring)."""
    p.preflight.raise_problems()
    if not getattr(p.config, "batch", False):
        return _module(p.config).run(p)
    from phr.llm.batch import batch_session

    with batch_session() as session:
        while True:
            try:
                result = _module(p.config).run(p)
            except (Exception, SystemExit):  # a pass that stopped on its missing values: they are on their way
                if not session.pending:
                    raise
                result = None
            if not session.pending:
                return result
            session.process()
            p = plan(_next_pass(p.config))
            p.preflight.raise_problems()


def _next_pass(cfg: OpConfig) -> OpConfig:
    """The config of a batch run's next pass: the same, replacing what the first pass wrote (``overwrite``)."""
    if "overwrite" in type(cfg).model_fields:
        return cfg.model_copy(update={"overwrite": True})
    return cfg

"""What the Hallucination-R1 operations share (``build hr1-paraphrases``, ``build hr1-sft`` / ``hr1-grpo``,
``eval hr1``; docs/hr1.md): the plan base (output folder, header lines, rerun and resume commands), the preset
resolution, the sources, the preflight of models and output folder.

``plan`` resolves everything without calling a model: the preset (the no-argument offline default is ``mini``),
the inputs (``NAME=PATH`` sources, or Hallucination-R1-mini's packaged questions), the models of each role, K and
the tables, the training questions screened for split leakage, and every call with its cached share, tokens and
cost (``phr.hr1.plan.add_calls``). ``run`` executes exactly that plan with the builders
(``phr.builders.hr1``, ``phr.builders.hr1_mini``) or ``phr.eval.hr1_runner.evaluate``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from phr.builders.hr1_mini import load_mini
from phr.builders.hr1_sources import LoadResult, load_hr1_source
from phr.config.base import OpConfig, command_line
from phr.config.types import eval_set_parts
from phr.core.errors import UsageError
from phr.core.settings import CACHE_ENV
from phr.hr1.names import SOURCES
from phr.hr1.records import HQuestion, ParaphraseResult
from phr.llm.preflight import Preflight
from phr.ops.plan import Plan

C = TypeVar("C", bound=OpConfig)


@dataclass
class HR1Plan(Plan[C]):
    """What the Hallucination-R1 plans share: the output folder, the lines printed before the plan (the preset, what
    the mini holds), the command that repeats the run (``rerun``) and the one that finishes it (``resume``)."""

    out: Path = Path()
    header: list[str] = field(default_factory=list)
    rerun: str = ""
    resume: str = ""

    def lines(self) -> list[str]:
        return self.header + super().lines()

    @property
    def settings(self) -> str:
        """The line a run ends with: its preset and the command that repeats it."""
        return f"settings: preset {getattr(self.config, 'preset', None) or 'none'}; rerun: {self.rerun}"


def rerun_of(cfg: Any, **changes: Any) -> str:
    """The command line that repeats this run (rendered from its resolved config, with ``changes``), with the
    call cache it used (``--cache``): a rerun makes only the calls that failed (the cache holds the rest)."""
    cache = ("--cache", os.environ[CACHE_ENV]) if os.environ.get(CACHE_ENV) else ()
    return command_line(cfg.model_copy(update=changes), global_args=cache)


def with_preset(cfg: C, given: bool, default: str = "mini") -> tuple[C, str]:
    """``cfg`` (its preset applied when it was built) or, with no input ``given`` and no preset, ``cfg`` under
    the ``default`` preset (the no-argument offline default: ``mini``; ``smoke`` when models are given without a
    source); and the plan's line for the preset (its values, those overridden). ``--preset mini`` with sources is
    refused (it runs the packaged questions)."""
    chosen = getattr(cfg, "preset", None) is None and not given
    resolved = cfg.under_preset(default) if chosen else cfg
    if getattr(resolved, "preset", None) == "mini" and given:
        raise UsageError("--preset mini runs Hallucination-R1-mini's packaged questions: drop --source/--dataset")
    return resolved, resolved.preset_line("the no-argument offline default, see --help" if chosen else None)


def given(cfg: Any, *names: str) -> bool:
    """Whether any of these fields was set by a flag, the --config file or in Python (not by a default or preset)."""
    return any(n in cfg.model_fields_set for n in names)


def parse_sources(values: list[str], online: bool) -> list[tuple[str, str | None]]:
    """``NAME=PATH`` (``NAME`` alone with ``online``) of known sources."""
    out = []
    for v in values:
        name, path = eval_set_parts(v)
        if name not in SOURCES:
            raise UsageError(f"--source {v}: unknown source {name!r}; known: {', '.join(SOURCES)}")
        if not path and not online:
            raise UsageError(f"--source {v}: give NAME=PATH (the released files), or --online for the Hub copy")
        out.append((name, path))
    return out


def load_sources(values: list[str], online: bool) -> list[LoadResult]:
    """The sources given as NAME=PATH, or the packaged H-R1-mini questions when none is given."""
    if not values:
        return load_mini().loads
    return [load_hr1_source(n, p, online=online) for n, p in parse_sources(values, online)]


def preflight(
    roles: dict[str, str | None], out: Path | None, overwrite: bool, notes: tuple[str, ...] = ()
) -> Preflight:
    """The checks of an hr1 operation before any call: model specs and keys, the output folder."""
    pf = Preflight()
    for role, spec in roles.items():
        pf.model(role, spec)
    if out is not None:
        pf.output(out, overwrite)
    for n in notes:
        pf.note(n)
    return pf


def limited(questions: list[HQuestion], limit: int | None) -> list[HQuestion]:
    """The questions a run takes of one source (``--limit``: the first N)."""
    return list(questions[:limit] if limit else questions)


def known(paraphrases: dict[str, list[ParaphraseResult]]) -> dict[str, list[str]]:
    """The curated paraphrases the QA model may be asked (the consistent ones with text), by question id."""
    return {i: [p.text for p in ps if p.consistent and p.text] for i, ps in paraphrases.items()}


def model_build(p: Any) -> dict[str, Any]:
    """The keywords a corpus build that calls models takes from its plan: the judge, the steps, the limit,
    overwrite, the LLM options, the rerun command and the settings record."""
    cfg = p.config
    return dict(judge=cfg.judge, plan=p.steps, limit=cfg.limit, overwrite=cfg.overwrite, llm_options=cfg.llm_kwargs(),
                rerun=p.rerun, config=cfg.result_record())  # fmt: skip

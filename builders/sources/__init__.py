"""Source-benchmark loaders: each standardizes one benchmark's rows into `phr.bench.records.BaseQuestion`.

Every module exposes ``load(source_dir=None, *, online=False, **filters) -> list[BaseQuestion]`` and the
constants NAME, TITLE, LICENSE, HUB_ID, PACKAGE and FORMAT. A copy is taken from `source_dir` (the
benchmark's released files), else from an installed offline package, else (online=True only) from the
Hugging Face Hub; otherwise SourceNotFoundError says how to supply one. See docs/sources.md.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from phr.bench.records import BaseQuestion
from phr.core.registry import Registry

from . import bbbp, chembench, gpqa, humaneval, mbpp, medmcqa, mmlu, sciq
from ._common import MalformedSourceError, SourceNotFoundError, SourceOptionError, question_id

#: the source loaders by NAME (the one registry idiom, ``phr.core.registry``): a new source is one module added here
SOURCES: Registry[ModuleType] = Registry("PHRBench source")
for _module in (mmlu, sciq, gpqa, medmcqa, chembench, bbbp, humaneval, mbpp):
    SOURCES.add(_module.NAME, _module)

__all__ = [
    "SOURCES",
    "MalformedSourceError",
    "SourceNotFoundError",
    "SourceOptionError",
    "get_source",
    "load_source",
    "question_id",
    "reference_program",
]


def get_source(name: str) -> ModuleType:
    """The loader module of source `name` ("b3db" is BBBP's offline stand-in)."""
    key = "bbbp" if name == bbbp.STANDIN_SOURCE else name
    try:
        return SOURCES[key]
    except KeyError:
        raise SourceOptionError(f"unknown source {name!r}; known sources: {sorted(SOURCES)}") from None


def load_source(
    name: str, source_dir: str | Path | None = None, *, online: bool = False, **filters: Any
) -> list[BaseQuestion]:
    """`get_source(name).load(source_dir, online=online, **filters)`."""
    if name == bbbp.STANDIN_SOURCE and source_dir is None:
        return bbbp.load_b3db()
    return get_source(name).load(source_dir, online=online, **filters)


def reference_program(question: BaseQuestion) -> str | None:
    """The complete reference program of a code question (run `code_tests` after it), or None.

    HumanEval's reference_solution is a function body that continues the prompt; MBPP's is a full program.
    """
    if question.reference_solution is None:
        return None
    if question.source == humaneval.NAME:
        return (question.code_signature or "") + question.reference_solution
    return question.reference_solution

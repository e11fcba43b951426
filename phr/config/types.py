"""Value types of config fields that follow a rule of their own, each parsed in one place.

``EvalSets``: evaluation sets, each given as ``NAME=PATH`` (a source name and its released files), or ``NAME`` alone
(the source's Hub copy with ``--online``; ``stand-in`` for the held-out half of a stand-in split). The field
keeps the text as given (so a rerun command repeats it); ``eval_set_parts`` splits it. Which names an operation
accepts is the operation's rule.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator


def eval_set_parts(value: str) -> tuple[str, str | None]:
    """``(NAME, PATH)`` of ``NAME=PATH`` (``PATH`` None when only ``NAME`` is given)."""
    name, _, path = value.partition("=")
    return name.strip(), path.strip() or None


def _check_eval_sets(values: list[str]) -> list[str]:
    for value in values:
        if not eval_set_parts(value)[0]:
            raise ValueError(f"{value!r}: expected NAME=PATH (a source name, then its released files)")
    return values


#: repeatable evaluation sets ``NAME=PATH`` (or ``NAME``), see the module docstring: the type of a config field
#: (the annotation stays ``list[str]``, so the command line binds it as a repeatable option)
EvalSets = Annotated[list[str], AfterValidator(_check_eval_sets)]

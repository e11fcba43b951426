"""A library error in the command line's words: the library names a config field as Python does
(``pass overwrite=True to replace it``: what a script calling ``run(plan(cfg))`` can act on), the CLI's error
boundary (``common.Root``) shows the same message with the command's flag (``pass --overwrite to replace it``).

Only ``NAME=VALUE`` where NAME is a field of the running command's config and VALUE is a Python literal
(``True``, ``False``, a quoted string, a number) is rewritten, each into the flag ``phr.config.base.flag_of``
gives the field (the one ``phr.cli.options.bind`` made): ``overwrite=True`` -> ``--overwrite``,
``plots=False`` -> ``--no-plots``, ``max_tokens=256`` -> ``--max-tokens 256``, ``out='my runs'`` ->
``--out 'my runs'`` (quoted as a shell needs it). Anything else (``--set trainer.max_steps=5``, ``NAME=PATH``, a
field the command does not have) is left as it is.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from typer._click import Command, Context

    from phr.config.base import OpConfig

_SETTING = re.compile(r"(?<![\w.\-])([a-z_][a-z0-9_]*)=(True|False|'[^'\n]*'|\"[^\"\n]*\"|-?\d+(?:\.\d+)?)(?![\w.])")


def in_flags(message: str, cls: type[OpConfig] | None) -> str:
    """``message`` with each ``FIELD=VALUE`` of ``cls`` written as its flag (the module docstring)."""
    if cls is None:
        return message
    from phr.config.base import field_type, flag_of

    def flag(m: re.Match[str]) -> str:
        name, value = m[1], m[2]
        if name not in cls.model_fields or name in cls.arguments:
            return m[0]
        shown = flag_of(cls, name)
        if field_type(cls, name) is bool:
            if value not in ("True", "False"):
                return m[0]
            return shown if value == "True" else "--no-" + shown.removeprefix("--")
        if value in ("True", "False"):
            return m[0]
        quoted = value[0] in "'\""  # a string literal: its text, quoted for a shell
        return f"{shown} {shlex.quote(value[1:-1]) if quoted else value}"

    return _SETTING.sub(flag, message)


def config_of(root: Command, ctx: Context, argv: Sequence[str]) -> type[OpConfig] | None:
    """The config class of the command ``argv`` runs under ``root`` (``build phrbench`` -> ``BuildPhrbenchConfig``),
    None for a command bound to none; words that name no command (global options, their values) are passed over."""
    cmd = root
    for word in argv:
        get = getattr(cmd, "get_command", None)
        if get is None:  # a command, not a group: the rest are its arguments
            break
        sub = get(ctx, word)
        if sub is not None:
            cmd = sub
    return getattr(getattr(cmd, "callback", None), "config_class", None)

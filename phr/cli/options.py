"""Bind an operation's config (phr.config.ops) to a typer command: every field becomes a flag (default None =
"not given", help from the field's doc), plus ``--config FILE.yaml``; the command receives the resolved config."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from phr.config.base import OpConfig, choices, field_order, field_type, flag_of, paper_of, resolve

CONFIG_PARAM = "config_file"


def _help(cls: type[OpConfig], name: str) -> str:
    f = cls.model_fields[name]
    text = f.description or ""
    if name == "preset" and any(cls.presets.values()):
        shown = "; ".join(f"{p}: {v or 'the defaults'}" for p, v in cls.presets.items())
        text += f" Presets: {shown}."
    if not f.is_required() and not (f.default is None and "default" in text):
        default = f.default
        shown = (
            "none"
            if default is None or default == []
            else str(default).lower()
            if isinstance(default, bool)
            else default
        )
        text += f" [default: {shown}]"
    paper = paper_of(cls, name)
    if paper:
        text += f" [paper: {paper}]"
    return text


def _cli_type(cls: type[OpConfig], name: str) -> Any:
    t = field_type(cls, name)
    origin = typing.get_origin(t)
    if origin in (list, tuple):
        return list.__class_getitem__(typing.get_args(t)[0])
    if t in (int, float, bool, str, Path):
        return t
    return str  # Literal choices and unions (int | "model"): validated by the config


def parameters(cls: type[OpConfig], config_option: bool = True) -> list[inspect.Parameter]:
    """One keyword parameter per field (typer annotations), and ``--config`` (unless ``config_option`` is off:
    the training commands' --config is the recipe, itself the YAML of their settings)."""
    out = []
    for name in field_order(cls):
        t = _cli_type(cls, name)
        flag = flag_of(cls, name)
        if name in cls.arguments:
            info: Any = typer.Argument(help=_help(cls, name), show_default=False, metavar=_metavar(cls, name, t))
            ann, default = Annotated[t | None, info], None  # may come from --config; the config requires it
        else:
            decls = [f"{flag}/--no-{flag.removeprefix('--')}" if t is bool else flag, *_alias(cls, name)]
            metavar = None if t is bool else _metavar(cls, name, t)
            info = typer.Option(*decls, help=_help(cls, name), show_default=False, metavar=metavar)
            ann, default = Annotated[t | None, info], None
        out.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default))
    config = typer.Option(
        "--config",
        metavar="FILE.yaml",
        help="Settings from a YAML file (keys: the flags' names with _); flags override it.",
    )
    if not config_option:
        return out
    out.append(
        inspect.Parameter(
            CONFIG_PARAM, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[Path | None, config], default=None
        )
    )
    return out


def _alias(cls: type[OpConfig], name: str) -> list[str]:
    extra = cls.model_fields[name].json_schema_extra
    return [str(extra["alias_flag"])] if isinstance(extra, dict) and extra.get("alias_flag") else []


def _metavar(cls: type[OpConfig], name: str, t: Any) -> str:
    extra = cls.model_fields[name].json_schema_extra
    if isinstance(extra, dict) and extra.get("metavar"):
        return str(extra["metavar"])
    if name in cls.arguments:
        return name.upper().rstrip("S") + ("..." if typing.get_origin(field_type(cls, name)) is list else "")
    allowed = choices(cls, name)
    if allowed:
        return "[" + "|".join(allowed) + "]"
    if name in _SPECS:
        return "SPEC"
    return {int: "N", float: "X", Path: "PATH"}.get(t, "TEXT")


_SPECS = {"model", "scorer", "judge", "grader", "paraphraser", "qa_model", "generator"}


def config_from_params(cls: type[OpConfig], params: dict) -> OpConfig:
    """The config a command's parsed parameters stand for (``--config`` file, then the flags given)."""
    flags = {k: v for k, v in params.items() if k in cls.model_fields}
    for k, v in list(flags.items()):  # an empty repeatable option is "not given"
        if isinstance(v, (list, tuple)) and not v:
            flags[k] = None
    return resolve(cls, file=params.get(CONFIG_PARAM), flags=flags)


def bind(cls: type[OpConfig], *, config_option: bool = True) -> Callable:
    """Decorator: ``fn(cfg, **other)`` becomes a typer command taking ``cls``'s flags and ``--config``."""

    def deco(fn: Callable) -> Callable:
        sig = inspect.signature(fn, eval_str=True)
        own = [p for p in sig.parameters.values() if p.name != "cfg"]
        clash = {p.name for p in own} & set(cls.model_fields)
        if clash:
            raise TypeError(f"{fn.__name__}: parameters {sorted(clash)} are fields of {cls.__name__}")

        def command(**kw: Any) -> Any:
            params = {k: kw.pop(k) for k in [*cls.model_fields, CONFIG_PARAM] if k in kw}
            return fn(config_from_params(cls, params), **kw)

        command.__name__, command.__doc__ = fn.__name__, fn.__doc__
        own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
        setattr(command, "__signature__", inspect.Signature(parameters(cls, config_option) + own))
        setattr(command, "config_class", cls)  # the config a test or a tool can bind parsed parameters to
        return command

    return deco


DryRun = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Check the settings, model specs, keys, extras, limits and inputs; print the plan (calls, tokens, "
        "cost) and exit 0, or 2 listing every problem. Nothing is called.",
    ),
]

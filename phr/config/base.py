"""The typed run configuration of an operation, and its views: YAML file, command line, record.

An operation's config is a frozen pydantic model whose fields own the defaults and carry their docs (and the
paper section they stand for). A run's settings resolve in layers, later ones winning::

    field defaults  <  preset (``preset: paper``)  <  the --config YAML file  <  the flags given

``resolve`` does that and names the file and key (or the flag) of a bad value; ``command_line`` renders a config
as the command that repeats it (the one place rerun commands are made); ``record`` is what manifests store.
"""

from __future__ import annotations

import shlex
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, ModelWrapValidatorHandler, ValidationError, model_validator

from phr.core.errors import UsageError


class ConfigError(UsageError):
    """A run setting that cannot be used (the message names the file and key, or the flag)."""


class FieldError(ConfigError, ValueError):
    """A config built in Python with a value it refuses: one line naming each field (``qa_max_tokens=0: ...``);
    ``errors``: ``(field, value given, message)`` each, for a caller that names them its own way."""

    def __init__(self, message: str, errors: list[tuple[str, Any, str]] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or []


def setting(
    default: Any = ...,
    doc: str = "",
    *,
    paper: str | None = None,
    flag: str | None = None,
    alias_flag: str | None = None,
    metavar: str | None = None,
    **kw: Any,
) -> Any:
    """A config field: its default, what it means (``doc``, the help text), the paper section it stands for,
    its flag (default ``--field-name``; ``alias_flag``: a short one, e.g. ``-m``) and metavar; ``kw`` are pydantic
    constraints (``ge=1``)."""
    given = (("paper", paper), ("flag", flag), ("alias_flag", alias_flag), ("metavar", metavar))
    extra: dict[str, Any] = {k: v for k, v in given if v is not None}
    return Field(default, description=doc, json_schema_extra=extra or None, **kw)


#: fields that steer a run but never change its results (left out of ``OpConfig.result_record``)
RUN_CONTROL = ("out", "overwrite", "partial", "timeout", "max_retry_after", "batch")


class OpConfig(BaseModel):
    """Base of every operation's config. ``command``: the CLI words after ``phr-publish``, which name the
    operation's module (``phr.ops.<command words joined by _>``: its ``plan`` and ``run``); ``arguments``: the fields given positionally; ``presets``: named sets of
    field values, applied when the config is built (in Python, from a YAML file or from flags alike): the preset
    named by the ``preset`` field fills every field not given, an explicit value wins (``_apply_preset``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    command: ClassVar[tuple[str, ...]] = ()
    #: a module outside ``phr.ops`` that owns the operation (a plugin's, a test's); empty: ``phr.ops.<command>``
    operation: ClassVar[str] = ""
    arguments: ClassVar[tuple[str, ...]] = ()
    presets: ClassVar[dict[str, dict[str, Any]]] = {}
    #: an array-heavy operation (validation): its process keeps freed memory for reuse (``phr.core.memory``)
    keeps_freed_memory: ClassVar[bool] = False

    @model_validator(mode="wrap")
    @classmethod
    def _apply_preset(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """The one preset mechanism: the values of the preset ``data`` names fill the fields it does not give.
        They stay out of ``model_fields_set``, which keeps meaning "given" (by a flag, the file or in Python)."""
        name = data.get("preset") if isinstance(data, dict) else None
        values = cls.presets.get(name, {}) if isinstance(name, str) else {}
        filled = [k for k in values if k not in data]
        cfg = handler({**{k: values[k] for k in filled}, **data} if filled else data)
        if filled:  # the instance is frozen: its fields-set is pydantic's bookkeeping, not a field
            object.__setattr__(cfg, "__pydantic_fields_set__", cfg.model_fields_set - set(filled))
        return cfg

    def preset_values(self) -> dict[str, Any]:
        """The values of this config's preset (empty without one, or for a preset that keeps the defaults)."""
        name = getattr(self, "preset", None)
        return dict(type(self).presets.get(name, {})) if isinstance(name, str) else {}

    def preset_overrides(self) -> dict[str, Any]:
        """The preset's fields given another value (field -> the value that runs)."""
        return {k: getattr(self, k) for k, v in self.preset_values().items() if not _same(getattr(self, k), v)}

    def preset_line(self, note: str | None = None, shown: Mapping[str, str] | None = None) -> str:
        """The plan's line for the preset: its name (``note`` after it), the values it resolves to (``shown``: how
        the plan resolved one, e.g. ``{"max_tokens": "model (16384)"}``) and those overridden by explicit values:
        ``preset: paper: samples 10, temperature 0.7, ...; overridden: samples 2 (preset: 10)``."""
        name = getattr(self, "preset", None)
        if not name:
            return "preset: none (the defaults)"
        head = f"preset: {name}" + (f" ({note})" if note else "")
        values, over, shown = self.preset_values(), self.preset_overrides(), shown or {}
        kept = [f"{k} {shown.get(k, v)}" for k, v in values.items() if k not in over]
        line = f"{head}: " + (", ".join(kept) if kept else "the defaults" if not values else "")
        if over:
            given = ", ".join(f"{k} {v} (preset: {values[k]})" for k, v in over.items())
            line += ("; " if kept else "") + f"overridden: {given}"
        return line

    def under_preset(self, name: str) -> Self:
        """This config with preset ``name`` (its values filling the fields not given)."""
        return type(self).model_validate({**self.model_dump(include=self.model_fields_set), "preset": name})

    def record(self) -> dict:
        """The resolved settings as JSON values (for manifests and results)."""
        return {"command": " ".join(self.command), **self.model_dump(mode="json")}

    def result_record(self) -> dict:
        """``record`` without the run-control fields (:data:`RUN_CONTROL`: where it writes, replace, timeouts),
        which never change a result: what an artifact's manifest or results store, so that a rerun elsewhere
        reproduces them byte for byte."""
        return {k: v for k, v in self.record().items() if k not in RUN_CONTROL}

    def rerun(self, *, global_args: Iterable[str] = ()) -> str:
        """The command line that repeats this run."""
        return command_line(self, global_args=global_args)


def field_order(cls: type[OpConfig]) -> list[str]:
    """The fields, the operation's own first, then those of its mixins (nearest first)."""
    out: list[str] = []
    for klass in cls.__mro__:
        for name in getattr(klass, "__annotations__", {}):
            if name in cls.model_fields and name not in out:
                out.append(name)
    return out


def flag_of(cls: type[OpConfig], name: str) -> str:
    extra = cls.model_fields[name].json_schema_extra
    flag = extra.get("flag") if isinstance(extra, dict) else None
    return str(flag) if flag else "--" + name.replace("_", "-")


def paper_of(cls: type[OpConfig], name: str) -> str | None:
    extra = cls.model_fields[name].json_schema_extra
    return str(extra["paper"]) if isinstance(extra, dict) and extra.get("paper") else None


def load_yaml(path: str | Path) -> dict:
    """A ``--config`` file's mapping; a clear error when it is missing or not a YAML mapping."""
    import yaml

    p = Path(path).expanduser()
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"--config {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"--config {path}: cannot read it ({e})") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a config file is a YAML mapping of settings, got {type(raw).__name__}")
    return raw


def _check_keys(cls: type[OpConfig], values: Mapping, where: str) -> None:
    for key in values:
        if key not in cls.model_fields:
            known = ", ".join(cls.model_fields)
            raise ConfigError(f"{where}: unknown key {key!r} for `{' '.join(cls.command)}` (known: {known})")


def resolve(
    cls: type[OpConfig],
    *,
    file: str | Path | None = None,
    values: Mapping[str, Any] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> OpConfig:
    """The config of one run: ``cls``'s defaults, then the preset named (by a flag or the file; applied by the
    config itself, as in Python), then the YAML ``file`` (or ``values``, a mapping read elsewhere), then the
    ``flags`` given (``None`` = not given)."""
    source = str(file) if file is not None else "<config>"
    layer: dict = dict(values or {})
    if file is not None:
        layer.update(load_yaml(file))
    _check_keys(cls, layer, source)
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    _check_keys(cls, given, "flags")
    preset = given.get("preset", layer.get("preset"))
    if preset is not None and preset not in cls.presets:
        where = flag_of(cls, "preset") if "preset" in given else f"{source}: preset"
        known = ", ".join(cls.presets) or "none for this command"
        raise ConfigError(f"{where} {preset!r}: unknown preset (known: {known})")
    try:  # the config applies its preset (OpConfig._apply_preset)
        return cls(**{**layer, **given})
    except ValidationError as e:
        raise ConfigError("; ".join(_describe(cls, er, given, layer, source, preset) for er in _by_field(e))) from None


def _by_field(e: ValidationError) -> list[dict[str, Any]]:
    """One error per field: a union's members each report one (``max_tokens``: a number >= 1, or 'model'), joined
    into one message ("Input should be greater than or equal to 1, or be 'model'")."""
    out: dict[Any, dict[str, Any]] = {}
    for er in e.errors():
        loc = er.get("loc") or ()
        key = loc[0] if loc else None
        if key not in out:
            out[key] = dict(er)
            continue
        first = out[key]
        first["msg"] = f"{first.get('msg', 'invalid')}, or {str(er.get('msg', '')).removeprefix('Input should ')}"
        if er.get("type") == "literal_error":
            first["type"] = "literal_error"
    return list(out.values())


def field_errors(e: ValidationError) -> list[tuple[str, Any, str]]:
    """``(field, value given, message)`` per field of a config's ``ValidationError`` (a union's members joined;
    ``field`` is dotted for a nested value, empty for a rule of the whole config)."""
    out = []
    for er in _by_field(e):
        where = ".".join(str(part) for part in er.get("loc") or ())
        out.append((where, er.get("input"), str(er.get("msg", "invalid")).removeprefix("Value error, ")))
    return out


def one_line(cls_name: str, e: ValidationError) -> FieldError:
    """``e`` as one line naming each field as Python gives it: ``RewardConfig: qa_max_tokens=0: Input should be
    greater than or equal to 1``."""
    errors = field_errors(e)
    parts = [f"{name}={value!r}: {msg}" if name else msg for name, value, msg in errors]
    return FieldError(f"{cls_name}: " + "; ".join(parts), errors)


def _describe(
    cls: type[OpConfig], er: Mapping[str, Any], given: Mapping, layer: Mapping, source: str, preset: str | None
) -> str:
    loc = er.get("loc") or ()
    name = str(loc[0]) if loc else ""
    msg = er.get("msg", "invalid")
    if er.get("type") == "literal_error" and name in cls.model_fields:
        msg += f" ({(cls.model_fields[name].description or '').rstrip('.')})"
    if name in given:
        return f"{flag_of(cls, name)} {given[name]!r}: {msg}"
    if name in layer:
        return f"{source}: {name}: {layer[name]!r}: {msg}"
    if name in cls.model_fields and cls.model_fields[name].is_required():
        what = name.upper() if name in cls.arguments else flag_of(cls, name)
        return f"{what} is required ({cls.model_fields[name].description})"
    return f"{name or '(config)'}: {msg}" + (f" (preset {preset})" if preset else "")


def baseline(cfg: OpConfig) -> dict:
    """The field values a rerun need not repeat: the defaults, with the config's preset applied."""
    cls = type(cfg)
    out = {n: f.default for n, f in cls.model_fields.items() if not f.is_required()}
    out.update(cfg.preset_values())
    return out


def _words(flag: str, value: Any, default: Any) -> list[str]:
    if isinstance(value, bool):
        if value == default:
            return []
        return [flag] if value else ["--no-" + flag.removeprefix("--")]
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [w for v in value for w in (flag, str(v))]
    return [flag, str(value)]


def command_line(
    cfg: OpConfig | None = None,
    *,
    command: Iterable[str] | None = None,
    arguments: Iterable[Any] = (),
    options: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
    global_args: Iterable[str] = (),
    program: str = "phr-publish",
) -> str:
    """A shell-quoted command line: ``program [global_args] command arguments --flag value ...``.

    With ``cfg``: its command, positional fields and every field that differs from ``baseline(cfg)``. Without:
    ``options`` (flag -> value; True: the bare flag, False/None: left out unless ``defaults`` says otherwise)."""
    words = [program, *global_args]
    if cfg is not None:
        cls = type(cfg)
        words += list(cls.command)
        for name in cls.arguments:
            value = getattr(cfg, name)
            words += [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]
        base = baseline(cfg)
        preset = getattr(cfg, "preset", None)
        explicit = cfg.model_fields_set - set(cls.presets.get(preset, {}) if preset else {})
        for name in field_order(cls):
            if name in cls.arguments:
                continue
            value = getattr(cfg, name)
            if name in base and _same(value, base[name]) and name not in explicit:
                continue  # a default (or the preset's value) that was not asked for: the rerun gets it again
            words += _words(flag_of(cls, name), value, base.get(name))
        return shlex.join(words)
    words += list(command or ())
    words += [str(a) for a in arguments]
    for flag, value in (options or {}).items():
        words += _words(flag, value, (defaults or {}).get(flag, False if isinstance(value, bool) else None))
    return shlex.join(words)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Path) or isinstance(b, Path):
        return str(a) == str(b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) == list(b)
    return a == b


def field_type(cls: type[OpConfig], name: str) -> Any:
    """The field's annotation without ``None`` (``int | None`` -> ``int``)."""
    ann = cls.model_fields[name].annotation
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    if typing.get_origin(ann) in (typing.Union, getattr(__import__("types"), "UnionType", None)) and len(args) == 1:
        return args[0]
    return ann


def choices(cls: type[OpConfig], name: str) -> tuple[str, ...] | None:
    """The allowed values of a ``Literal`` field (also under ``| None``), else None."""
    t = field_type(cls, name)
    if typing.get_origin(t) is typing.Literal:
        return tuple(str(a) for a in typing.get_args(t))
    return None

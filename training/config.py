"""Training recipes: one YAML file -> our sections + TRL's own config class (docs/training.md, "Recipes").

A recipe has these top-level keys (unknown keys are refused, naming the key and the file)::

    method: grpo | sft
    stage: 1 | 2                      # GRPO only
    model:   {name_or_path, revision, init_from, init_without_manifest, dtype, tiny}
    data:    {path | repo_id, revision, split, limit, allow_smaller}
    reward:  {name, settings}         # GRPO only; name: "hr1", "paraphrase_tag" or "module:factory"
    reference_policy: initial         # GRPO only: the KL reference (docs/training.md)
    lora:    {r, lora_alpha, lora_dropout, target_modules, merge}   # SFT (or GRPO) with peft
    chat_template_kwargs: {...}       # SFT: passed to the chat template (e.g. enable_thinking: false)
    trainer: {...}                    # every key a field of trl.GRPOConfig / trl.SFTConfig
    missing_rewards: {all_missing_steps, window_steps, max_share}   # GRPO: when missing rewards stop the run

Every value is checked against its type and range (our sections' dataclasses, TRL's config fields; every number
finite) before anything is created: ``RecipeError`` lists every problem, one line each, naming the file, the key,
the expected type and the value; GRPO's divisibility rule (the generation batch holds whole groups of
``num_generations``) is checked too. ``prerequisite_problems`` checks, without heavy imports, that the corpus folder
and the stage-1 checkpoint exist.

Recipes ship as package data under ``phr/training/recipes/<model>/{grpo,sft}/config_*.yaml``; ``--config``
takes a path or a packaged name: ``<model>/<method>/<variant>`` or the file stem without ``config_``
(``paper-qwen2.5-3b-stage1``): the registry ``RECIPES``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, Union

import yaml
from annotated_types import Ge, Gt, Interval
from pydantic import Field, TypeAdapter, ValidationError

from phr.core.errors import UsageError
from phr.core.registry import Registry

if TYPE_CHECKING:  # pragma: no cover - TRL is imported where a run builds its config (heavy)
    from _typeshed import DataclassInstance
    from trl import GRPOConfig, SFTConfig

RECIPE_DIR = Path(__file__).resolve().parent / "recipes"
METHODS = ("grpo", "sft")
REFERENCE_POLICIES = ("initial",)


class RecipeError(UsageError):
    """A recipe that cannot be used as written (one line per problem, each naming the file and the key)."""


S = TypeVar("S", bound="DataclassInstance")  # a section dataclass

Dtype = Literal["auto", "bfloat16", "float16", "float32", "float64"]  # torch dtype names from_pretrained takes


@dataclass(frozen=True)
class ModelSection:
    name_or_path: str | None = None  # hub id or folder of the base model (None with ``tiny``)
    revision: str | None = None
    init_from: str | None = None  # stage 2: the stage-1 checkpoint folder the policy starts from
    init_without_manifest: bool = False  # accept an init_from folder with no training_manifest.json (untracked)
    dtype: Dtype = "auto"  # for from_pretrained (bfloat16 on GPUs, float32 on CPU)
    tiny: dict | None = None  # build the CPU smoke model (phr.training.tiny.TinySettings fields)


@dataclass(frozen=True)
class DataSection:
    path: str | None = None  # a corpus folder (hr1-grpo / hr1-sft layout)
    repo_id: str | None = None  # or a Hub dataset id (with a revision)
    revision: str | None = None
    split: str = "train"
    limit: Annotated[int, Field(ge=1)] | None = None  # the first N rows (paper stage 1: 1,536 prompts)
    # train on a corpus smaller than the recipe asks for (a mini / smoke corpus under a full-model recipe, fewer
    # rows than limit): without it the preflight refuses; recorded in training_manifest.json (smaller_corpus)
    allow_smaller: bool = False


@dataclass(frozen=True)
class RewardSection:
    name: str = "hr1"
    settings: dict = field(default_factory=dict)


@dataclass(frozen=True)
class LoraSection:
    r: Annotated[int, Field(ge=1)] = 16
    lora_alpha: Annotated[int, Field(ge=1)] = 32
    lora_dropout: Annotated[float, Field(ge=0, lt=1)] = 0.05
    target_modules: list[str] | str = "all-linear"
    merge: bool = False  # also write a merged full checkpoint (``merged/``)


@dataclass(frozen=True)
class MissingRewardsSection:
    """When a GRPO run stops because its rewards are missing (a judge that cannot be reached, a wrong key, verdicts
    that never parse): training never goes on without a reward (docs/training.md, "Missing rewards")."""

    # Stop after this many consecutive steps in which a reward function returned None for every completion (null:
    # never).
    all_missing_steps: Annotated[int, Field(ge=1)] | None = 2
    window_steps: Annotated[int, Field(ge=1)] = 10  # the window of the share rule, in steps
    # Stop when more than this share of a reward function's values over the last window_steps steps is missing
    # (checked once window_steps steps are seen; null: never).
    max_share: Annotated[float, Field(ge=0, lt=1)] | None = 0.5


@dataclass(frozen=True)
class Recipe:
    method: Literal["grpo", "sft"]
    model: ModelSection
    data: DataSection
    trainer: dict  # TRL config fields, checked against the config class
    stage: int | None = None
    reward: RewardSection | None = None
    reference_policy: str = "initial"
    lora: LoraSection | None = None
    chat_template_kwargs: dict | None = None
    missing_rewards: MissingRewardsSection = field(default_factory=MissingRewardsSection)
    source: str = ""  # the file it was read from

    def trl_config(self, **overrides: Any) -> Any:  # a trl GRPOConfig or SFTConfig (the recipe's method)
        """The TRL config object (GRPOConfig / SFTConfig) with the recipe's ``trainer`` section."""
        cls = trl_config_class(self.method)
        try:
            return cls(**{**self.trainer, **overrides})
        except (TypeError, ValueError) as e:
            msg = " ".join(str(e).split())
            raise RecipeError(f"{self.source}: trainer: trl.{cls.__name__} refuses these values here: {msg}") from None

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def trl_config_class(method: str) -> type[GRPOConfig] | type[SFTConfig]:
    from trl import GRPOConfig, SFTConfig

    return {"grpo": GRPOConfig, "sft": SFTConfig}[method]


TOP = (
    "method",
    "stage",
    "model",
    "data",
    "reward",
    "reference_policy",
    "lora",
    "chat_template_kwargs",
    "trainer",
    "missing_rewards",
)
CORPUS_OF = {"grpo": "hr1-grpo", "sft": "hr1-sft"}  # the corpus a method trains on (its build command)


@dataclass(frozen=True)
class OffOr:
    """A setting that is ``off`` (the library's "unset": ``meaning`` says what decides instead) or at least
    ``ge``: transformers' ``max_steps`` (-1, or a positive number of steps)."""

    off: int
    ge: int
    meaning: str

    def words(self) -> str:
        return f">= {self.ge}, or {self.off} ({self.meaning})"


#: the ranges of trainer settings, as the libraries that use them draw them (checked with the types, listed alike;
#: ``num_generations >= 2`` is checked with GRPO's batch rule, ``grpo_batch_problem``); every number of a recipe
#: is also finite (``non_finite``)
TRAINER_BOUNDS: dict[str, Gt | Ge | Interval | OffOr] = {
    # GRPO's sampling: transformers' logits warpers refuse these (TRL's docs: top_p in (0, 1], min_p in [0, 1],
    # top_k 0 = off)
    "temperature": Gt(0),
    "top_p": Interval(gt=0, le=1),
    "top_k": Ge(0),
    "min_p": Interval(ge=0, le=1),
    "repetition_penalty": Gt(0),
    # TRL's GRPO: mu iterations per batch, completion length, clipping, KL coefficient, generation batch
    "num_iterations": Ge(1),
    "max_completion_length": Ge(1),
    "epsilon": Ge(0),
    "epsilon_high": Ge(0),
    "beta": Ge(0),
    "generation_batch_size": Ge(1),
    "steps_per_generation": Ge(1),
    # the entropy quantile of the tokens kept in the loss (torch.quantile takes q in [0, 1]; 1.0: every token)
    "top_entropy_quantile": Interval(ge=0, le=1),
    "max_length": Ge(1),  # SFT
    # transformers' TrainingArguments: a steps strategy needs a positive interval (below 1: a share of all steps)
    "save_steps": Gt(0),
    "logging_steps": Gt(0),
    "eval_steps": Gt(0),
    "warmup_steps": Ge(0),
    "num_train_epochs": Gt(0),
    # a positive number of steps, or -1 (the default): num_train_epochs decides (0 would train one step, other
    # negative values as many steps as the epochs give)
    "max_steps": OffOr(-1, 1, "off: num_train_epochs decides"),
    "per_device_train_batch_size": Ge(1),
    "per_device_eval_batch_size": Ge(1),
    "gradient_accumulation_steps": Ge(1),
    "dataloader_num_workers": Ge(0),
    "seed": Interval(ge=0, lt=2**32),  # numpy's seed range (transformers.set_seed)
    # torch's AdamW
    "learning_rate": Ge(0),
    "weight_decay": Ge(0),
    "adam_epsilon": Ge(0),
    "adam_beta1": Interval(ge=0, lt=1),
    "adam_beta2": Interval(ge=0, lt=1),
}


def _bounded(hint: Any, bound: Any) -> Any:
    """``hint`` with ``bound`` on its value (a ``T | None`` keeps None allowed; an ``OffOr`` is checked after)."""
    if bound is None or isinstance(bound, OffOr):
        return hint
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (Union, types.UnionType) and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        return Union[Annotated[Union[tuple(inner)], bound], None]  # noqa: UP007 - built at run time
    return Annotated[hint, bound]


def _bound_words(bound: Any) -> str:
    """``> 0``, ``>= 1``, ``in (0, 1]``."""
    if isinstance(bound, Gt):
        return f"> {bound.gt}"
    if isinstance(bound, Ge):
        return f">= {bound.ge}"
    low = f"({bound.gt}" if bound.gt is not None else f"[{bound.ge}"
    high = f"{bound.lt})" if bound.lt is not None else f"{bound.le}]"
    return f"in {low}, {high}"


def _type_name(t: Any, bounds: bool = True) -> str:
    """A type annotation in words: ``int``, ``one of 'auto', 'float32'``, ``int or null``, ``float > 0`` (its
    ``TRAINER_BOUNDS`` unless ``bounds`` is false)."""
    origin = typing.get_origin(t)
    if origin is Annotated:
        base, *meta = typing.get_args(t)
        words = [_bound_words(m) for m in meta if bounds and isinstance(m, (Gt, Ge, Interval))]
        return " ".join([_type_name(base, bounds), *words])
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(t))
    if origin in (Union, types.UnionType):
        return " or ".join(dict.fromkeys(_type_name(a, bounds) for a in typing.get_args(t)))
    if t is type(None):
        return "null"
    if t in (dict, Any) or origin is dict:
        return "a mapping"
    if origin is list:
        return "a list"
    return getattr(t, "__name__", str(t).replace("typing.", ""))


_OUT_OF_RANGE = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")  # pydantic's error types


def non_finite(value: Any, key: str) -> list[str]:
    """Every number under ``value`` (a setting, or a mapping or list of them) that is not finite (YAML's ``.inf``,
    ``.nan``, or a string read as one): ``KEY: expected a finite number, got inf``, one line each."""
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{key}: expected a finite number, got {value!r}"]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in non_finite(v, f"{key}.{k}" if key else str(k))]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in non_finite(v, f"{key}[{i}]")]
    return []


def _problems_of(e: ValidationError, where: str, hints: dict[str, Any]) -> list[str]:
    """One line per key of a pydantic error: ``FILE: KEY: expected TYPE, got VALUE (why)``."""
    out: dict[str, str] = {}
    for err in e.errors():
        name = str(err["loc"][0]) if err["loc"] else ""
        key = f"{where}.{name}" if name and where else name or where
        if key in out:
            continue  # a union reports each member: one line per key
        if err["type"] == "missing":
            out[key] = f"{key}: required ({_type_name(hints.get(name))})"
        else:
            why = err["msg"][0].lower() + err["msg"][1:]
            words = _type_name(hints.get(name, Any), bounds=err["type"] in _OUT_OF_RANGE)
            out[key] = f"{key}: expected {words}, got {err['input']!r} ({why})"
    return list(out.values())


def _section(cls: type[S], raw: Any, where: str, problems: list[str]) -> S | None:
    """``cls`` (a section dataclass) validated from ``raw``; None and problems appended when it is not valid."""
    if raw is None:
        return None
    hints = typing.get_type_hints(cls, include_extras=True)
    hints = {f.name: hints[f.name] for f in dataclasses.fields(cls)}
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping of {', '.join(hints)}, got {raw!r}")
        return None
    unknown = [k for k in raw if k not in hints]
    problems.extend(f"{where}.{k}: unknown key (known: {', '.join(hints)})" for k in unknown)
    try:
        value = TypeAdapter(cls).validate_python({k: v for k, v in raw.items() if k in hints})
    except ValidationError as e:
        problems.extend(_problems_of(e, where, hints))
        return None
    return None if unknown else value


def _trainer(method: str, raw: Any, problems: list[str]) -> dict | None:
    """The ``trainer`` section checked field by field against TRL's config class (numbers written as strings, e.g.
    YAML's ``1e-4``, become numbers), then GRPO's divisibility rule. TRL's checks that depend on the machine
    (bf16 without a GPU) come when the run builds the config (``Recipe.trl_config``), still before anything is
    created."""
    cls = trl_config_class(method)
    if not isinstance(raw, dict):
        problems.append(f"trainer: expected a mapping of trl.{cls.__name__} fields, got {raw!r}")
        return None
    hints = typing.get_type_hints(cls)
    before = len(problems)
    out = {}
    for key, value in raw.items():
        if key not in hints:
            problems.append(f"trainer.{key} is not a field of trl.{cls.__name__}")
            continue
        bound = TRAINER_BOUNDS.get(key)
        hint = _bounded(hints[key], bound)
        try:
            checked = TypeAdapter(hint).validate_python(value)
        except ValidationError as e:
            problems.extend(_problems_of(e, f"trainer.{key}", {"": hint}))
            continue
        if isinstance(checked, float) and not math.isfinite(checked):
            problems.append(
                f"trainer.{key}: expected {_type_name(hint)}, got {value!r} (input should be a finite number)"
            )
            continue
        if nested := non_finite(checked if isinstance(checked, (dict, list)) else None, f"trainer.{key}"):
            problems.extend(nested)
            continue
        if isinstance(bound, OffOr) and isinstance(checked, int) and checked != bound.off and checked < bound.ge:
            problems.append(f"trainer.{key}: expected {_type_name(hints[key])} {bound.words()}, got {value!r}")
            continue
        scalar = isinstance(checked, (bool, int, float)) and not isinstance(value, (bool, int, float))
        out[key] = checked if scalar else value
    if "output_dir" not in raw:
        problems.append("trainer.output_dir: required (the run folder)")
    batch_keys = ("num_generations", "per_device_train_batch_size", "generation_batch_size", "steps_per_generation",
                  "gradient_accumulation_steps")  # fmt: skip
    if method == "grpo" and all(k in out or k not in raw for k in batch_keys) and (why := grpo_batch_problem(out)):
        problems.append(f"trainer: {why}")
    return None if len(problems) > before else out


def grpo_batch_problem(trainer: dict, world_size: int | None = None) -> str | None:
    """TRL's rule, up front: the generation batch (per_device_train_batch_size x processes x steps_per_generation,
    or generation_batch_size) must hold whole groups of num_generations completions. ``world_size``: the number
    of processes (default: ``$WORLD_SIZE`` as set by accelerate / torchrun, else 1)."""
    from trl import GRPOConfig

    def get(key: str) -> Any:
        return trainer.get(key, GRPOConfig.__dataclass_fields__[key].default)

    n = world_size or int(os.environ.get("WORLD_SIZE", "1"))
    g, per_device = get("num_generations"), get("per_device_train_batch_size")
    if g is not None and g < 2:
        return f"num_generations must be at least 2 (GRPO's advantages compare a group), got {g}"
    if get("generation_batch_size") is not None:
        batch, how = get("generation_batch_size"), "generation_batch_size"
    else:
        steps = get("steps_per_generation") or get("gradient_accumulation_steps")
        batch = per_device * n * steps
        how = f"per_device_train_batch_size {per_device} x {n} process(es) x steps_per_generation {steps}"
    if g is not None and batch % g:
        return (
            f"the generation batch ({how} = {batch} completions) must be divisible by num_generations ({g}): "
            "each prompt's group of completions has to be whole (TRL's rule)"
        )
    return None


def _combination_problems(raw: dict, model: ModelSection | None, data: DataSection | None) -> list[str]:
    """The problems of a recipe's sections taken together: a model to start from, one data source, a reward
    section for GRPO, the stage-1 checkpoint for stage 2, no missing_rewards for SFT."""
    method, stage = raw.get("method"), raw.get("stage")
    out = []
    if model is not None and not model.name_or_path and model.tiny is None:
        out.append("model.name_or_path: required (or model.tiny for the smoke model)")
    if data is not None and bool(data.path) == bool(data.repo_id):
        out.append("data: needs exactly one of path (a corpus folder) or repo_id")
    if method == "grpo" and raw.get("reward") is None:
        out.append("reward: a GRPO recipe needs a reward section")
    if method == "grpo" and stage == 2 and model is not None and not model.init_from:
        out.append("model.init_from: stage 2 starts from the stage-1 checkpoint: set model.init_from")
    if method == "sft" and raw.get("missing_rewards") is not None:
        out.append("missing_rewards: GRPO only (SFT has no rewards)")
    return out


def parse_recipe(raw: Any, source: str = "<recipe>") -> Recipe:
    """Check and type a recipe mapping: every problem at once, each line naming ``source``, the key, the expected
    type and the value (``RecipeError``)."""
    if not isinstance(raw, dict):
        what = "a list" if isinstance(raw, list) else repr(raw)
        raise RecipeError(f"{source}: a recipe is a YAML mapping of sections ({', '.join(TOP)}), got {what}")
    problems: list[str] = [f"unknown key {k!r} (known: {', '.join(TOP)})" for k in raw if k not in TOP]
    method = raw.get("method")
    if method not in METHODS:
        problems.append(f"method: expected one of {', '.join(METHODS)}, got {method!r}")
    stage = raw.get("stage")
    if method == "grpo" and (stage not in (1, 2) or isinstance(stage, bool)):
        problems.append(f"stage: expected 1 or 2 for GRPO, got {stage!r}")
    ref = raw.get("reference_policy", "initial")
    if ref not in REFERENCE_POLICIES:
        problems.append(f"reference_policy: expected one of {', '.join(REFERENCE_POLICIES)}, got {ref!r}")
    model = _section(ModelSection, raw.get("model") or {}, "model", problems)
    tiny = (raw.get("model") or {}).get("tiny") if isinstance(raw.get("model"), dict) else None
    if isinstance(tiny, dict):
        from phr.training.tiny import TinySettings

        _section(TinySettings, tiny, "model.tiny", problems)
    data = _section(DataSection, raw.get("data") or {}, "data", problems)
    reward = _section(RewardSection, raw.get("reward"), "reward", problems)
    lora = _section(LoraSection, raw.get("lora"), "lora", problems)
    guard = _section(MissingRewardsSection, raw.get("missing_rewards") or {}, "missing_rewards", problems)
    ctk = raw.get("chat_template_kwargs")
    if ctk is not None and not isinstance(ctk, dict):
        problems.append(f"chat_template_kwargs: expected a mapping, got {ctk!r}")
    trainer = _trainer(method, raw.get("trainer") or {}, problems) if method in METHODS else None
    problems += _combination_problems(raw, model, data)
    named = {p.split(": ", 1)[0] for p in problems}  # every other number finite (the trainer's: _trainer)
    rest = {k: v for k, v in raw.items() if k != "trainer"}
    problems.extend(p for p in non_finite(rest, "") if p.split(": ", 1)[0] not in named)
    if problems:
        raise RecipeError("\n".join(f"{source}: {p}" for p in problems))
    assert model is not None and data is not None and trainer is not None and guard is not None  # no problems
    assert method in METHODS
    return Recipe(
        method=typing.cast(Literal["grpo", "sft"], method),
        stage=stage,
        model=model,
        data=data,
        reward=reward,
        reference_policy=ref,
        lora=lora,
        chat_template_kwargs=ctk,
        trainer=trainer,
        missing_rewards=guard,
        source=source,
    )


def prerequisite_problems(raw: dict, source: str) -> list[str]:
    """What a recipe needs on disk, checked without heavy imports: the corpus folder (``data.path``) and, in
    stage 2, the stage-1 checkpoint (``model.init_from``); each problem says which command makes it."""
    out = []
    method = raw.get("method")
    data, model = raw.get("data"), raw.get("model")
    path = data.get("path") if isinstance(data, dict) else None
    if isinstance(path, str) and path and not Path(path).expanduser().is_dir():
        kind = CORPUS_OF.get(str(method), "hr1-grpo")
        out.append(
            f"{source}: no corpus folder {path} (data.path): build it with `phr-publish build {kind} --out {path}` "
            f'(docs/hr1.md, "Corpora"), or pass --data DIR'
        )
    init = model.get("init_from") if isinstance(model, dict) else None
    if isinstance(init, str) and init and not (Path(init).expanduser() / "config.json").is_file():
        out.append(
            f"{source}: no stage-1 checkpoint at {init} (model.init_from, no config.json): train stage 1 first "
            "(`phr-publish train grpo --stage 1 --config RECIPE`), or pass --init-from DIR"
        )
    return out


#: the packaged recipes by name (``--config NAME``): ``<model>/<method>/<variant>`` and the bare ``<variant>``
#: (file stem less ``config_``) when unique; another package adds its own with ``RECIPES.add(name, path)``
RECIPES: Registry[Path] = Registry("packaged recipe")


def _register_packaged() -> None:
    stems: dict[str, list[Path]] = {}
    for p in sorted(RECIPE_DIR.glob("*/*/config_*.yaml")):
        variant = p.stem.removeprefix("config_")
        RECIPES.add(f"{p.parent.parent.name}/{p.parent.name}/{variant}", p)
        stems.setdefault(variant, []).append(p)
    for variant, paths in stems.items():
        if len(paths) == 1:
            RECIPES.add(variant, paths[0])


_register_packaged()


def recipe_names() -> dict[str, Path]:
    """Packaged recipes by name (``RECIPES``)."""
    return dict(RECIPES)


def resolve_recipe_path(name_or_path: str | Path) -> Path:
    p = Path(name_or_path).expanduser()
    if p.is_file():
        return p
    found = RECIPES.get(str(name_or_path))
    if found is None:
        raise RecipeError(
            f"--config {name_or_path}: no such file and no packaged recipe of that name "
            f"(packaged: {', '.join(sorted(RECIPES))})"
        )
    return found


def read_recipe(name_or_path: str | Path, **section_overrides: Any) -> tuple[Any, str]:
    """The raw recipe (YAML as read, ``section_overrides`` merged: ``trainer={"max_steps": 2}`` merges into the
    trainer section) and the file it came from; no heavy imports."""
    path = resolve_recipe_path(name_or_path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise RecipeError(f"{path}: cannot read the recipe: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise RecipeError(f"{path}: not a UTF-8 text file ({e.reason} at byte {e.start})") from None
    except yaml.YAMLError as e:
        raise RecipeError(f"{path}: not valid YAML: {' '.join(str(e).split())}") from None
    raw = {} if raw is None else raw
    if isinstance(raw, dict):
        for key, value in section_overrides.items():
            if isinstance(value, dict) and isinstance(raw.get(key), dict):
                raw[key] = {**raw[key], **value}
            else:
                raw[key] = value
    return raw, str(path)


def load_recipe(name_or_path: str | Path, **section_overrides: Any) -> Recipe:
    """Read and check a recipe file (path or packaged name); ``section_overrides`` as :func:`read_recipe`."""
    return parse_recipe(*read_recipe(name_or_path, **section_overrides))

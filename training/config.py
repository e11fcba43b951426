"""Training recipes: one YAML file -> our sections + TRL's own config class (docs/training.md, "Recipes").

A recipe has these top-level keys (unknown keys are refused, naming the key and the file)::

    method: grpo | sft
    stage: 1 | 2                      # GRPO only
    model:   {name_or_path, revision, init_from, init_without_manifest, dtype, tiny}
    data:    {path | repo_id, revision, split, limit}
    reward:  {name, settings}         # GRPO only; name: "hr1", "paraphrase_tag" or "module:factory"
    reference_policy: initial         # GRPO only: the KL reference (docs/training.md)
    lora:    {r, lora_alpha, lora_dropout, target_modules, merge}   # SFT (or GRPO) with peft
    chat_template_kwargs: {...}       # SFT: passed to the chat template (e.g. enable_thinking: false)
    trainer: {...}                    # every key a field of trl.GRPOConfig / trl.SFTConfig

Recipes ship as package data under ``phr/training/recipes/<model>/{grpo,sft}/config_*.yaml``; ``--config``
takes a path or a packaged name: ``<model>/<method>/<variant>`` or the file stem without ``config_``
(``paper-qwen2.5-3b-stage1``), see ``recipe_names()``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from phr.core.errors import UsageError

RECIPES = Path(__file__).resolve().parent / "recipes"
METHODS = ("grpo", "sft")
REFERENCE_POLICIES = ("initial",)


class RecipeError(UsageError):
    """A recipe that cannot be used as written (the message names the file and the key)."""


@dataclass(frozen=True)
class ModelSection:
    name_or_path: str | None = None  # hub id or folder of the base model (None with ``tiny``)
    revision: str | None = None
    init_from: str | None = None  # stage 2: the stage-1 checkpoint folder the policy starts from
    init_without_manifest: bool = False  # accept an init_from folder with no training_manifest.json (untracked)
    dtype: str = "auto"  # torch dtype name for from_pretrained (bfloat16 on GPUs, float32 on CPU)
    tiny: dict | None = None  # build the CPU smoke model (phr.training.tiny.TinySettings fields)


@dataclass(frozen=True)
class DataSection:
    path: str | None = None  # a corpus folder (hr1-grpo / hr1-sft layout)
    repo_id: str | None = None  # or a Hub dataset id (with a revision)
    revision: str | None = None
    split: str = "train"
    limit: int | None = None  # the first N rows (paper stage 1: 1,536 prompts)


@dataclass(frozen=True)
class RewardSection:
    name: str = "hr1"
    settings: dict = field(default_factory=dict)


@dataclass(frozen=True)
class LoraSection:
    r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    target_modules: list[str] | str = "all-linear"
    merge: bool = False  # also write a merged full checkpoint (``merged/``)


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
    source: str = ""  # the file it was read from

    def trl_config(self, **overrides):
        """The TRL config object (GRPOConfig / SFTConfig) with the recipe's ``trainer`` section."""
        cls = trl_config_class(self.method)
        return cls(**{**self.trainer, **overrides})

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def trl_config_class(method: str):
    from trl import GRPOConfig, SFTConfig

    return {"grpo": GRPOConfig, "sft": SFTConfig}[method]


def _section(cls, raw: Any, where: str):
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise RecipeError(f"{where}: expected a mapping, got {type(raw).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    for key in raw:
        if key not in known:
            raise RecipeError(f"{where}: unknown key {key!r} (known: {', '.join(sorted(known))})")
    return cls(**raw)


TOP = ("method", "stage", "model", "data", "reward", "reference_policy", "lora", "chat_template_kwargs", "trainer")


def parse_recipe(raw: dict, source: str = "<recipe>") -> Recipe:
    """Check and type a recipe mapping; every error names ``source`` and the key."""
    if not isinstance(raw, dict):
        raise RecipeError(f"{source}: a recipe is a YAML mapping")
    for key in raw:
        if key not in TOP:
            raise RecipeError(f"{source}: unknown key {key!r} (known: {', '.join(TOP)})")
    method = raw.get("method")
    if method not in METHODS:
        raise RecipeError(f"{source}: method must be one of {', '.join(METHODS)}, got {method!r}")
    trainer = raw.get("trainer") or {}
    fields = {f.name for f in dataclasses.fields(trl_config_class(method))}
    for key in trainer:
        if key not in fields:
            cls = trl_config_class(method).__name__
            raise RecipeError(f"{source}: trainer.{key} is not a field of trl.{cls}")
    stage = raw.get("stage")
    if method == "grpo" and stage not in (1, 2):
        raise RecipeError(f"{source}: stage must be 1 or 2 for GRPO, got {stage!r}")
    ref = raw.get("reference_policy", "initial")
    if ref not in REFERENCE_POLICIES:
        raise RecipeError(f"{source}: reference_policy {ref!r} (supported: {', '.join(REFERENCE_POLICIES)})")
    recipe = Recipe(
        method=method,
        stage=stage,
        model=_section(ModelSection, raw.get("model") or {}, f"{source}: model"),
        data=_section(DataSection, raw.get("data") or {}, f"{source}: data"),
        reward=_section(RewardSection, raw.get("reward"), f"{source}: reward"),
        reference_policy=ref,
        lora=_section(LoraSection, raw.get("lora"), f"{source}: lora"),
        chat_template_kwargs=raw.get("chat_template_kwargs"),
        trainer=dict(trainer),
        source=source,
    )
    if not recipe.model.name_or_path and recipe.model.tiny is None:
        raise RecipeError(f"{source}: model.name_or_path is required (or model.tiny for the smoke model)")
    if bool(recipe.data.path) == bool(recipe.data.repo_id):
        raise RecipeError(f"{source}: data needs exactly one of path (a corpus folder) or repo_id")
    if method == "grpo" and recipe.reward is None:
        raise RecipeError(f"{source}: a GRPO recipe needs a reward section")
    if method == "grpo" and stage == 2 and not recipe.model.init_from:
        raise RecipeError(f"{source}: stage 2 starts from the stage-1 checkpoint: set model.init_from")
    if "output_dir" not in trainer:
        raise RecipeError(f"{source}: trainer.output_dir is required")
    return recipe


def recipe_names() -> dict[str, Path]:
    """Packaged recipes by name: ``<model>/<method>/<variant>`` and the bare ``<variant>`` (file stem less
    ``config_``) when unique."""
    out: dict[str, Path] = {}
    stems: dict[str, list[Path]] = {}
    for p in sorted(RECIPES.glob("*/*/config_*.yaml")):
        variant = p.stem.removeprefix("config_")
        out[f"{p.parent.parent.name}/{p.parent.name}/{variant}"] = p
        stems.setdefault(variant, []).append(p)
    out.update({v: ps[0] for v, ps in stems.items() if len(ps) == 1})
    return out


def resolve_recipe_path(name_or_path: str | Path) -> Path:
    p = Path(name_or_path).expanduser()
    if p.is_file():
        return p
    found = recipe_names().get(str(name_or_path))
    if found is None:
        raise RecipeError(
            f"--config {name_or_path}: no such file and no packaged recipe of that name "
            f"(packaged: {', '.join(sorted(recipe_names()))})"
        )
    return found


def load_recipe(name_or_path: str | Path, **section_overrides) -> Recipe:
    """Read a recipe file (path or packaged name). ``section_overrides``: top-level keys merged over the file's
    (``trainer={"max_steps": 2}`` merges into the trainer section)."""
    path = resolve_recipe_path(name_or_path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise RecipeError(f"{path}: not valid YAML: {e}") from None
    for key, value in section_overrides.items():
        if isinstance(value, dict) and isinstance(raw.get(key), dict):
            raw[key] = {**raw[key], **value}
        else:
            raw[key] = value
    return parse_recipe(raw, str(path))

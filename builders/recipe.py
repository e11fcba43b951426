"""Build recipes (builders/recipes/*.yaml): which questions, how many premises of which type."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml

from phr.bench.records import BaseQuestion, Domain, MutationType
from phr.builders.sources import bbbp, load_source
from phr.builders.sources._common import SourceNotFoundError, collect_rejected
from phr.core.errors import UsageError
from phr.validation.judge import JudgeConfig

BUILTIN = ("paper", "mini")


class RecipeError(UsageError):
    pass


class StandInError(RecipeError):
    """A recipe source whose only copy is a stand-in (a different dataset) not allowed."""


class SourcesMissingError(RecipeError, SourceNotFoundError):
    """The sources of a recipe with no usable copy, all of them (``problems``: one line each, source named)."""

    def __init__(self, recipe: str, missing: dict[str, str]):
        self.problems = [f"source {name}: {why}" for name, why in missing.items()]
        super().__init__(
            f"recipe {recipe}: {len(missing)} source(s) cannot be loaded ({', '.join(missing)}):\n"
            + "\n".join(self.problems)
        )


@dataclass(frozen=True)
class SourceQuota:
    source: str
    domain: Domain
    count: int
    filters: dict = field(default_factory=dict)


ALL_TYPES = tuple(MutationType)


@dataclass(frozen=True)
class SlotSpec:
    """Premise slots per question of one kind (science or code).

    ``hallucinated``: how many B+H premises. ``fixed``: a type per slot (the recipe gave a list); prompt sets
    that take a type (v0) use it, prompt sets where the generator chooses (paper) treat it as a quota.
    ``types``: the types allowed (the generator's other choices are rejected). ``quota``: per question, how
    many premises of each type to keep (generation becomes selection); slots beyond the quotas' sum are free.
    """

    truthful: int = 1
    hallucinated: int = 0
    fixed: tuple[MutationType, ...] = ()
    types: tuple[MutationType, ...] = ALL_TYPES
    quota: dict[MutationType, int] = field(default_factory=dict)

    def slot_types(self) -> tuple[MutationType, ...]:
        """A type per slot for prompt sets that take one: the fixed list, else the allowed types in turn."""
        if self.fixed:
            return self.fixed
        return tuple(self.types[k % len(self.types)] for k in range(self.hallucinated))

    def selection_quota(self) -> dict[MutationType, int]:
        """Per-type quota when the generator chooses the type (a fixed list counts as one); {} for none."""
        return dict(self.quota) if self.quota else dict(Counter(self.fixed))


@dataclass(frozen=True)
class Recipe:
    name: str
    seed: int = 0
    curated: str | None = None
    quotas: tuple[SourceQuota, ...] = ()
    science: SlotSpec = SlotSpec()
    code: SlotSpec = SlotSpec(types=(MutationType.STATE_DISTORTION,))
    temperature: float = 0.9
    max_tokens: int = 512
    regeneration_rounds: int = 3
    generator: str | None = None
    judge: str | None = None
    #: the judge's switchable criteria of ours (``qc.judge_extra_criteria``: plausible, single_claim; none by
    #: default, as in the paper: phr.validation.judge.JudgeConfig)
    judge_extra_criteria: tuple[str, ...] = ()

    def slots(self, q: BaseQuestion) -> SlotSpec:
        return self.code if q.domain is Domain.CODE else self.science


def load_recipe(name_or_path: str | Path) -> Recipe:
    """A built-in recipe by name (paper, mini) or a YAML file of the same shape."""
    if str(name_or_path) in BUILTIN:
        text = resources.files("phr.builders").joinpath(f"recipes/{name_or_path}.yaml").read_text()
        where = f"recipe {name_or_path}"
    else:
        p = Path(name_or_path)
        if not p.is_file():
            raise RecipeError(f"unknown recipe {str(name_or_path)!r}: use one of {', '.join(BUILTIN)} or a YAML file")
        text, where = p.read_text(), str(p)
    try:
        d = yaml.safe_load(text) or {}
        slots = d.get("slots", {})
        gen = d.get("generation", {})
        quotas = tuple(
            SourceQuota(q["source"], Domain(q["domain"]), int(q["count"]), dict(q.get("filters") or {}))
            for q in d.get("sources", [])
        )
        return Recipe(
            name=d["name"],
            seed=int(d.get("seed", 0)),
            curated=d.get("curated"),
            quotas=quotas,
            science=_slot_spec(slots.get("science") or {}, ALL_TYPES, "slots.science"),
            code=_slot_spec(slots.get("code") or {}, (MutationType.STATE_DISTORTION,), "slots.code"),
            temperature=float(gen.get("temperature", 0.9)),
            max_tokens=int(gen.get("max_tokens", 512)),
            regeneration_rounds=int(gen.get("regeneration_rounds", 3)),
            generator=(d.get("models") or {}).get("generator"),
            judge=(d.get("models") or {}).get("judge"),
            judge_extra_criteria=JudgeConfig(
                tuple((d.get("qc") or {}).get("judge_extra_criteria") or ())
            ).extra_criteria,
        )
    except (KeyError, TypeError, ValueError) as e:
        raise RecipeError(f"{where}: invalid recipe: {e}") from None


def _type(name: object, where: str) -> MutationType:
    try:
        return MutationType(name)
    except ValueError:
        raise ValueError(
            f"{where}: unknown mutation type {name!r} (use {', '.join(t.value for t in MutationType)})"
        ) from None


def _slot_spec(d: dict, default_types: tuple[MutationType, ...], where: str) -> SlotSpec:
    """``hallucinated`` is a count (generator-chosen types) or a list (a type per slot, the v0 form)."""
    h = d.get("hallucinated", 0)
    fixed = tuple(_type(t, f"{where}.hallucinated") for t in h) if isinstance(h, list) else ()
    types = tuple(_type(t, f"{where}.types") for t in d.get("types") or ()) or default_types
    if fixed and "types" not in d:
        types = tuple(dict.fromkeys(fixed))
    quota = {_type(t, f"{where}.quota"): int(n) for t, n in (d.get("quota") or {}).items()}
    count = len(fixed) if fixed else int(h)
    bad = [t.value for t in [*fixed, *quota] if t not in types]
    if bad:
        raise ValueError(f"{where}: {', '.join(bad)} not among the allowed types ({', '.join(t.value for t in types)})")
    if fixed and quota:
        raise ValueError(f"{where}: give a count with a quota, or a list of types, not both")
    if sum(quota.values()) > count or any(n < 0 for n in quota.values()):
        raise ValueError(f"{where}: quota {_names(quota)} does not fit {count} hallucinated premise(s)")
    return SlotSpec(int(d.get("truthful", 1)), count, fixed, types, quota)


def _names(quota: dict[MutationType, int]) -> str:
    return "{" + ", ".join(f"{t.value}: {n}" for t, n in quota.items()) + "}"


def _rank(seed: int, qid: str) -> str:
    return hashlib.sha256(f"{seed}:{qid}".encode()).hexdigest()


def select_questions(
    recipe: Recipe,
    source_dir: str | Path | None = None,
    *,
    online: bool = False,
    allow_short: bool = False,
    allow_stand_in: bool = False,
) -> tuple[list[BaseQuestion], list[str]]:
    """The recipe's base questions, seeded and deterministic; returns (questions, shortfall messages).

    ``source_dir``: a folder with one sub-folder per source (``<dir>/sciq/train.json`` ...); a source with no
    sub-folder there comes from its offline package, or the Hub when ``online``. A source whose offline
    package is a different dataset (BBBP -> B3DB) is refused unless ``allow_stand_in``.
    """

    chosen: list[BaseQuestion] = []
    seen: set[str] = set()
    short: list[str] = []
    cache: dict[tuple, tuple[list[BaseQuestion], list[str]]] = {}
    missing: dict[str, str] = {}  # source -> why it cannot be loaded: all of them reported at once
    for quota in recipe.quotas:
        sub = Path(source_dir) / quota.source if source_dir else None
        key = (quota.source, tuple(sorted((k, str(v)) for k, v in quota.filters.items())))
        if quota.source in missing:
            continue
        if key not in cache:
            try:
                with collect_rejected() as rejected:
                    loaded = load_source(
                        quota.source, sub if sub and sub.exists() else None, online=online, **quota.filters
                    )
                _check_stand_in(recipe, quota.source, loaded, allow_stand_in)
            except (SourceNotFoundError, StandInError) as e:  # missing: every such source named at once
                missing[quota.source] = str(e)
                continue
            cache[key] = (loaded, rejected)
        loaded, rejected = cache[key]
        pool = [q for q in loaded if q.domain is quota.domain and q.id not in seen]
        pool.sort(key=lambda q: _rank(recipe.seed, q.id))
        take = pool[: quota.count]
        if len(take) < quota.count:
            short.append(
                f"{quota.source} ({quota.domain.value}, {quota.filters or 'no filters'}): "
                f"{len(take)} of {quota.count} questions available" + _rejected_note(rejected)
            )
        chosen += take
        seen.update(q.id for q in take)
    if missing:
        raise SourcesMissingError(recipe.name, missing)
    if short and not allow_short:
        raise RecipeError(
            "not enough source questions for recipe "
            f"{recipe.name}:\n  " + "\n  ".join(short) + "\n(pass allow_short=True to build anyway)"
        )
    return chosen, short


def stand_ins(recipe: Recipe, questions: list[BaseQuestion]) -> dict[str, str]:
    """{recipe source: dataset used instead} for sources served by a stand-in (BBBP -> B3DB)."""
    named = {q.source for q in recipe.quotas}
    used = {q.source for q in questions}
    return {"bbbp": bbbp.STANDIN_SOURCE} if "bbbp" in named and bbbp.STANDIN_SOURCE in used else {}


def _check_stand_in(recipe: Recipe, source: str, loaded: list[BaseQuestion], allow: bool) -> None:
    if allow or source != bbbp.NAME or not any(q.source == bbbp.STANDIN_SOURCE for q in loaded):
        return
    raise StandInError(
        f"recipe {recipe.name} asks for {bbbp.TITLE}, but no copy was found (no <source-dir>/bbbp/"
        f"{bbbp.FILES['bbbp']}, no online=True), and the only offline copy is the B3DB stand-in, a different "
        "dataset (other compounds, counts and class balance). Supply BBBP.csv under <source-dir>/bbbp, or "
        "pass online=True, or pass allow_stand_in=True to build with B3DB (the manifest and card then say so)."
    )


def _rejected_note(rejected: list[str]) -> str:
    """'; N source row(s) rejected (first ones: ...)' for a shortfall message, or ''."""
    if not rejected:
        return ""
    return f"; {len(rejected)} source row(s) rejected (first ones: {'; '.join(rejected[:3])})"

"""Build recipes (builders/recipes/*.yaml): which questions, how many premises of which type."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml

from phr.bench.conditions import CONDITIONS
from phr.bench.records import BaseQuestion, Domain, MutationType
from phr.builders.sources import load_source
from phr.builders.sources._common import collect_rejected
from phr.core.errors import UsageError

BUILTIN = ("paper", "mini")


class RecipeError(UsageError):
    pass


@dataclass(frozen=True)
class SourceQuota:
    source: str
    domain: Domain
    count: int
    filters: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Recipe:
    name: str
    seed: int = 0
    curated: str | None = None
    quotas: tuple[SourceQuota, ...] = ()
    science_truthful: int = 1
    science_types: tuple[MutationType, ...] = ()
    code_truthful: int = 1
    code_types: tuple[MutationType, ...] = ()
    temperature: float = 0.9
    max_tokens: int = 512
    regeneration_rounds: int = 3
    generator: str | None = None
    judge: str | None = None

    def slot_types(self, q: BaseQuestion) -> tuple[MutationType, ...]:
        return self.code_types if q.domain is Domain.CODE else self.science_types

    def expected_counts(self) -> dict[str, int]:
        n = sum(x.count for x in self.quotas)
        code = sum(x.count for x in self.quotas if x.domain is Domain.CODE)
        hall = (n - code) * len(self.science_types) + code * len(self.code_types)
        return {c.config: hall if c.mutation else n for c in CONDITIONS}


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
            science_truthful=int(slots.get("science", {}).get("truthful", 1)),
            science_types=tuple(MutationType(t) for t in slots.get("science", {}).get("hallucinated", [])),
            code_truthful=int(slots.get("code", {}).get("truthful", 1)),
            code_types=tuple(MutationType(t) for t in slots.get("code", {}).get("hallucinated", [])),
            temperature=float(gen.get("temperature", 0.9)),
            max_tokens=int(gen.get("max_tokens", 512)),
            regeneration_rounds=int(gen.get("regeneration_rounds", 3)),
            generator=(d.get("models") or {}).get("generator"),
            judge=(d.get("models") or {}).get("judge"),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise RecipeError(f"{where}: invalid recipe: {e}") from None


def _rank(seed: int, qid: str) -> str:
    return hashlib.sha256(f"{seed}:{qid}".encode()).hexdigest()


def select_questions(
    recipe: Recipe, source_dir: str | Path | None = None, *, online: bool = False, allow_short: bool = False
) -> tuple[list[BaseQuestion], list[str]]:
    """The recipe's base questions, seeded and deterministic; returns (questions, shortfall messages).

    ``source_dir``: a folder with one sub-folder per source (``<dir>/sciq/train.json`` ...); a source with no
    sub-folder there comes from its offline package, or the Hub when ``online``.
    """

    chosen: list[BaseQuestion] = []
    seen: set[str] = set()
    short: list[str] = []
    cache: dict[tuple, tuple[list[BaseQuestion], list[str]]] = {}
    for quota in recipe.quotas:
        sub = Path(source_dir) / quota.source if source_dir else None
        key = (quota.source, tuple(sorted((k, str(v)) for k, v in quota.filters.items())))
        if key not in cache:
            with collect_rejected() as rejected:
                loaded = load_source(
                    quota.source, sub if sub and sub.exists() else None, online=online, **quota.filters
                )
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
    if short and not allow_short:
        raise RecipeError(
            "not enough source questions for recipe "
            f"{recipe.name}:\n  " + "\n  ".join(short) + "\n(pass --allow-short to build anyway)"
        )
    return chosen, short


def _rejected_note(rejected: list[str]) -> str:
    """'; N source row(s) rejected (first ones: ...)' for a shortfall message, or ''."""
    if not rejected:
        return ""
    return f"; {len(rejected)} source row(s) rejected (first ones: {'; '.join(rejected[:3])})"

"""PHRBench's three conditions: the one place that maps a condition to its dataset config, instance-id suffix,
metric suffix and premise kind."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from phr.bench.records import Condition, PremiseKind
from phr.core.errors import UsageError


@dataclass(frozen=True)
class ConditionSpec:
    condition: Condition
    config: str  # the dataset config (and parquet file stem) holding its rows
    id_suffix: str  # instance id = question id + suffix ("{k}": the premise's number under B+H)
    metric_suffix: str  # accuracy_<suffix>
    premise: PremiseKind | None  # the augmentation kind inserted as premise, None for B
    description: str
    mutation: bool = False  # rows carry a mutation type (and a question has several of them)

    @property
    def value(self) -> str:
        return self.condition.value

    @property
    def id_regex(self) -> str:
        """Regex matching the end of an instance id of this condition."""
        return self.id_suffix.replace("{k}", "[0-9]+") + "$"

    def instance_id(self, question_id: str, k: int | None = None) -> str:
        return question_id + self.id_suffix.format(k=k)


CONDITIONS: tuple[ConditionSpec, ...] = (
    ConditionSpec(Condition.B, "baseline", "-B", "b", None, "question only"),
    ConditionSpec(Condition.B_T, "truthful", "-T", "bt", "truthful", "with a truthful premise"),
    ConditionSpec(Condition.B_H, "hallucinated", "-H{k}", "bh", "hallucinated", "with a hallucinated premise", True),
)
ALL_CONFIG = "all"  # the card config holding every row
CONFIGS: tuple[str, ...] = tuple(c.config for c in CONDITIONS)
PREMISE_KINDS: tuple[str, ...] = tuple(c.premise for c in CONDITIONS if c.premise)
CONDITION_VALUES: tuple[str, ...] = tuple(c.value for c in CONDITIONS)

_BY_VALUE = {c.value: c for c in CONDITIONS}
_BY_CONFIG = {c.config: c for c in CONDITIONS}


class UnknownConditionError(UsageError, ValueError):
    pass


def condition_spec(name: str | Condition) -> ConditionSpec:
    """The condition named by its value (``B``, ``B+T``, ``B+H``, any case) or its config (``baseline``, ...)."""
    key = name.value if isinstance(name, Condition) else str(name).strip()
    found = _BY_VALUE.get(key.upper()) or _BY_CONFIG.get(key.lower())
    if found is None:
        raise UnknownConditionError(
            f"unknown condition {name!r}: use B, B+T, B+H (or baseline, truthful, hallucinated)"
        )
    return found


def by_config(config: str) -> ConditionSpec:
    return condition_spec(config)


def leaderboard_coverage_problem(covered: Iterable[str], what: str = "the submission") -> str | None:
    """Why ``what``, covering the conditions ``covered``, cannot be a leaderboard entry (None: it covers all
    three; the leaderboard compares each model's B, B+T and B+H accuracy)."""
    have = [v for v in CONDITION_VALUES if v in {condition_spec(c).value for c in covered}]
    missing = [v for v in CONDITION_VALUES if v not in have]
    if not missing:
        return None
    only = f"only condition{'s' if len(have) > 1 else ''} {', '.join(have)}" if have else "none of the conditions"
    return (
        f"{what} covers {only}: a leaderboard entry needs all three conditions {', '.join(CONDITION_VALUES)} "
        f"(missing {', '.join(missing)})"
    )


def select(names: str | Iterable[str]) -> tuple[str, ...]:
    """Condition values, in the benchmark's order, from names or a comma-separated string."""
    if isinstance(names, str):
        names = [c for c in names.replace(" ", "").split(",") if c]
    wanted = {condition_spec(n).value for n in names}
    if not wanted:
        raise UnknownConditionError("no condition selected")
    return tuple(v for v in CONDITION_VALUES if v in wanted)

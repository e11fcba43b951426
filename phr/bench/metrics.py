"""PHRBench's metric catalogue: every metric name a result or the leaderboard carries, written here once.

Each ``Metric`` says what it measures, under which condition, which direction is better (``None``: descriptive,
no better direction), whether a leaderboard entry requires it, its Hub task id in ``eval.yaml`` and the name of
its standard error. Other modules ask for names (``name_of``, ``delta_of``, ``rate_of``) instead of assembling
strings. A table cell reports the ``FIGURES`` (accuracy and the trajectory metrics) of a group of samples; a
per-condition metric is ``<figure>_<condition suffix>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from phr.bench.conditions import CONDITIONS
from phr.bench.records import Domain

#: condition -> the suffix of its metric names (accuracy_b, OL_bt, ...), from phr.bench.conditions
CONDITION_SUFFIX = {c.value: c.metric_suffix for c in CONDITIONS}
ACCURACY = "accuracy"
TRAJECTORY = ("OL", "UI", "BUF", "BC")
#: OL is in reference-scorer tokens (paper §4.2 "tokens"); OL_words (flat metrics OL_words_b/_bt/_bh, OL_words,
#: delta_OL_words) in words, the unit of the paper's reported OL differences (§5.2, §C.1)
OL_WORDS = "OL_words"
#: the figures of one table cell: OL in words beside OL in tokens, since the paper reports its per-domain, per-type
#: and Figure 5 OL comparisons in words (§C.1 "+30.4 words", §5.2 "about 30 more reasoning words")
FIGURES = (ACCURACY, "OL", OL_WORDS, "UI", "BUF", "BC")
#: the paper's names of the domains where they differ from the data's values (Table 8: "Code Generation")
DOMAIN_NAMES = {d.value: d.value for d in Domain} | {Domain.CODE.value: "Code Generation"}
#: behavioural resolutions of a B+H response (paper §5.2, Appendix D.1), the paper's names
HEURISTIC_CORRECTION = "Heuristic Correction"
HALLUCINATION_COMPLIANCE = "Hallucination Compliance"
HALLUCINATION_AVOIDANCE = "Hallucination Avoidance"
RESOLUTIONS = (HEURISTIC_CORRECTION, HALLUCINATION_COMPLIANCE, HALLUCINATION_AVOIDANCE)
INSIGHTFUL = "insightful"
#: the trajectory groups of Figure 5 (judged B+H responses): insightful = Heuristic Correction and correct
NON_INSIGHTFUL = "non-insightful"
INSIGHTFUL_GROUPS = (INSIGHTFUL, NON_INSIGHTFUL)
#: how the leaderboard ranks entries (best first)
RANK_BY = "accuracy_bh"
#: the domains of the per-mutation-type tables (paper §C.2: Tables 9-11 cover the three science domains; Code
#: Generation is excluded because its hallucinated premises are all State Distortion)
PER_TYPE_DOMAINS: tuple[str, ...] = tuple(d.value for d in Domain if d is not Domain.CODE)
#: the overall accuracy difference H - T (the paper's "accuracy drop", §5.1, negated) and retention H / T (Figure 3)
ACCURACY_H_MINUS_T = "delta_accuracy"
RETENTION = "retention"

Kind = Literal["accuracy", "trajectory", "delta", "ratio", "resolution"]
Better = Literal["higher", "lower"] | None


@dataclass(frozen=True)
class Metric:
    name: str
    kind: Kind
    description: str
    better: Better = None
    figure: str | None = None  # the table figure (accuracy, OL, ...) or resolution it reports
    condition: str | None = None  # the condition it is measured under; None for a difference
    required: bool = False  # a leaderboard entry must report it
    leaderboard: bool = False  # a leaderboard column
    hub_task: str | None = None  # its task (one Hub leaderboard) in eval.yaml
    difference: tuple[str, str] | None = None  # (a, b): this metric is a - b, paired per question
    ratio: tuple[str, str] | None = None  # (a, b): this metric is a / b, paired per question
    same_as: str | None = None  # a headline name for another metric

    @property
    def se(self) -> str:
        """The name of its standard error (a leaderboard column, a key of a result's ``standard_errors``)."""
        return se_name(self.name)


def _traj(name: str, cond: str, what: str) -> Metric:
    return Metric(name, "trajectory", f"{what} under {cond}", figure=name.split("_")[0], condition=cond)


_OL, _UI = "mean response length in scorer tokens", "mean next-token entropy over the response (nats)"
_OLW = "mean response length in words"
_BUF, _BC = "fraction of step transitions with KL above tau", "branching cues per 100 words"

METRICS: tuple[Metric, ...] = (
    Metric(
        "accuracy_b",
        "accuracy",
        "accuracy under B (question only)",
        "higher",
        ACCURACY,
        "B",
        required=True,
        leaderboard=True,
        hub_task="accuracy_b",
    ),
    Metric(
        "accuracy_bt",
        "accuracy",
        "accuracy under B+T (with a truthful premise)",
        "higher",
        ACCURACY,
        "B+T",
        required=True,
        leaderboard=True,
        hub_task="accuracy_bt",
    ),
    Metric(
        "accuracy_bh",
        "accuracy",
        "accuracy under B+H (with a hallucinated premise)",
        "higher",
        ACCURACY,
        "B+H",
        required=True,
        leaderboard=True,
        hub_task="accuracy_bh",
    ),
    Metric(
        "delta_bt",
        "delta",
        "accuracy B+T - B (a truthful premise's effect)",
        "higher",
        ACCURACY,
        leaderboard=True,
        difference=("accuracy_bt", "accuracy_b"),
    ),
    Metric(
        "delta_bh",
        "delta",
        "accuracy B+H - B (a hallucinated premise's effect)",
        "higher",
        ACCURACY,
        leaderboard=True,
        difference=("accuracy_bh", "accuracy_b"),
    ),
    Metric(
        ACCURACY_H_MINUS_T,
        "delta",
        "accuracy B+H - B+T: the paper's accuracy drop, negated (a drop is negative)",
        "higher",
        ACCURACY,
        leaderboard=True,
        difference=("accuracy_bh", "accuracy_bt"),
    ),
    Metric(
        RETENTION,
        "ratio",
        "accuracy B+H / B+T: the share of the truthful-premise accuracy kept under a hallucinated premise",
        "higher",
        ACCURACY,
        leaderboard=True,
        ratio=("accuracy_bh", "accuracy_bt"),
    ),
    Metric("OL", "trajectory", f"{_OL} under B+H", None, "OL", "B+H", leaderboard=True, hub_task="ol", same_as="OL_bh"),
    Metric("OL_words", "trajectory", f"{_OLW} under B+H", None, "OL_words", "B+H", same_as="OL_words_bh"),
    Metric("UI", "trajectory", f"{_UI} under B+H", None, "UI", "B+H", leaderboard=True, hub_task="ui", same_as="UI_bh"),
    Metric(
        "BUF", "trajectory", f"{_BUF} under B+H", None, "BUF", "B+H", leaderboard=True, hub_task="buf", same_as="BUF_bh"
    ),
    Metric("BC", "trajectory", f"{_BC} under B+H", None, "BC", "B+H", leaderboard=True, hub_task="bc", same_as="BC_bh"),
    _traj("OL_b", "B", _OL),
    _traj("OL_bt", "B+T", _OL),
    _traj("OL_bh", "B+H", _OL),
    Metric("OL_words_b", "trajectory", f"{_OLW} under B", figure="OL_words", condition="B"),
    Metric("OL_words_bt", "trajectory", f"{_OLW} under B+T", figure="OL_words", condition="B+T"),
    Metric("OL_words_bh", "trajectory", f"{_OLW} under B+H", figure="OL_words", condition="B+H"),
    _traj("UI_b", "B", _UI),
    _traj("UI_bt", "B+T", _UI),
    _traj("UI_bh", "B+H", _UI),
    _traj("BUF_b", "B", _BUF),
    _traj("BUF_bt", "B+T", _BUF),
    _traj("BUF_bh", "B+H", _BUF),
    _traj("BC_b", "B", _BC),
    _traj("BC_bt", "B+T", _BC),
    _traj("BC_bh", "B+H", _BC),
    Metric("delta_OL", "delta", "OL under B+H - under B+T", figure="OL", difference=("OL_bh", "OL_bt")),
    Metric(
        "delta_OL_words",
        "delta",
        "OL_words under B+H - under B+T",
        figure="OL_words",
        difference=("OL_words_bh", "OL_words_bt"),
    ),
    Metric("delta_UI", "delta", "UI under B+H - under B+T", figure="UI", difference=("UI_bh", "UI_bt")),
    Metric("delta_BUF", "delta", "BUF under B+H - under B+T", figure="BUF", difference=("BUF_bh", "BUF_bt")),
    Metric("delta_BC", "delta", "BC under B+H - under B+T", figure="BC", difference=("BC_bh", "BC_bt")),
    Metric(
        "correction_rate",
        "resolution",
        "share of judged B+H responses that correct the premise (Heuristic Correction)",
        "higher",
        HEURISTIC_CORRECTION,
        "B+H",
    ),
    Metric(
        "compliance_rate",
        "resolution",
        "share of judged B+H responses that use the false premise as valid (Hallucination Compliance)",
        "lower",
        HALLUCINATION_COMPLIANCE,
        "B+H",
    ),
    Metric(
        "avoidance_rate",
        "resolution",
        "share of judged B+H responses that neither use nor correct it (Hallucination Avoidance)",
        None,
        HALLUCINATION_AVOIDANCE,
        "B+H",
    ),
    Metric(
        "insightful_rate",
        "resolution",
        "share of judged B+H responses that correct the premise and answer correctly (insightful)",
        "higher",
        INSIGHTFUL,
        "B+H",
    ),
)

CATALOGUE: dict[str, Metric] = {m.name: m for m in METRICS}
#: the metrics a leaderboard entry must report (fractions in [0, 1])
REQUIRED: tuple[str, ...] = tuple(m.name for m in METRICS if m.required)
#: the leaderboard's metric columns, in display order: the paper's T and H first, then the B-referenced extras,
#: the trajectory metrics under H, the resolution proportions and the insightful rate (paper Tables 1-2, Figure 4)
LEADERBOARD: tuple[str, ...] = (
    "accuracy_bt",
    "accuracy_bh",
    ACCURACY_H_MINUS_T,
    RETENTION,
    *(
        m.name
        for m in METRICS
        if m.leaderboard and m.name not in ("accuracy_bt", "accuracy_bh", ACCURACY_H_MINUS_T, RETENTION)
    ),
    *(m.name for m in METRICS if m.kind == "resolution"),
)
#: the metrics with a Hub task in eval.yaml
HUB_METRICS: tuple[Metric, ...] = tuple(m for m in METRICS if m.hub_task)

_PER_CONDITION = {
    (m.figure, m.condition): m.name for m in METRICS if m.kind in ("accuracy", "trajectory") and m.same_as is None
}
_HEADLINE = {m.figure: m.name for m in METRICS if m.same_as is not None}
_DELTA = {m.difference: m.name for m in METRICS if m.difference}
_RATE = {m.figure: m.name for m in METRICS if m.kind == "resolution"}


def metric(name: str) -> Metric:
    """The catalogue entry ``name``; ``KeyError`` naming the known metrics otherwise."""
    try:
        return CATALOGUE[name]
    except KeyError:
        raise KeyError(f"unknown PHRBench metric {name!r}; known: {', '.join(CATALOGUE)}") from None


def name_of(figure: str, condition: str) -> str:
    """The metric of ``figure`` (accuracy, OL, ...) under ``condition`` (B, B+T, B+H): ``accuracy_bt``."""
    return _PER_CONDITION[(figure, condition)]


def headline_of(figure: str) -> str:
    """The leaderboard's name for a trajectory figure (its value under B+H): ``OL``."""
    return _HEADLINE[figure]


def delta_of(a: str, b: str) -> str:
    """The metric ``a - b`` (two metric names): ``delta_of("OL_bh", "OL_bt") == "delta_OL"``."""
    return _DELTA[(a, b)]


def rate_of(resolution: str) -> str:
    """The share metric of a resolution (``Correction``, ...) or of ``INSIGHTFUL``."""
    return _RATE[resolution]


def se_name(name: str) -> str:
    """The standard error column of metric ``name`` (``accuracy_bh_se``)."""
    return f"{name}_se"


# ---- presentation: readable names and the paper section of each metric (the leaderboard page, the report) ----

#: readable names of the figures and the paper section that defines each
FIGURE_LABELS = {ACCURACY: "Acc", "OL": "OL", OL_WORDS: "OL words", "UI": "UI", "BUF": "BUF", "BC": "BC"}
FIGURE_NAMES = {
    ACCURACY: "Accuracy",
    "OL": "Output Length",
    OL_WORDS: "Output Length in words",
    "UI": "Uncertainty Index",
    "BUF": "Belief Update Frequency",
    "BC": "Branching Complexity",
}
FIGURE_SECTIONS = {
    ACCURACY: "§4.2",
    "OL": "§4.2",
    OL_WORDS: "§5.2, §C.1",
    "UI": "§4.2, §B.2",
    "BUF": "§4.2, §B.2",
    "BC": "§4.2, §B.2",
}
#: the paper's short names of the conditions (Table 1: T and H)
CONDITION_LABELS = {"B": "B", "B+T": "T", "B+H": "H"}
_RESOLUTION_SECTION = "§5.2, App. D.1 (Table 2, Figure 4)"


def label(name: str) -> str:
    """A metric's readable column name: ``Acc (H)``, ``Acc H − T``, ``Retention H / T``, ``OL (H)``, a resolution."""
    m = metric(name)
    if m.kind == "resolution":
        return "Insightful rate" if m.figure == INSIGHTFUL else str(m.figure)
    pair = m.difference or m.ratio
    if pair:
        a, b = (CONDITION_LABELS[metric(p).condition or ""] for p in pair)
        return f"Retention {a} / {b}" if m.ratio else f"{FIGURE_LABELS[m.figure or '']} {a} − {b}"
    return f"{FIGURE_LABELS[m.figure or '']} ({CONDITION_LABELS[m.condition or '']})"


def section(name: str) -> str:
    """The paper section (and table or figure) that defines or reports metric ``name``."""
    m = metric(name)
    if m.kind == "resolution":
        return _RESOLUTION_SECTION
    if m.ratio:
        return "§5.1 (Figure 3)"
    if m.difference == ("accuracy_bh", "accuracy_bt"):
        return "§5.1 (Table 1: the accuracy drop)"
    if m.difference and m.figure == ACCURACY:
        return "not in the paper (a difference against B, not the paper's accuracy drop)"
    return FIGURE_SECTIONS[m.figure or ""]


def definition(name: str) -> str:
    """What metric ``name`` measures, with its full name: the hover text of a column."""
    m = metric(name)
    full = FIGURE_NAMES.get(m.figure or "", "") if m.kind in ("accuracy", "trajectory") else ""
    return f"{full}: {m.description}" if full and m.kind != "accuracy" else m.description

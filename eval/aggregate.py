"""From per-sample scores to a model's tables (paper §4-5, Tables 2 and 5-11, Figures 4-5).

Every mean is over scored samples (each instance has the same number of samples, so this equals the mean
over instances of the per-instance mean). Missing responses count as incorrect for accuracy and are left
out of the trajectory means. Resolution proportions are over the judged B+H samples.

Tables 9-11 (per mutation type) cover the science domains only (``PER_TYPE_DOMAINS``, paper §C.2). The flat
metrics carry the overall accuracy H - T (``delta_accuracy``) and retention H / T (``retention``; absent when
the B+T accuracy is 0).

Standard errors: a paired bootstrap over base questions (phr.eval.bootstrap) gives every figure of every table
cell, every difference (H - T, T - B) and every flat metric its standard error.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from statistics import fmean
from typing import Any

import numpy as np

from phr.bench.metrics import (
    ACCURACY,
    ACCURACY_H_MINUS_T,
    CONDITION_SUFFIX,
    FIGURES,
    INSIGHTFUL,
    INSIGHTFUL_GROUPS,
    LEADERBOARD,
    OL_WORDS,
    PER_TYPE_DOMAINS,
    RESOLUTIONS,
    RETENTION,
    TRAJECTORY,
    delta_of,
    headline_of,
    metric,
    name_of,
    rate_of,
)
from phr.eval.bootstrap import QuestionResampler, standard_error
from phr.eval.results import (
    H_MINUS_T,
    T_SAME_QUESTIONS,
    Bootstrap,
    Cell,
    CellErrors,
    Counts,
    Difference,
    Errors,
    MutationRow,
    ReportTables,
    Resolution,
)
from phr.eval.scoring import SampleScore

_HALL, _TRUTH = "B+H", "B+T"


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return round(fmean(vals), 6) if vals else None


def _value(s: SampleScore, figure: str) -> float | None:
    """A sample's value of a figure: correctness (missing: incorrect), or a trajectory metric (missing: none)."""
    if figure == ACCURACY:
        return float(s.correct)
    return None if s.missing else getattr(s, figure.lower())


class _Group:
    """One table cell: its point estimates and, with a resampler, the bootstrap draws of each figure."""

    def __init__(self, scores: Sequence[SampleScore], rs: QuestionResampler | None):
        self.accuracy = fmean(float(s.correct) for s in scores) if scores else None  # unrounded, for ratios
        # Cell is made by create_model (phr.eval.results): its fields are not typed
        self.cell: Any = Cell(
            **{"n": len(scores), "missing": sum(s.missing for s in scores)},
            **{f: _mean(_value(s, f) for s in scores) for f in FIGURES},
        )
        self.draws = {f: _draws(rs, ((s.question_id, _value(s, f)) for s in scores)) for f in FIGURES}

    def get(self, figure: str) -> float | None:
        return getattr(self.cell, figure)

    def errors(self) -> Errors:
        return {f: standard_error(d) for f, d in self.draws.items()}


def _draws(rs: QuestionResampler | None, pairs: Iterable[tuple[str, float | None]]) -> np.ndarray | None:
    return None if rs is None else rs.means((q, v) for q, v in pairs if v is not None)


def _minus(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    return None if a is None or b is None else a - b


def _ratio(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    """``a / b`` per resample; NaN where ``b`` is 0 (left out of the standard error)."""
    if a is None or b is None:
        return None
    out = np.full(a.shape, np.nan)
    np.divide(a, b, out=out, where=b > 0)
    return out


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 6)


def _h_minus_t(t: _Group, h: _Group) -> tuple[Difference, Errors]:  # type: ignore[valid-type]
    diff = Difference(**{f: _diff(h.get(f), t.get(f)) for f in FIGURES})
    return diff, {f: standard_error(_minus(h.draws[f], t.draws[f])) for f in FIGURES}


def _group(scores: Iterable[SampleScore], key: Callable[[SampleScore], str]) -> dict[str, list[SampleScore]]:
    out: dict[str, list[SampleScore]] = defaultdict(list)
    for s in scores:
        out[key(s)].append(s)
    return dict(sorted(out.items()))


def _cells(
    scores: Iterable[SampleScore], key: Callable[[SampleScore], str], rs: QuestionResampler | None
) -> dict[str, _Group]:
    return {k: _Group(g, rs) for k, g in _group(scores, key).items()}


def _shares(
    judged: Sequence[SampleScore], rs: QuestionResampler | None
) -> tuple[dict[str, float | None], dict[str, np.ndarray | None]]:
    """The resolution proportions and the insightful rate of ``judged`` samples, with their draws."""
    tests = {r: (lambda s, r=r: s.resolution == r) for r in RESOLUTIONS} | {INSIGHTFUL: lambda s: bool(s.insightful)}
    points = {k: _mean(float(t(s)) for s in judged) for k, t in tests.items()}
    return points, {k: _draws(rs, ((s.question_id, float(t(s))) for s in judged)) for k, t in tests.items()}


def _per_domain(scores: Sequence[SampleScore], rs: QuestionResampler | None, errs: CellErrors) -> dict[str, dict]:
    """The cells of each domain by condition (with H - T when both are there); their errors go to
    ``errs.per_domain``."""
    per_domain = {}
    for dom, g in _group(scores, lambda s: s.domain).items():
        cells = _cells(g, lambda s: s.condition, rs)
        row, row_errs = {c: x.cell for c, x in cells.items()}, {c: x.errors() for c, x in cells.items()}
        if _TRUTH in cells and _HALL in cells:
            row[H_MINUS_T], row_errs[H_MINUS_T] = _h_minus_t(cells[_TRUTH], cells[_HALL])
        per_domain[dom], errs.per_domain[dom] = row, row_errs
    return per_domain


def _per_mutation_type(
    scores: Sequence[SampleScore], hall: list[SampleScore], rs: QuestionResampler | None, errs: CellErrors
) -> dict[str, Any]:
    """The B+H row of each mutation type of the science domains, with the B+T cell of the same questions and
    H - T; their errors go to ``errs.per_mutation_type``."""
    truthful_by_q = _group((s for s in scores if s.condition == _TRUTH), lambda s: s.question_id)
    per_type = {}
    science = [s for s in hall if s.domain in PER_TYPE_DOMAINS]  # paper §C.2: Code (all SD) is left out
    for mt, g in _group(science, lambda s: s.mutation_type or "unknown").items():
        h = _Group(g, rs)
        t = _Group([s for q in {s.question_id for s in g} for s in truthful_by_q.get(q, [])], rs)
        mt_errs = {_HALL: h.errors()}
        row = MutationRow(**h.cell.model_dump())
        if t.cell.n:
            row.truthful = t.cell
            row.h_minus_t, mt_errs[H_MINUS_T] = _h_minus_t(t, h)
            mt_errs[T_SAME_QUESTIONS] = t.errors()
        per_type[mt], errs.per_mutation_type[mt] = row, mt_errs
    return per_type


def _resolution_table(hall: list[SampleScore], judged: list[SampleScore], shares: dict[str, float | None]) -> Any:
    """The resolution table of the B+H samples: judged and unjudged counts, the proportions (overall, per
    domain, per mutation type of the science domains) and the insightful rate."""

    def props(group: list[SampleScore]) -> dict[str, float | None]:
        return {r: _mean(float(s.resolution == r) for s in group) for r in RESOLUTIONS}

    return Resolution(
        **{
            "judged": len(judged),
            "unjudged": sum(1 for s in hall if s.resolution is None and not s.missing),
            "proportions": {r: shares[r] for r in RESOLUTIONS},
            rate_of(INSIGHTFUL): shares[INSIGHTFUL],
            "per_domain": {d: props(g) for d, g in _group(judged, lambda s: s.domain).items()},
            "per_mutation_type": {  # science domains only, as Tables 9-11 (§C.2: Code is all State Distortion)
                m: props(g)
                for m, g in _group(
                    (s for s in judged if s.domain in PER_TYPE_DOMAINS), lambda s: s.mutation_type or "unknown"
                ).items()
            },
        }
    )


def aggregate(scores: Sequence[SampleScore], bootstrap: Bootstrap | None = Bootstrap()) -> ReportTables:
    """The report tables, the flat ``metrics`` of a result and (unless ``bootstrap`` is None) their standard
    errors from a paired bootstrap over base questions."""
    rs = (
        None
        if bootstrap is None
        else QuestionResampler((s.question_id for s in scores), bootstrap.resamples, bootstrap.seed)
    )
    by_cond = _cells(scores, lambda s: s.condition, rs)
    by_cond = {c: by_cond[c] for c in CONDITION_SUFFIX if c in by_cond}
    errs = CellErrors(by_condition={c: g.errors() for c, g in by_cond.items()})
    per_domain = _per_domain(scores, rs, errs)
    hall = [s for s in scores if s.condition == _HALL]
    per_type = _per_mutation_type(scores, hall, rs, errs)

    judged = [s for s in hall if s.resolution is not None]
    shares, share_draws = _shares(judged, rs)
    errs.resolution = {k: standard_error(d) for k, d in share_draws.items()}
    resolution = _resolution_table(hall, judged, shares)
    by_resolution = {r: _Group([s for s in judged if s.resolution == r], rs) for r in RESOLUTIONS}
    errs.by_resolution = {r: g.errors() for r, g in by_resolution.items()}
    by_insightful = {  # Figure 5: insightful (Heuristic Correction and correct) vs the other judged responses
        grp: _Group([s for s in judged if bool(s.insightful) == (grp == INSIGHTFUL)], rs) for grp in INSIGHTFUL_GROUPS
    }
    errs.by_insightful = {grp: g.errors() for grp, g in by_insightful.items()}

    metrics, draws = _flat_metrics(by_cond, shares, share_draws, bool(judged))
    _ol_words(scores, rs, metrics, draws)
    return ReportTables(
        metrics=metrics,
        standard_errors=_flat_errors(metrics, draws) if rs is not None else {},
        by_condition={c: g.cell for c, g in by_cond.items()},
        per_domain=per_domain,
        per_mutation_type=per_type,
        resolution=resolution,
        by_resolution={r: g.cell for r, g in by_resolution.items()},
        by_insightful={grp: g.cell for grp, g in by_insightful.items()},
        cell_errors=errs if rs is not None else None,
        counts=Counts(
            samples=len(scores),
            missing=sum(s.missing for s in scores),
            instances=len({s.instance_id for s in scores}),
            questions=len({s.question_id for s in scores}),
        ),
        bootstrap=bootstrap,
    )


def _accuracy_headline(by_cond: dict[str, _Group], metrics: dict[str, float], draws: dict) -> None:
    """The paper's headline (§5.1): H - T, and retention H / T of the unrounded accuracies (Figure 3)."""
    bh, bt = name_of(ACCURACY, _HALL), name_of(ACCURACY, _TRUTH)
    if bh not in metrics or bt not in metrics:
        return
    metrics[ACCURACY_H_MINUS_T] = round(metrics[bh] - metrics[bt], 6)
    draws[ACCURACY_H_MINUS_T] = _minus(draws[bh], draws[bt])
    hall, truthful = by_cond[_HALL].accuracy, by_cond[_TRUTH].accuracy
    if metrics[bt] > 0 and hall is not None and truthful:
        metrics[RETENTION] = round(hall / truthful, 6)
        draws[RETENTION] = _ratio(draws[bh], draws[bt])


def _flat_metrics(
    by_cond: dict[str, _Group],
    shares: dict[str, float | None],
    share_draws: dict[str, np.ndarray | None],
    judged: bool,
) -> tuple[dict[str, float], dict[str, np.ndarray | None]]:
    """The result's flat ``metrics`` (catalogue names) and the bootstrap draws of each."""
    metrics: dict[str, float] = {}
    draws: dict[str, np.ndarray | None] = {}
    for c, g in by_cond.items():
        for f in FIGURES:
            value = g.get(f)
            if value is not None:
                name = name_of(f, c)
                metrics[name], draws[name] = value, g.draws[f]
    _accuracy_headline(by_cond, metrics, draws)
    for f in TRAJECTORY:  # the leaderboard's OL/UI/BUF/BC: under B+H
        bh, bt = name_of(f, _HALL), name_of(f, _TRUTH)
        if bh in metrics:
            metrics[headline_of(f)], draws[headline_of(f)] = metrics[bh], draws[bh]
        if bh in metrics and bt in metrics:
            d = delta_of(bh, bt)
            metrics[d], draws[d] = round(metrics[bh] - metrics[bt], 6), _minus(draws[bh], draws[bt])
    if judged:
        for r in (*RESOLUTIONS, INSIGHTFUL):
            metrics[rate_of(r)], draws[rate_of(r)] = shares[r], share_draws[r]  # type: ignore[assignment]  # judged: a number
    for name in LEADERBOARD:  # accuracy differences: only their draws (the leaderboard computes the values)
        pair = metric(name).difference
        if pair and all(p in draws for p in pair):
            draws[name] = _minus(draws[pair[0]], draws[pair[1]])
    return metrics, draws


def _ol_words(scores: Sequence[SampleScore], rs: QuestionResampler | None, metrics: dict, draws: dict) -> None:
    """OL in words per condition (flat metrics only), the B+H headline and its B+H - B+T difference."""
    for c, g in _group((s for s in scores if not s.missing and s.ol_words is not None), lambda s: s.condition).items():
        if c in CONDITION_SUFFIX:
            name = name_of(OL_WORDS, c)
            metrics[name] = _mean(s.ol_words for s in g)
            draws[name] = _draws(rs, ((s.question_id, float(s.ol_words or 0)) for s in g))
    bh, bt = name_of(OL_WORDS, _HALL), name_of(OL_WORDS, _TRUTH)
    if bh in metrics:
        metrics[headline_of(OL_WORDS)], draws[headline_of(OL_WORDS)] = metrics[bh], draws[bh]
        if bt in metrics:
            d = delta_of(bh, bt)
            metrics[d], draws[d] = round(metrics[bh] - metrics[bt], 6), _minus(draws[bh], draws[bt])


def _flat_errors(metrics: dict[str, float], draws: dict[str, np.ndarray | None]) -> dict[str, float]:
    out = {}
    for name, d in draws.items():
        se = standard_error(d)
        if se is not None and (name in metrics or metric(name).difference):
            out[name] = se
    return out

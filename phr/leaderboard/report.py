"""The cross-model report: the paper's views across many results (paper §5, Appendix C).

From results (``phr.eval.results.Result``, one per model run) it builds

- Table 1: per model, Acc / OL / UI / BUF / BC under T (B+T) and H (B+H), accuracy H - T and retention H / T,
  the average over the ranked models and, where results say ``model_access``, the proprietary and open averages;
- Table 2: behavioural resolution proportions and the insightful rate per model (Figure 4);
- Tables 5-8: the same comparison per domain; Tables 9-11: per mutation type (science domains only, §C.2);
- Figure 3: accuracy retention H / T by domain and mutation type (a heat map, one row per model, and the mean);
- Figure 5: OL / BUF / BC per resolution mode, and insightful vs non-insightful where a result's tables have the
  groups (``tables.by_insightful``);
- Pearson correlations among OL, BUF and BC across models, under T and under H (§5.1).

Every figure carries its standard error from the result (paired bootstrap over base questions) where the result
has one; averages over models carry none (``se`` null). Every average (and the correlations) is over the ranked
results only: a partial, unverified or weak-sandbox result (``LeaderboardEntry.ranked`` false) is shown, with its
tags next to its name, but not averaged; each table says so. ``write_report`` writes ``report.md``, ``report.json``
and the four PNG figures (matplotlib). ``phr.leaderboard.page`` embeds the same views. See docs/metrics.md.
"""

from __future__ import annotations

import base64
import io
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from phr.bench.metrics import (
    ACCURACY,
    ACCURACY_H_MINUS_T,
    CONDITION_LABELS,
    DOMAIN_NAMES,
    FIGURE_LABELS,
    FIGURES,
    INSIGHTFUL,
    OL_WORDS,
    RESOLUTIONS,
    RETENTION,
    delta_of,
    label,
    name_of,
)
from phr.bench.records import Domain, MutationType
from phr.core.figures import save_png
from phr.core.fs import atomic_dir, atomic_write
from phr.core.text import md_code, md_text
from phr.eval.results import H_MINUS_T, MODEL_ACCESS, Result, estimate_text
from phr.leaderboard.repo import result_path
from phr.leaderboard.table import LeaderboardEntry

T, H = "B+T", "B+H"
#: the paper's table of each domain (Tables 5-8) and mutation type (Tables 9-11)
DOMAIN_TABLES = {d.value: n for d, n in zip(Domain, range(5, 9), strict=True)}
TYPE_TABLES = {m.value: n for m, n in zip(MutationType, range(9, 12), strict=True)}
#: the trajectory metrics the paper correlates across models (§5.1) and plots per resolution group (Figure 5)
CORRELATED = ("OL", "BUF", "BC")
#: the figures of Figure 5's groups: OL in words first (the paper's unit there, §5.2 "about 30 more reasoning
#: words"), tokens beside it, BUF and BC
GROUP_FIGURES = (OL_WORDS, "OL", "BUF", "BC")
#: the trajectory figures of a T vs H comparison table (OL in words beside OL in tokens: §C.1 reports words)
COMPARED = tuple(f for f in FIGURES if f != ACCURACY)
#: a result table of insightful vs non-insightful trajectory groups (Figure 5), when the result has it
INSIGHT_TABLE = "by_insightful"
AVERAGE = "Average"
FIGURE_FILES = {
    "figure3": "fig3_retention.png",
    "figure4": "fig4_insightful.png",
    "figure5_resolution": "fig5_resolution.png",
    "figure5_insightful": "fig5_insightful.png",
}
FIGURE_CAPTIONS = {
    "figure3": "Figure 3: accuracy retention H / T by domain and hallucinated augmentation type.",
    "figure4": "Figure 4: insightful rate and heuristic correction per model (± one standard error).",
    "figure5_resolution": "Figure 5: OL, BUF and BC by behavioural resolution (± one standard error).",
    "figure5_insightful": "Figure 5: OL, BUF and BC of insightful vs non-insightful trajectories.",
}
_DEC = 3


class Estimate(BaseModel):
    """A value and its standard error (either may be null)."""

    model_config = ConfigDict(frozen=True)
    value: float | None = None
    se: float | None = None

    def text(self, signed: bool = False) -> str:
        return estimate_text(self.value, self.se, signed=signed) if self.value is not None else ""


class Comparison(BaseModel):
    """One model's (or the average's) T vs H comparison of one group of questions: each figure under T and H,
    their difference H - T and accuracy retention H / T."""

    model_config = ConfigDict(populate_by_name=True)
    T: dict[str, Estimate] = {}
    H: dict[str, Estimate] = {}
    h_minus_t: dict[str, Estimate] = Field({}, alias=H_MINUS_T)  # type: ignore[literal-required]
    retention: Estimate = Estimate()


class ModelRef(BaseModel):
    """A column of the report: the model, its run, whether it is proprietary or open, where its result lives."""

    key: str  # the row name: the model, or "model (run id)" when a model has several runs
    model: str
    revision: str
    run_id: str
    model_access: str | None = None
    source_url: str | None = None
    result_file: str  # relative path of the result JSON in a rendered leaderboard / report folder
    #: False for a partial, unverified or weak-sandbox result: shown, never averaged (``LeaderboardEntry.ranked``)
    ranked: bool = True
    #: shown next to the model name: "partial", "missing N", "unverified", "weak sandbox"
    tags: list[str] = []


class Block(BaseModel):
    """One paper table: a comparison per model and their averages (``all``, and per ``model_access``) over the
    ranked rows (``averaged``: their keys; none, no averages)."""

    table: int
    rows: dict[str, Comparison] = {}
    averages: dict[str, Comparison] = {}
    averaged: list[str] = []


class ResolutionRow(BaseModel):
    judged: int = 0
    proportions: dict[str, Estimate] = {}
    insightful: Estimate = Estimate()


class Heatmap(BaseModel):
    columns: list[str]
    rows: dict[str, dict[str, float | None]] = {}


class CrossModelReport(BaseModel):
    """The paper's cross-model views (see the module docstring), as JSON (``report.json``)."""

    model_config = ConfigDict(populate_by_name=True)
    models: list[ModelRef]
    table1: Block
    table2: dict[str, ResolutionRow]
    per_domain: dict[str, Block]
    per_mutation_type: dict[str, Block]
    retention: Heatmap
    trajectory_by_resolution: dict[str, dict[str, dict[str, Estimate]]]
    trajectory_by_insight: dict[str, dict[str, dict[str, Estimate]]]
    correlations: dict[str, dict[str, float | None]]

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


# ---- building --------------------------------------------------------------------------------------------------


def _est(value: Any, se: Any = None) -> Estimate:
    ok = isinstance(value, (int, float)) and math.isfinite(value)
    return Estimate(value=float(value) if ok else None, se=float(se) if ok and se is not None else None)


def _figures(cell: Any, errs: Mapping[str, Any] | None) -> dict[str, Estimate]:
    if cell is None:
        return {}
    return {f: _est(getattr(cell, f, None), (errs or {}).get(f)) for f in FIGURES}


def _ratio(h: Estimate | None, t: Estimate | None) -> Estimate:
    if h is None or t is None or h.value is None or not t.value:
        return Estimate()
    return Estimate(value=round(h.value / t.value, 6))


def _comparison(t_cell: Any, h_cell: Any, diff: Any, errs: Mapping[str, Any]) -> Comparison:  # cells: as _figures
    t, h = _figures(t_cell, errs.get(T)), _figures(h_cell, errs.get(H))
    if diff is not None:
        d = _figures(diff, errs.get(H_MINUS_T))
    else:
        d = {
            f: _est(round(hv - tv, 6))
            for f in FIGURES
            if f in t and f in h and (tv := t[f].value) is not None and (hv := h[f].value) is not None
        }
    return Comparison(T=t, H=h, h_minus_t=d, retention=_ratio(h.get(ACCURACY), t.get(ACCURACY)))


def _overall(res: Result) -> Comparison:
    """Table 1's row: by condition, with H - T and retention from the flat metrics (and their errors)."""
    tables, errs = res.tables, (res.tables.cell_errors if res.tables else None)
    by_cond = tables.by_condition if tables else {}
    cell_errs = errs.by_condition if errs else {}
    comp = _comparison(by_cond.get(T), by_cond.get(H), None, cell_errs)
    if not by_cond:  # a result without tables: the flat metrics
        m, se = res.metrics, res.standard_errors
        for cond, side in ((T, comp.T), (H, comp.H)):
            for f in FIGURES:
                name = name_of(f, cond)
                if name in m:
                    side[f] = _est(m[name], se.get(name))
    m, se = res.metrics, res.standard_errors
    diffs = {ACCURACY: ACCURACY_H_MINUS_T, **{f: delta_of(name_of(f, H), name_of(f, T)) for f in COMPARED}}
    for f, name in diffs.items():
        if name in m:
            comp.h_minus_t[f] = _est(m[name], se.get(name))
    if RETENTION in m:
        comp.retention = _est(m[RETENTION], se.get(RETENTION))
    return comp


def _per_domain(res: Result) -> dict[str, Comparison]:
    if not res.tables:
        return {}
    errs = res.tables.cell_errors.per_domain if res.tables.cell_errors else {}
    return {
        d: _comparison(row.get(T), row.get(H), row.get(H_MINUS_T), errs.get(d, {}))
        for d, row in res.tables.per_domain.items()
    }


def _per_type(res: Result) -> dict[str, Comparison]:
    if not res.tables:
        return {}
    out = {}
    errs = res.tables.cell_errors.per_mutation_type if res.tables.cell_errors else {}
    for mt, row in res.tables.per_mutation_type.items():
        e = errs.get(mt, {})
        keyed = {H: e.get(H), T: e.get("B+T_same_questions"), H_MINUS_T: e.get(H_MINUS_T)}
        out[mt] = _comparison(row.truthful, row, row.h_minus_t, keyed)
    return out


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return round(sum(vals) / len(vals), 6) if vals else None


def _empty() -> Comparison:
    """A comparison with no figures (mypy reads the constructor by the alias of ``h_minus_t``)."""
    return Comparison()  # type: ignore[call-arg]


def _average(rows: Sequence[Comparison]) -> Comparison:
    """The mean over models of every figure (no standard error: models are not independent draws)."""
    if not rows:
        return _empty()

    def side(get: Callable[[Comparison], dict[str, Estimate]]) -> dict[str, Estimate]:
        return {f: Estimate(value=_mean((get(r).get(f) or Estimate()).value for r in rows)) for f in FIGURES}

    return Comparison(
        T=side(lambda r: r.T),
        H=side(lambda r: r.H),
        h_minus_t=side(lambda r: r.h_minus_t),
        retention=Estimate(value=_mean(r.retention.value for r in rows)),
    )


def _block(table: int, rows: dict[str, Comparison], models: Sequence[ModelRef]) -> Block:
    """The table of ``rows``, averaged over its ranked rows only (no averages when none is ranked)."""
    ranked = [m for m in models if m.ranked and m.key in rows]
    averages = {"all": _average([rows[m.key] for m in ranked])} if ranked else {}
    for access in MODEL_ACCESS:
        group = [rows[m.key] for m in ranked if m.model_access == access]
        if group:
            averages[access] = _average(group)
    return Block(table=table, rows=rows, averages=averages, averaged=[m.key for m in ranked])


def _resolution(res: Result) -> ResolutionRow:
    r: Any = res.tables.resolution if res.tables else None
    if r is None or not r.judged:
        return ResolutionRow()
    assert res.tables is not None
    errs = res.tables.cell_errors.resolution if res.tables.cell_errors else {}
    return ResolutionRow(
        judged=r.judged,
        proportions={k: _est(r.proportions.get(k), errs.get(k)) for k in RESOLUTIONS},
        insightful=_est(getattr(r, f"{INSIGHTFUL}_rate", None), errs.get(INSIGHTFUL)),
    )


def _groups(res: Result, table: str) -> dict[str, dict[str, Estimate]]:
    """OL / BUF / BC of each group of a result's group table (``by_resolution``, ``by_insightful``)."""
    if not res.tables:
        return {}
    groups = getattr(res.tables, table, None) or {}
    errs = getattr(res.tables.cell_errors, table, None) or {} if res.tables.cell_errors else {}
    out = {}
    for g, cell in groups.items():
        if cell is None or not getattr(cell, "n", 0):
            continue
        out[g] = {f: _est(getattr(cell, f, None), (errs.get(g) or {}).get(f)) for f in GROUP_FIGURES}
    return out


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's r of paired values; None with fewer than 3 pairs or a constant series."""
    if len(xs) < 3:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    return round(sxy / math.sqrt(sxx * syy), 6) if sxx > 0 and syy > 0 else None


def _correlations(rows: Mapping[str, Comparison]) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    for cond, side in ((CONDITION_LABELS[T], "T"), (CONDITION_LABELS[H], "H")):
        pairs: dict[str, float | None] = {}
        for i, a in enumerate(CORRELATED):
            for b in CORRELATED[i + 1 :]:
                vals = [
                    (getattr(c, side)[a].value, getattr(c, side)[b].value)
                    for c in rows.values()
                    if a in getattr(c, side) and b in getattr(c, side)
                ]
                vals = [(x, y) for x, y in vals if x is not None and y is not None]
                pairs[f"{a}~{b}"] = pearson([x for x, _ in vals], [y for _, y in vals])
        out[cond] = pairs
    return out


def _refs(results: Sequence[Result], standing: Sequence[LeaderboardEntry] | None = None) -> list[ModelRef]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.model] = counts.get(r.model, 0) + 1
    known = {(e.model, e.run_id): e for e in standing or ()}
    out = []
    for r in results:
        entry = known.get((r.model, r.run_id or "")) or LeaderboardEntry.of(r)
        out.append(
            ModelRef(
                key=r.model if counts[r.model] == 1 else f"{r.model} ({r.run_id})",
                model=r.model,
                revision=r.revision,
                run_id=r.run_id or "",
                model_access=r.model_access,
                source_url=r.source_url,
                result_file=result_path(r),
                ranked=entry.ranked,
                tags=list(entry.tags),
            )
        )
    return out


def build_report(results: Sequence[Result], *, standing: Sequence[LeaderboardEntry] | None = None) -> CrossModelReport:
    """The cross-model views of ``results`` (in the given order; ``collect_results`` sorts by model, run id).
    Whether a result is ranked, and its tags, come from its leaderboard entry (``standing``, e.g. the page's rows;
    by default ``LeaderboardEntry.of``); averages and correlations are over the ranked results only."""
    refs = _refs(results, standing)
    overall = {m.key: _overall(r) for m, r in zip(refs, results, strict=True)}
    doms = {m.key: _per_domain(r) for m, r in zip(refs, results, strict=True)}
    types = {m.key: _per_type(r) for m, r in zip(refs, results, strict=True)}

    def blocks(per_model: dict[str, dict[str, Comparison]], numbers: dict[str, int]) -> dict[str, Block]:
        names = list(numbers) + sorted({g for v in per_model.values() for g in v} - set(numbers))
        out = {}
        for g in names:
            rows = {k: v[g] for k, v in per_model.items() if g in v}
            if rows:
                out[g] = _block(numbers.get(g, 0), rows, refs)
        return out

    per_domain, per_type = blocks(doms, DOMAIN_TABLES), blocks(types, TYPE_TABLES)
    columns = [*per_domain, *per_type]
    heat = {
        m.key: {c: (doms[m.key].get(c) or types[m.key].get(c) or _empty()).retention.value for c in columns}
        for m in refs
    }
    ranked = [m.key for m in refs if m.ranked]
    if ranked:
        heat[AVERAGE] = {c: _mean(heat[k][c] for k in ranked) for c in columns}
    return CrossModelReport(
        models=refs,
        table1=_block(1, overall, refs),
        table2={m.key: _resolution(r) for m, r in zip(refs, results, strict=True)},
        per_domain=per_domain,
        per_mutation_type=per_type,
        retention=Heatmap(columns=columns, rows=heat),
        trajectory_by_resolution={
            m.key: g for m, r in zip(refs, results, strict=True) if (g := _groups(r, "by_resolution"))
        },
        trajectory_by_insight={
            m.key: g for m, r in zip(refs, results, strict=True) if (g := _groups(r, INSIGHT_TABLE))
        },
        correlations=_correlations({k: overall[k] for k in ranked}),
    )


# ---- Markdown ----------------------------------------------------------------------------------------------------


def _md(text: Any) -> str:
    return md_text(text)


def tags_of(report: CrossModelReport) -> dict[str, list[str]]:
    """Row key -> the tags shown next to its name (only the keys that have some)."""
    return {m.key: m.tags for m in report.models if m.tags}


def tags_markdown(tags: Sequence[str]) -> str:
    """The tags shown next to a model name in a Markdown cell: `` `partial` `missing 12` `` ('' for none)."""
    return "".join(f" {md_code(t)}" for t in tags)


def _who_md(key: str, report: CrossModelReport) -> str:
    """A row's model cell: the escaped name and its tags."""
    return _md(key) + tags_markdown(tags_of(report).get(key, ()))


def averages_note(rows: Iterable[str], averaged: Sequence[str]) -> str:
    """The note under a table of ``rows`` (keys) whose averages are over ``averaged``: how many, and that the
    unranked rows are shown but not averaged."""
    n, skipped = len(averaged), [k for k in rows if k not in averaged]
    over = f"the {n} ranked result{'s' if n != 1 else ''}"
    if not skipped:
        return f"Averages over {over}."
    m = len(skipped)
    shown = (
        f"{m} unranked row{'s' if m != 1 else ''} (partial, unverified or weak sandbox: tagged next to the model) "
        f"{'are' if m != 1 else 'is'} shown but not averaged"
    )
    return f"No ranked result, so no averages; {shown}." if not n else f"Averages over {over}; {shown}."


def block_note(block: Block) -> str:
    """The note under a comparison table (``averages_note``)."""
    return averages_note(block.rows, block.averaged)


def retention_note(report: CrossModelReport) -> str:
    """The note under Figure 3's table: its Average row is over the ranked results."""
    rows = [k for k in report.retention.rows if k != AVERAGE]
    return averages_note(rows, [m.key for m in report.models if m.ranked and m.key in rows])


def correlations_note(report: CrossModelReport) -> str:
    """The note over the correlations: across the ranked results only."""
    n = sum(m.ranked for m in report.models)
    unranked = len(report.models) - n
    left = f"; the {unranked} unranked result{'s are' if unranked != 1 else ' is'} left out" if unranked else ""
    return f"Across the {n} ranked result{'s' if n != 1 else ''} (r needs at least 3){left}."


def comparison_columns() -> list[tuple[str, str, str]]:
    """(side, figure, header) of a comparison table: Acc T, Acc H, Acc H − T, Retention, then T/H of each
    trajectory metric."""
    t, h = CONDITION_LABELS[T], CONDITION_LABELS[H]
    acc = FIGURE_LABELS[ACCURACY]
    cols = [
        ("T", ACCURACY, f"{acc} ({t})"),
        ("H", ACCURACY, f"{acc} ({h})"),
        (H_MINUS_T, ACCURACY, label(ACCURACY_H_MINUS_T)),
        (RETENTION, ACCURACY, label(RETENTION)),
    ]
    for f in COMPARED:
        cols += [("T", f, f"{FIGURE_LABELS[f]} ({t})"), ("H", f, f"{FIGURE_LABELS[f]} ({h})")]
    return cols


def cell(comp: Comparison, side: str, figure: str) -> str:
    """A comparison's cell text (``0.512 ± 0.021``; differences signed)."""
    if side == RETENTION:
        return comp.retention.text()
    values = {"T": comp.T, "H": comp.H, H_MINUS_T: comp.h_minus_t}[side]
    return (values.get(figure) or Estimate()).text(signed=side == H_MINUS_T)


def _block_md(title: str, block: Block, report: CrossModelReport) -> list[str]:
    cols = comparison_columns()
    access = {m.key: m.model_access or "" for m in report.models}
    lines = [
        f"## {title}",
        "",
        "| model | access | " + " | ".join(h for _, _, h in cols) + " |",
        "|---|---|" + "---|" * len(cols),
    ]
    for key, comp in block.rows.items():
        lines.append(
            f"| {_who_md(key, report)} | {access.get(key, '')} | "
            + " | ".join(cell(comp, s, f) for s, f, _ in cols)
            + " |"
        )
    for name, comp in block.averages.items():
        who = AVERAGE if name == "all" else f"{AVERAGE} ({name})"
        lines.append(f"| **{who}** | | " + " | ".join(cell(comp, s, f) for s, f, _ in cols) + " |")
    return [*lines, "", block_note(block), ""]


def render_report_markdown(report: CrossModelReport, figures: Mapping[str, str] | None = None) -> str:
    """The report as Markdown; ``figures`` (figure key -> relative PNG path) are linked where written."""
    figures = figures or {}
    ranked = sum(m.ranked for m in report.models)
    out = [
        "# PHRBench cross-model report",
        "",
        f"{len(report.models)} result(s), {ranked} ranked. T = B+T (truthful premise), H = B+H (hallucinated "
        "premise). `value ± standard error` (paired bootstrap over base questions, from each result); averages are "
        "plain means over the ranked results (and the correlations are over them): a partial, unverified or "
        "weak-sandbox result is shown, tagged next to its name, but not averaged. Acc H − T is the paper's "
        "accuracy drop with its sign (a drop is negative); retention is Acc H / Acc T.",
        "",
    ]
    out += _block_md("Table 1: outcome and reasoning trajectory under T and H", report.table1, report)
    out += [
        "## Table 2: behavioural resolution proportions (judged B+H responses)",
        "",
        "| model | judged | " + " | ".join(_md(r) for r in RESOLUTIONS) + " | Insightful rate |",
        "|---|---|" + "---|" * (len(RESOLUTIONS) + 1),
    ]
    for key, row in report.table2.items():
        cells = [(row.proportions.get(r) or Estimate()).text() for r in RESOLUTIONS]
        out.append(f"| {_who_md(key, report)} | {row.judged} | " + " | ".join(cells) + f" | {row.insightful.text()} |")
    out.append("")
    for d, block in report.per_domain.items():
        out += _block_md(f"Table {block.table}: {_md(DOMAIN_NAMES.get(d, d))}", block, report)
    for mt, block in report.per_mutation_type.items():
        out += _block_md(f"Table {block.table}: {_md(mt)} (science domains only)", block, report)
    cols = report.retention.columns
    out += [
        "## Figure 3: accuracy retention H / T",
        "",
        "| model | " + " | ".join(map(_md, cols)) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for key, ratios in report.retention.rows.items():
        out.append(
            f"| {_who_md(key, report)} | "
            + " | ".join("" if ratios[c] is None else f"{ratios[c]:.{_DEC}f}" for c in cols)
            + " |"
        )
    out += [
        "",
        retention_note(report),
        "",
        "## Pearson correlations across models",
        "",
        correlations_note(report),
        "",
        "| condition | " + " | ".join(p for p in next(iter(report.correlations.values()), {})) + " |",
    ]
    out.append("|---|" + "---|" * len(next(iter(report.correlations.values()), {})))
    for cond, pairs in report.correlations.items():
        out.append(f"| {cond} | " + " | ".join("" if v is None else f"{v:.3f}" for v in pairs.values()) + " |")
    out.append("")
    for title, groups in (
        ("Figure 5: trajectory metrics by resolution", report.trajectory_by_resolution),
        ("Figure 5: insightful vs non-insightful trajectories", report.trajectory_by_insight),
    ):
        if not groups:
            continue
        out += [
            f"## {title}",
            "",
            "| model | group | " + " | ".join(FIGURE_LABELS[f] for f in GROUP_FIGURES) + " |",
            "|---|---|" + "---|" * len(GROUP_FIGURES),
        ]
        for key, gs in groups.items():
            for g, vals in gs.items():
                out.append(
                    f"| {_who_md(key, report)} | {_md(g)} | "
                    + " | ".join((vals.get(f) or Estimate()).text() for f in GROUP_FIGURES)
                    + " |"
                )
        out.append("")
    if figures:
        out += ["## Figures", ""]
        out += [f"![{FIGURE_CAPTIONS[k]}]({p})\n" for k, p in figures.items()]
    return "\n".join(out).rstrip("\n") + "\n"


# ---- figures ---------------------------------------------------------------------------------------------------


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    save_png(fig, buf, dpi=100, bbox_inches="tight")
    return buf.getvalue()


def _plt() -> ModuleType:
    """The figure maker (``subplots``): the toolkit's one deterministic setup, without pyplot."""
    from phr.core import figures

    return figures


def _no_data(plt: ModuleType, title: str) -> bytes:
    fig, ax = plt.subplots(figsize=(5, 1.6))
    ax.axis("off")
    ax.text(0.5, 0.5, f"{title}\n(not in these results)", ha="center", va="center")
    return _png(fig)


def _heatmap(plt: ModuleType, heat: Heatmap) -> bytes:
    rows = list(heat.rows)
    if not rows or not heat.columns:
        return _no_data(plt, "accuracy retention")
    import numpy as np

    data = np.array([[np.nan if heat.rows[r][c] is None else heat.rows[r][c] for c in heat.columns] for r in rows])
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(heat.columns), 1.0 + 0.45 * len(rows)))
    top = max(1.0, float(np.nanmax(data))) if np.isfinite(data).any() else 1.0
    im = ax.imshow(np.ma.masked_invalid(data), cmap="RdYlGn", vmin=0.0, vmax=top, aspect="auto")
    ax.set_xticks(range(len(heat.columns)), [c.replace(" ", "\n") for c in heat.columns], fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    for i in range(len(rows)):
        for j in range(len(heat.columns)):
            if not np.isnan(data[i, j]):
                ax.text(j, i, f"{data[i, j]:.2f}", ha="center", va="center", fontsize=7)
    fig.colorbar(im, ax=ax, label="retention H / T")
    ax.set_title("Accuracy retention H / T")
    return _png(fig)


def _bars(plt: ModuleType, keys: list[str], series: dict[str, list[Estimate]], title: str, ylabel: str) -> bytes:
    fig, ax = plt.subplots(figsize=(1.5 + 0.9 * len(keys) * max(1, len(series)) / 2, 3.2))
    width = 0.8 / max(1, len(series))
    for i, (name, ests) in enumerate(series.items()):
        xs = [k + (i - (len(series) - 1) / 2) * width for k in range(len(keys))]
        vals = [e.value if e.value is not None else 0.0 for e in ests]
        errs = [e.se or 0.0 for e in ests]
        ax.bar(xs, vals, width, yerr=errs, capsize=3, label=name)
    ax.set_xticks(range(len(keys)), keys, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if len(series) > 1:
        ax.legend(fontsize=7)
    return _png(fig)


def _insightful(plt: ModuleType, report: CrossModelReport) -> bytes:
    rows = {k: r for k, r in report.table2.items() if r.judged}
    if not rows:
        return _no_data(plt, "insightful rate")
    correction = RESOLUTIONS[0]
    return _bars(
        plt,
        list(rows),
        {
            "Insightful rate": [r.insightful for r in rows.values()],
            str(correction): [r.proportions.get(correction) or Estimate() for r in rows.values()],
        },
        "Insightful rate per model",
        "share of judged B+H responses",
    )


def _groups_figure(plt: ModuleType, groups: dict[str, dict[str, dict[str, Estimate]]], title: str) -> bytes:
    if not groups:
        return _no_data(plt, title)
    order = {g: i for i, g in enumerate(RESOLUTIONS)}
    names = sorted({g for gs in groups.values() for g in gs}, key=lambda g: (order.get(g, len(order)), g))
    fig, axes = plt.subplots(1, len(GROUP_FIGURES), figsize=(4 * len(GROUP_FIGURES), 3.2))
    width = 0.8 / len(names)
    keys = list(groups)
    for ax, f in zip(axes, GROUP_FIGURES, strict=True):
        for i, g in enumerate(names):
            ests = [groups[k].get(g, {}).get(f) or Estimate() for k in keys]
            xs = [k + (i - (len(names) - 1) / 2) * width for k in range(len(keys))]
            ax.bar(xs, [e.value or 0.0 for e in ests], width, yerr=[e.se or 0.0 for e in ests], capsize=3, label=g)
        ax.set_xticks(range(len(keys)), keys, rotation=30, ha="right", fontsize=8)
        ax.set_title(FIGURE_LABELS[f])
    axes[0].legend(fontsize=7)
    fig.suptitle(title, y=1.03)
    return _png(fig)


def render_figures(report: CrossModelReport) -> dict[str, bytes]:
    """The four figures as PNG bytes (figure key -> PNG); a figure without data says so."""
    plt = _plt()
    return {
        "figure3": _heatmap(plt, report.retention),
        "figure4": _insightful(plt, report),
        "figure5_resolution": _groups_figure(plt, report.trajectory_by_resolution, "trajectory by resolution"),
        "figure5_insightful": _groups_figure(plt, report.trajectory_by_insight, "insightful vs non-insightful"),
    }


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


# ---- writing -----------------------------------------------------------------------------------------------------


def write_report(results: Sequence[Result], out_dir: str | Path) -> dict[str, Path]:
    """Write ``report.md``, ``report.json`` and ``figures/*.png`` into ``out_dir`` (all or nothing: built in a
    temporary folder, then moved in); returns {"markdown", "json", <figure key>...} -> path."""
    report = build_report(results)
    pngs = render_figures(report)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rel = {k: f"figures/{FIGURE_FILES[k]}" for k in pngs}
    md = render_report_markdown(report, rel)
    payload = json.dumps({**report.as_json(), "figures": rel}, indent=2, ensure_ascii=False) + "\n"
    with atomic_dir(out / "figures") as tmp:
        for k, png in pngs.items():
            (Path(tmp) / FIGURE_FILES[k]).write_bytes(png)
    atomic_write(out / "report.json", payload.encode("utf-8"))
    atomic_write(out / "report.md", md.encode("utf-8"))
    return {"markdown": out / "report.md", "json": out / "report.json", **{k: out / p for k, p in rel.items()}}

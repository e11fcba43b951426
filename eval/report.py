"""Write a scored run: results.json (docs/evaluation.md), samples.jsonl, report.md and PNG plots.

Everything is written into a temporary folder and swapped in, so a failed scoring leaves the previous
output (or nothing), never half of it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from phr.bench.metrics import (
    ACCURACY,
    CONDITION_SUFFIX,
    DOMAIN_NAMES,
    FIGURES,
    INSIGHTFUL,
    OL_WORDS,
    RESOLUTIONS,
    TRAJECTORY,
    rate_of,
)
from phr.core.figures import save_png, subplots
from phr.core.fs import atomic_dir
from phr.core.text import md_code, md_text
from phr.eval.results import (
    H_MINUS_T,
    Counts,
    DatasetRef,
    Evidence,
    ModelAccess,
    ReportTables,
    Result,
    SamplesFile,
    Tables,
    estimate_text,
    read_result,
)
from phr.eval.scoring import SampleScore

RESULTS_FILE = "results.json"
SAMPLES_FILE = "samples.jsonl"
REPORT_FILE = "report.md"
PLOTS_DIR = "plots"


def result_json(
    *,
    model: str,
    revision: str,
    dataset: Mapping[str, Any],
    report: ReportTables | Mapping[str, Any],
    config: dict,
    run_id: str | None = None,
    date: str | None = None,
    source_url: str | None = None,
    submitted_by: str | None = None,
    notes: str | None = None,
    samples_sha256: str | None = None,
    model_access: ModelAccess | None = None,
) -> Result:
    """The ``Result`` (results.json, schema_version 2) of a scored run: identity, metrics with their standard
    errors, the full tables. ``dataset``: ``{"id", "revision"[, "files"]}``."""
    report = report if isinstance(report, ReportTables) else ReportTables.model_validate(report)
    return Result(
        model=model,
        revision=revision,
        run_id=run_id,
        dataset=DatasetRef(id=dataset["id"], revision=dataset["revision"]),
        metrics=report.metrics,
        standard_errors=report.standard_errors,
        bootstrap=report.bootstrap,
        date=date or _dt.date.today().isoformat(),
        source_url=source_url,
        submitted_by=submitted_by,
        notes=notes,
        model_access=model_access,
        dataset_files=dict(dataset.get("files") or {}),
        config=config,
        counts=report.counts,
        tables=report.as_tables(),
        samples_file=SamplesFile(path=SAMPLES_FILE, sha256=samples_sha256),
    )


def _as_result(result: Result | Mapping[str, Any]) -> Result:
    return result if isinstance(result, Result) else read_result(result)


def _n(cell: Any) -> int:
    """A table cell's sample count (cells are made by ``create_model``: their fields are not typed)."""
    return int(cell.n)


def _tables(res: Result) -> tuple[Tables, Counts]:
    """A result's tables and counts (every readable result has them)."""
    if res.tables is None or res.counts is None:
        raise ValueError(f"result {res.run_id or res.model!r} has no tables: it cannot be rendered")
    return res.tables, res.counts


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(md_text(estimate_text(c)) for c in r) + " |" for r in rows]
    return out + [""]


_NO_WORDS = tuple(f for f in FIGURES if f != OL_WORDS)


def _est(cell: object, errors: dict | None, figures: Sequence[str] = FIGURES) -> list[str]:
    """The figures of a cell as "value ± se" texts (the value alone without a standard error)."""
    errors = errors or {}
    return [estimate_text(getattr(cell, f), errors.get(f)) for f in figures]


def render_report(result: Result | Mapping[str, Any]) -> str:
    """A Markdown summary of one result (any readable schema_version); figures with their standard errors."""
    res = _as_result(result)
    t, counts = _tables(res)
    err = t.cell_errors
    e = (lambda part, *keys: _dig(getattr(err, part), keys)) if err else (lambda part, *keys: None)
    lines = [
        f"# PHRBench results: {md_text(res.model)}",
        "",
        f"Model revision {md_code(res.revision)}, dataset {md_code(res.dataset.id)} @ {md_code(res.dataset.revision)}, "
        f"run {md_code(res.run_id or '')}, {counts.samples} samples ({counts.missing} missing).",
        "",
    ]
    if res.bootstrap:
        lines += [
            f"Figures are shown as value ± standard error (bootstrap over base questions: "
            f"{res.bootstrap.resamples} resamples, seed {res.bootstrap.seed}).",
            "",
        ]
    # OL in words (beside OL in tokens) wherever the result has it; results scored before it render as they did
    figs = FIGURES if any(getattr(c, OL_WORDS) is not None for c in t.by_condition.values()) else _NO_WORDS
    lines += ["## By condition", ""]
    lines += _table(
        ["condition", "n", *figs],
        [[c, _n(row), *_est(row, e("by_condition", c), figs)] for c, row in t.by_condition.items()],
    )
    lines += ["## By domain (Tables 5-8)", ""]
    rows: list[list[Any]] = []
    for dom, r in t.per_domain.items():
        for c in (*CONDITION_SUFFIX, H_MINUS_T):
            if c in r:
                rows.append([DOMAIN_NAMES.get(dom, dom), c, *_est(r[c], e("per_domain", dom, c), figs)])
    lines += _table(["domain", "condition", *figs], rows)
    lines += ["## By mutation type, B+H (Tables 9-11)", ""]
    rows = []
    for m, r in t.per_mutation_type.items():
        diff = (
            estimate_text(r.h_minus_t.accuracy, (e("per_mutation_type", m, H_MINUS_T) or {}).get(ACCURACY))
            if r.h_minus_t
            else ""
        )
        rows.append([m, _n(r), *_est(r, e("per_mutation_type", m, "B+H"), figs), diff])
    lines += _table(["mutation type", "n", *figs, f"{ACCURACY} H-T"], rows)
    res_t: Any = t.resolution  # a model made by create_model (phr.eval.results): its fields are not typed
    lines += ["## Behavioural resolution, B+H (Table 2, Figure 4)", ""]
    shares = e("resolution") or {}
    insightful = rate_of(INSIGHTFUL)
    if res_t.judged:
        lines += _table(
            ["judged", *RESOLUTIONS, "insightful rate", "unjudged"],
            [
                [
                    res_t.judged,
                    *(estimate_text(res_t.proportions[r], shares.get(r)) for r in RESOLUTIONS),
                    estimate_text(getattr(res_t, insightful), shares.get(INSIGHTFUL)),
                    res_t.unjudged,
                ]
            ],
        )
        lines += ["### Trajectory metrics by resolution (Figure 5)", ""]
        lines += _table(
            ["resolution", "n", *figs],
            [[r, _n(row), *_est(row, e("by_resolution", r), figs)] for r, row in t.by_resolution.items()],
        )
    elif (res.config or {}).get("resolution_judge"):
        lines += [f"No judgement parsed ({res_t.unjudged} B+H responses unjudged).", ""]
    else:
        lines += ["Not judged (no judge given).", ""]
    return "\n".join(lines)


def _dig(data: Any, keys: Iterable[str]) -> Any:  # a value of nested JSON objects
    for k in keys:
        if not isinstance(data, dict) or k not in data:
            return None
        data = data[k]
    return data


def _bars(errors: list[float | None]) -> list[float] | None:
    """Error bars from standard errors (0 where one is missing); None when there is none at all."""
    return [x or 0.0 for x in errors] if any(x is not None for x in errors) else None


def _save(fig: Any, path: Path) -> Path:
    """Save a figure as PNG at ``path``."""
    fig.tight_layout()
    save_png(fig, path, dpi=110)
    return path


def _accuracy_plot(res: Result, t: Tables, conds: list[str], path: Path) -> Path:
    """Accuracy by domain, one bar per condition, with error bars."""
    err = t.cell_errors
    domains = list(t.per_domain)
    fig, ax = subplots(figsize=(1.6 + 1.4 * max(1, len(domains)), 3.4))
    width = 0.8 / max(1, len(conds))
    for j, c in enumerate(conds):
        vals = [(getattr(t.per_domain[d][c], ACCURACY) if c in t.per_domain[d] else None) or 0.0 for d in domains]
        errs = [_dig(err.per_domain, (d, c, ACCURACY)) if err else None for d in domains]
        ax.bar([i + j * width for i in range(len(domains))], vals, width, label=c, yerr=_bars(errs), capsize=2)
    ax.set_xticks([i + width * (len(conds) - 1) / 2 for i in range(len(domains))], domains)
    ax.set_ylim(0, 1)
    ax.set_ylabel(ACCURACY)
    ax.set_title(f"{res.model}: accuracy by domain and condition")
    ax.legend()
    return _save(fig, path)


def _trajectory_plot(
    groups: list[str], by: Mapping, errors: Mapping | None, color: str, title: str, path: Path, slant: bool = False
) -> Path:
    """One panel per trajectory metric: its value in each group (condition, resolution), with error bars;
    ``slant``: long group names are slanted."""
    fig, axes = subplots(1, len(TRAJECTORY), figsize=(12, 3))
    for ax, metric in zip(axes, TRAJECTORY):
        errs = [_dig(errors, (g, metric)) for g in groups]
        ax.bar(groups, [getattr(by[g], metric) or 0.0 for g in groups], color=color, yerr=_bars(errs), capsize=2)
        ax.set_title(metric)
        if slant:
            ax.tick_params(axis="x", labelrotation=20)
    fig.suptitle(title)
    return _save(fig, path)


def _resolution_plot(rt: Any, t: Tables, path: Path) -> Path:
    """The proportions of the resolution groups of hallucinated premises, with the insightful rate."""
    err = t.cell_errors
    fig, ax = subplots(figsize=(5, 3.2))
    props = [rt.proportions[r] or 0.0 for r in RESOLUTIONS]
    errs = [err.resolution.get(r) if err else None for r in RESOLUTIONS]
    ax.bar(RESOLUTIONS, props, color=["#55a868", "#c44e52", "#8172b2"], yerr=_bars(errs), capsize=3)
    ax.axhline(getattr(rt, rate_of(INSIGHTFUL)) or 0.0, ls="--", color="black", label="insightful rate")
    ax.set_ylim(0, 1)
    ax.set_title(f"resolution of hallucinated premises (n={rt.judged})")
    ax.legend()
    return _save(fig, path)


def write_plots(result: Result | Mapping[str, Any], folder: Path) -> list[Path]:
    """PNG figures: accuracy by condition and domain, resolution proportions, metrics by resolution; error bars
    of one standard error where the result has them."""
    res = _as_result(result)
    t, _ = _tables(res)
    err = t.cell_errors
    folder.mkdir(parents=True, exist_ok=True)
    conds = [c for c in CONDITION_SUFFIX if c in t.by_condition]
    out = [_accuracy_plot(res, t, conds, folder / "accuracy_by_domain.png")]
    by_condition = err.by_condition if err else None
    out.append(
        _trajectory_plot(
            conds,
            t.by_condition,
            by_condition,
            "#4c72b0",
            "trajectory metrics by condition",
            folder / "trajectory_by_condition.png",
        )
    )
    rt: Any = t.resolution  # made by create_model: its fields are not typed
    if rt.judged:
        out.append(_resolution_plot(rt, t, folder / "resolution.png"))
        title = "trajectory metrics by resolution group (B+H)"
        by_resolution = err.by_resolution if err else None
        out.append(
            _trajectory_plot(
                list(RESOLUTIONS),
                t.by_resolution,
                by_resolution,
                "#dd8452",
                title,
                folder / "trajectory_by_resolution.png",
                True,
            )
        )
    return out


def write_results(
    out: str | Path,
    result: Result | Mapping[str, Any],
    scores: Sequence[SampleScore],
    *,
    plots: bool = True,
    responses_sha256: str | None = None,
    dataset_fingerprint: str | None = None,
) -> Path:
    """Write results.json, samples.jsonl, report.md and plots/ into ``out`` (replacing an earlier scoring). With
    the responses' SHA-256 and the dataset's fingerprint the result records its ``evidence`` (samples.jsonl is it)."""
    out = Path(out)
    with atomic_dir(out) as tmp:
        body = "".join(json.dumps(s.as_dict(), ensure_ascii=False) + "\n" for s in scores).encode()
        (tmp / SAMPLES_FILE).write_bytes(body)
        digest = hashlib.sha256(body).hexdigest()
        update: dict[str, Any] = {"samples_file": SamplesFile(path=SAMPLES_FILE, sha256=digest)}
        if responses_sha256 is not None and dataset_fingerprint is not None:
            update["evidence"] = Evidence(
                samples_sha256=digest, responses_sha256=responses_sha256, dataset_fingerprint=dataset_fingerprint
            )
        result = _as_result(result).model_copy(update=update)
        text = json.dumps(result.as_json(), indent=2, ensure_ascii=False) + "\n"
        (tmp / RESULTS_FILE).write_text(text, encoding="utf-8")
        (tmp / REPORT_FILE).write_text(render_report(result), encoding="utf-8")
        if plots:
            write_plots(result, tmp / PLOTS_DIR)
    return out

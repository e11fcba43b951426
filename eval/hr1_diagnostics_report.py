"""The Hallucination-R1 diagnostics written out: PNG plots (Figures 2, 7, 8 and the logit-lens heat map), the
JSON report and a Markdown summary, into one folder written atomically.

Plots use matplotlib's object API with the Agg canvas (pyplot and the global backend are never touched).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from phr.core.figures import figure, save_png
from phr.core.fs import atomic_dir
from phr.eval.hr1_diagnostics import Diagnostics, Sample

RF_COLOUR, RP_COLOUR = "#D55E00", "#0072B2"  # Okabe-Ito: failing, preserving
SURFACE_PNG = "fig2_surface.png"
PROFILE_PNG = "fig7_profile.png"
EMBEDDING_PNG = "fig8_embedding.png"
LENS_PNG = "logit_lens.png"
REPORT_JSON = "diagnostics.json"
SUMMARY_MD = "summary.md"
DPI = 100


def _figure(width: float, height: float) -> Any:  # a matplotlib Figure
    return figure(width, height, dpi=DPI, layout="constrained")


def _save(fig: Any, path: Path) -> None:
    save_png(fig, path, dpi=DPI)


def _groups(diag: Diagnostics, value: Callable[[Sample], float]) -> dict[str, list[float]]:
    return {g: [value(s) for s in diag.samples if s.label == g] for g in ("RF", "RP")}


def _hist(ax: Any, groups: dict[str, list[float]], xlabel: str) -> None:  # ax: a matplotlib Axes
    values = [v for vs in groups.values() for v in vs]
    if not values:
        ax.text(0.5, 0.5, "no samples", ha="center", transform=ax.transAxes)
        return
    lo, hi = min(values), max(values)
    bins = 20 if hi > lo else 1
    for (label, vs), colour in zip(groups.items(), (RF_COLOUR, RP_COLOUR)):
        name = "Failing (RF)" if label == "RF" else "Preserving (RP)"
        ax.hist(vs, bins=bins, range=(lo, hi if hi > lo else lo + 1), alpha=0.6, color=colour, label=name, density=True)
    ax.set_xlabel(xlabel)
    ax.legend(fontsize=8)


def surface_plot(diag: Diagnostics, path: Path) -> None:
    """Figure 2: (a) original vs paraphrased word count, (b) ΔWC, (c) Δ dependency-tree depth; RF vs RP."""
    fig = _figure(12, 3.6)
    a, b, c = fig.subplots(1, 3)
    for label, colour in (("RF", RF_COLOUR), ("RP", RP_COLOUR)):
        xs = [s.orig.word_count for s in diag.samples if s.label == label and s.orig]
        ys = [s.para.word_count for s in diag.samples if s.label == label and s.para]
        a.scatter(xs, ys, s=12, alpha=0.6, color=colour, label=label)
    a.set_xlabel("original words")
    a.set_ylabel("paraphrase words")
    a.set_title("(a) question length")
    a.legend(fontsize=8)
    _hist(b, _groups(diag, lambda s: s.delta.get("word_count", 0.0)), "ΔWord Count")
    b.set_title("(b) ΔWord Count")
    _hist(c, _groups(diag, lambda s: s.delta.get("dep_depth", 0.0)), "ΔDependency Tree Depth")
    c.set_title("(c) ΔDependency Tree Depth")
    _save(fig, path)


def profile_plot(diag: Diagnostics, path: Path) -> None:
    """Figure 7: mean z-score of each feature's Δ, RF vs RP (Eq. 16)."""
    fig = _figure(7, 3.6)
    ax = fig.subplots()
    xs = range(len(diag.features))
    width = 0.38
    ax.bar([x - width / 2 for x in xs], [f.z_rf or 0.0 for f in diag.features], width, color=RF_COLOUR, label="RF")
    ax.bar([x + width / 2 for x in xs], [f.z_rp or 0.0 for f in diag.features], width, color=RP_COLOUR, label="RP")
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(list(xs), [f.feature for f in diag.features], rotation=20)
    ax.set_ylabel("mean z of Δfeature")
    ax.set_title("Normalised feature profile")
    ax.legend()
    _save(fig, path)


def embedding_plot(diag: Diagnostics, path: Path) -> None:
    """Figure 8: (a) d_Q vs d_QA scatter, (b) Δ = d_QA - d_Q histogram; RF vs RP."""
    fig = _figure(10, 4)
    a, b = fig.subplots(1, 2)
    for label, colour in (("RF", RF_COLOUR), ("RP", RP_COLOUR)):
        group = [s for s in diag.samples if s.label == label and s.d_q is not None]
        a.scatter([s.d_q for s in group], [s.d_qa for s in group], s=12, alpha=0.6, color=colour, label=label)
    a.set_xlabel("d_Q")
    a.set_ylabel("d_QA")
    a.set_title(f"(a) embedding distances, layer {diag.layer}")
    a.legend()
    _hist(b, _groups(diag, lambda s: s.drift or 0.0), "Δ = d_QA − d_Q")
    b.axvline(0, color="black", lw=0.8)
    b.set_title("(b) Δ")
    _save(fig, path)


def lens_plot(diag: Diagnostics, path: Path) -> None:
    """Heat map of Δlogp per layer (Eq. 18): a row per case and question (original, paraphrase); red = the
    gold answer's first token preferred, blue = the wrong one's."""
    rows, names = [], []
    for c in diag.lens:
        for which, values in (("orig", c.original), ("para", c.paraphrase)):
            rows.append(values)
            names.append(f"{c.question_id[-24:]} k={c.k}: {c.gold[:12]} vs {c.error[:12]} ({which})")
    fig = _figure(max(6, 0.25 * (diag.num_layers + 1) + 3), 1 + 0.35 * max(len(rows), 1))
    ax = fig.subplots()
    if not rows:
        ax.text(0.5, 0.5, "no RF case", ha="center", transform=ax.transAxes)
        _save(fig, path)
        return
    bound = max(abs(v) for r in rows for v in r) or 1.0
    im = ax.imshow(rows, aspect="auto", cmap="RdBu_r", vmin=-bound, vmax=bound, interpolation="nearest")
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_title("Logit lens: log p(gold) − log p(error)")
    fig.colorbar(im, ax=ax)
    _save(fig, path)


def _num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def markdown(diag: Diagnostics) -> str:
    """The Markdown summary: counts, the feature profile table, the embedding table, the logit-lens cases."""
    s = diag.settings
    lines = [
        "# Hallucination-R1 diagnostics",
        "",
        f"Model `{diag.model}`, layer {diag.layer} of {diag.num_layers} (hidden_states index, 0 = embeddings), "
        f"embeddings {'L2-normalised' if s['normalize'] == 'l2' else 'raw'}, final norm in the logit lens: "
        f"{'on' if s['final_norm'] else 'off'}.",
        "",
        f"{diag.questions} questions, {diag.originally_correct} originally correct; consistent paraphrases: "
        f"{diag.counts.get('RF', 0)} RF (answered wrong), {diag.counts.get('RP', 0)} RP (answered correctly), "
        f"{diag.skipped_not_graded} without a correct / wrong grade (left out).",
        "",
        "## Surface profile (Eq. 11-16)",
        "",
        "| feature | μ | σ (population) | mean Δ RF | mean Δ RP | z̄ RF | z̄ RP |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in diag.features:
        lines.append(
            f"| {f.feature} | {_num(f.mu)} | {_num(f.sigma)} | {_num(f.mean_delta_rf)} | {_num(f.mean_delta_rp)} "
            f"| {_num(f.z_rf)} | {_num(f.z_rp)} |"
        )
    lines += ["", "## Embedding drift (Eq. 17)", "", "| group | n | mean d_Q | mean d_QA | mean Δ | share Δ > 0 |"]
    lines.append("|---|---|---|---|---|---|")
    for e in diag.embedding:
        lines.append(
            f"| {e.label} | {e.n} | {_num(e.mean_d_q)} | {_num(e.mean_d_qa)} | {_num(e.mean_drift)} "
            f"| {_num(e.share_drift_positive)} |"
        )
    lines += ["", "## Logit lens (Eq. 18)", ""]
    for c in diag.lens:
        lines.append(
            f"- `{c.question_id}` k={c.k}: gold {c.gold!r} vs error {c.error!r}; last layer Δlogp "
            f"original {_num(c.original[-1])}, paraphrase {_num(c.paraphrase[-1])}"
        )
    if not diag.lens:
        lines.append("No RF case.")
    lines += ["", f"![Figure 2]({SURFACE_PNG})", f"![Figure 7]({PROFILE_PNG})", f"![Figure 8]({EMBEDDING_PNG})"]
    lines.append(f"![logit lens]({LENS_PNG})")
    return "\n".join(lines) + "\n"


def write_outputs(diag: Diagnostics, out: str | Path, overwrite: bool = False) -> Path:
    """Write the four PNGs, ``diagnostics.json`` and ``summary.md`` into ``out`` (atomically)."""
    out = Path(out)
    with atomic_dir(out, overwrite=overwrite) as tmp:
        tmp = Path(tmp)
        surface_plot(diag, tmp / SURFACE_PNG)
        profile_plot(diag, tmp / PROFILE_PNG)
        embedding_plot(diag, tmp / EMBEDDING_PNG)
        lens_plot(diag, tmp / LENS_PNG)
        (tmp / REPORT_JSON).write_text(diag.model_dump_json(indent=2) + "\n", encoding="utf-8")
        (tmp / SUMMARY_MD).write_text(markdown(diag), encoding="utf-8")
    return out

"""Figures for the PHRBench dataset card, drawn from the built rows as deterministic PNGs.

``write_figures(folder, rows_by_config)`` writes three PNGs under ``<folder>/figures/`` and returns their paths
relative to the folder, for the card to embed as ``![alt](figures/x.png)`` (``CAPTIONS`` has an alt text per file):

- ``figures/counts_domain_mutation.png``: B+H instances per domain and mutation type (grouped bars);
- ``figures/subtypes_per_domain.png``: base questions per reasoning subtype, grouped by domain (horizontal bars);
- ``figures/premise_length.png``: premise length in words, truthful (B+T) vs hallucinated (B+H) (histograms).

Byte-stable output through the toolkit's one figure setup (``phr.core.figures``: object API on an Agg canvas,
the fixed ``style()``, PNG metadata without ``Software``), fixed figure size and dpi, so two runs on the same
rows give identical files.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from statistics import median
from typing import Any

from phr.bench.conditions import CONFIGS
from phr.bench.records import Domain, MutationType
from phr.core.figures import figure, save_png, style

FIGURES_DIR = "figures"
COUNTS_PNG = "figures/counts_domain_mutation.png"
SUBTYPES_PNG = "figures/subtypes_per_domain.png"
PREMISE_PNG = "figures/premise_length.png"
CAPTIONS = {
    COUNTS_PNG: "B+H instances per domain and mutation type",
    SUBTYPES_PNG: "Base questions per reasoning subtype, by domain",
    PREMISE_PNG: "Premise length in words, truthful (B+T) vs hallucinated (B+H)",
}
DOMAINS = tuple(d.value for d in Domain)
MUTATION_TYPES = tuple(m.value for m in MutationType)
# colour-blind-safe (Okabe-Ito)
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
DPI = 100


def _figure(width: float, height: float) -> Any:  # a matplotlib Figure
    return figure(width, height, dpi=DPI, layout="constrained")


def _save(fig: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    save_png(fig, path, dpi=DPI)


def _ordered(values: Iterable[Any], canonical: Sequence[str]) -> list[str]:
    """Canonical values first (in their order), then any others sorted."""
    seen = set(values)
    return [v for v in canonical if v in seen] + sorted(seen - set(canonical))


def counts_by_domain_mutation(rows: list[dict], path: Path) -> None:
    """(a) Grouped bars: B+H rows per domain (x) and mutation type (bars)."""
    counts = Counter((r.get("domain"), r.get("mutation_type")) for r in rows)
    domains = _ordered([d for d, _ in counts], DOMAINS) or list(DOMAINS)
    types = _ordered([t for _, t in counts if t is not None], MUTATION_TYPES) or list(MUTATION_TYPES)
    fig = _figure(7.5, 4.2)
    ax = fig.add_subplot()
    width = 0.8 / len(types)
    for k, t in enumerate(types):
        xs = [i - 0.4 + width * (k + 0.5) for i in range(len(domains))]
        ys = [counts[(d, t)] for d in domains]
        bars = ax.bar(xs, ys, width=width * 0.95, label=t, color=PALETTE[k % len(PALETTE)])
        ax.bar_label(bars, labels=[str(y) if y else "" for y in ys], padding=2, fontsize=8)
    ax.set_xticks(range(len(domains)), domains)
    ax.set_ylabel("B+H instances")
    ax.set_title("Hallucinated instances by domain and mutation type")
    ax.set_ylim(0, max([1, *counts.values()]) * 1.18)
    ax.legend(frameon=False, fontsize=8, loc="upper left", ncols=min(3, len(types)))
    _save(fig, path)


def subtypes_per_domain(rows: list[dict], path: Path) -> None:
    """(b) Horizontal bars: base questions per (domain, subtype), grouped and coloured by domain."""
    counts = Counter((r.get("domain"), r.get("subtype")) for r in rows)
    domains = _ordered([d for d, _ in counts], DOMAINS)
    items = [(d, s, counts[(d, s)]) for d in domains for s in sorted({s for dd, s in counts if dd == d}, key=str)]
    fig = _figure(7.5, max(2.5, 0.32 * len(items) + 1.3))
    ax = fig.add_subplot()
    colour = {d: PALETTE[i % len(PALETTE)] for i, d in enumerate(domains)}
    ys = list(range(len(items)))[::-1]
    bars = ax.barh(ys, [n for _, _, n in items], color=[colour[d] for d, _, _ in items], height=0.7)
    ax.bar_label(bars, padding=2, fontsize=8)
    ax.set_yticks(ys, [str(s) for _, s, _ in items], fontsize=8)
    ax.set_xlabel("questions (B)")
    ax.set_title("Reasoning subtypes per domain")
    ax.set_xlim(0, max([1, *(n for _, _, n in items)]) * 1.15)
    from matplotlib.patches import Patch

    ax.legend(
        handles=[Patch(color=colour[d], label=str(d)) for d in domains],
        frameon=False,
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        title="domain",
        title_fontsize=8,
    )
    _save(fig, path)


def premise_words(rows: list[dict]) -> list[int]:
    return [len(str(r["premise"]).split()) for r in rows if r.get("premise")]


def premise_length(truthful: list[dict], hallucinated: list[dict], path: Path) -> None:
    """(c) Histograms of premise length in words, B+T vs B+H side by side (share of each, shared bins)."""
    t, h = premise_words(truthful), premise_words(hallucinated)
    lo, hi = min([*t, *h], default=0), max([1, *t, *h])
    step = max(1, -(-(hi - lo + 1) // 15))  # at most ~15 bins
    bins = list(range(lo, hi + step + 1, step))
    fig = _figure(7.5, 4.0)
    ax = fig.add_subplot()
    series = [
        (d, f"{label}: n={len(d)}, median {median(d):g} words", c)
        for d, label, c in ((t, "truthful (B+T)", PALETTE[2]), (h, "hallucinated (B+H)", PALETTE[5]))
        if d
    ]
    if series:
        ax.hist(
            [d for d, _, _ in series],
            bins=bins,
            weights=[[1 / len(d)] * len(d) for d, _, _ in series],
            color=[c for _, _, c in series],
            label=[lab for _, lab, _ in series],
            rwidth=0.9,
        )
        ax.legend(frameon=False, fontsize=8, loc="upper left")
        ax.set_ylim(0, ax.get_ylim()[1] * 1.2)
    ax.set_xlabel("premise length (words)")
    ax.set_ylabel("share of premises")
    ax.set_title("Premise length: truthful vs hallucinated")
    _save(fig, path)


def write_figures(folder: Path, rows_by_config: dict[str, list[dict]]) -> list[str]:
    """Write the card's figures under ``<folder>/figures/``; return their folder-relative paths."""
    folder = Path(folder)
    base, truthful, hall = (rows_by_config.get(name, []) for name in CONFIGS)
    with style():
        counts_by_domain_mutation(hall, folder / COUNTS_PNG)
        subtypes_per_domain(base, folder / SUBTYPES_PNG)
        premise_length(truthful, hall, folder / PREMISE_PNG)
    return [COUNTS_PNG, SUBTYPES_PNG, PREMISE_PNG]


def markdown(paths: list[str]) -> str:
    """``![caption](path)`` lines for the card."""
    return "\n\n".join(f"![{CAPTIONS.get(p, Path(p).stem)}]({p})" for p in paths)

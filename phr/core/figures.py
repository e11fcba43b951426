"""One setup for every PNG figure the toolkit writes (cards, reports, diagnostics, training curves).

Deterministic and side-effect free: matplotlib's object API on an Agg canvas (pyplot and the global backend are
never touched, so a notebook's backend stays as it is and nothing needs closing), PNG metadata without the
``Software`` entry (it names the matplotlib version), and ``style()`` for a fixed look independent of the user's
``matplotlibrc``. Two runs on the same data write identical bytes.

    with style():
        fig, ax = subplots(figsize=(5, 3))
        ax.bar(...)
        save_png(fig, path, dpi=100)
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, Any, Literal

Layout = Literal["constrained", "compressed", "tight"]

PNG_METADATA = {"Software": None}  # matplotlib writes its version here unless told not to
DPI = 100
#: the fixed look ``style()`` applies on top of matplotlib's defaults (the font is matplotlib's bundled one)
RC = {
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 12,
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "savefig.bbox": None,
    "path.simplify": True,
    "text.hinting": "default",
    "svg.hashsalt": "phrbench",
}


def style(rc: dict[str, Any] | None = None) -> AbstractContextManager:
    """A context with matplotlib's default rcParams plus ``RC`` (and ``rc``), whatever the user configured."""
    import matplotlib

    params: dict[Any, Any] = dict(matplotlib.rcParamsDefault)  # rcParams keys (matplotlib checks them)
    params.pop("backend", None)
    params.update(RC if rc is None else {**RC, **rc})
    return matplotlib.rc_context(params)


def figure(width: float, height: float, *, dpi: float | None = None, layout: Layout | None = None) -> Any:
    """A ``Figure`` of ``width`` x ``height`` inches on its own Agg canvas (no pyplot)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=dpi, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def subplots(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float], **kw: Any) -> tuple[Any, Any]:
    """``plt.subplots`` without pyplot: (figure, axes) with the same ``squeeze``/``sharex``/... keywords."""
    fig = figure(*figsize)
    return fig, fig.subplots(nrows, ncols, **kw)


def save_png(fig: Any, target: str | Path | IO[bytes], *, dpi: float | str = "figure", **kw: Any) -> None:
    """Write ``fig`` as a PNG without the ``Software`` metadata (``kw``: savefig's, e.g. ``bbox_inches``)."""
    fig.savefig(target, format="png", dpi=dpi, metadata=PNG_METADATA, **kw)

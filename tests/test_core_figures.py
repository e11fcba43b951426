"""One deterministic-PNG figure setup (phr.core.figures), used by every module that draws."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

from phr.core.figures import figure, save_png, style, subplots

REPO = Path(__file__).resolve().parents[1]
DRAWING_FOLDERS = ("phr", "eval", "builders", "training", "validation", "cards")


def _draw() -> bytes:
    with style():
        fig, (a, b) = subplots(1, 2, figsize=(4, 2))
        a.bar(["x", "y"], [1, 2])
        b.plot([0, 1, 2], [2, 0, 1])
        a.set_title("bars")
    buf = io.BytesIO()
    save_png(fig, buf, dpi=50)
    return buf.getvalue()


def test_same_figure_twice_gives_the_same_bytes_without_the_software_entry():
    one, two = _draw(), _draw()
    assert one == two and one[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"Software" not in one and b"matplotlib" not in one
    fig = figure(2, 1, dpi=40)
    buf = io.BytesIO()
    save_png(fig, buf)  # dpi "figure": the figure's own
    assert buf.getvalue()[16:24] == (80).to_bytes(4, "big") + (40).to_bytes(4, "big")  # IHDR width, height


def test_drawing_leaves_pyplot_and_the_backend_alone():
    code = (
        "import sys, matplotlib; matplotlib.use('svg'); from phr.core.figures import subplots, save_png; import io;"
        "fig, ax = subplots(figsize=(1, 1)); ax.plot([1]); save_png(fig, io.BytesIO());"
        "print(matplotlib.get_backend(), 'matplotlib.pyplot' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["svg", "False"]


def test_no_module_sets_up_figures_on_its_own():
    """savefig, matplotlib.use and pyplot live only in phr/core/figures.py (six modules had their own setup)."""
    own = re.compile(
        r"\.savefig\(|matplotlib\.use\(|import matplotlib\.pyplot|metadata=\{\s*[\"'](Software|Title|Creator)"
    )  # PNG metadata, not a batch request's
    found = [
        f"{p.relative_to(REPO)}:{i}"
        for folder in DRAWING_FOLDERS
        for p in sorted((REPO / folder).rglob("*.py"))
        if p.name != "figures.py" or p.parent.name != "core"
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if own.search(line)
    ]
    assert found == []


def test_training_curves_are_byte_stable_now(tmp_path):
    """training/checkpoint.py drew with pyplot and kept matplotlib's Software entry; now through the one setup."""
    from phr.training.checkpoint import CURVES_PNG, write_curves

    history = [{"step": s, "loss": 1.0 / s, "reward": s / 10} for s in range(1, 6)]
    pngs = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        write_curves(tmp_path / name, history)
        pngs.append((tmp_path / name / CURVES_PNG).read_bytes())
    assert pngs[0] == pngs[1] and b"Software" not in pngs[0]

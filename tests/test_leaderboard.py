"""The leaderboard renderer (phr.leaderboard.page): parquet, Markdown, static HTML, and the HTML's sorting in a
real headless chromium (skipped when chromium is absent: scripts/install-browser.sh)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from phr.eval.results import ResultsError, normalize
from phr.leaderboard.page import render_html, render_markdown, write_leaderboard
from phr.leaderboard.repo import collect_results, result_path
from tests.support.browser import Table, chromium, dump_dom

HOSTILE = "<script>alert(1)</script>"


def rec(model: str, b: float, bt: float, bh: float, *, run_id: str | None = None, **extra) -> dict:
    metrics = {
        "accuracy_b": b,
        "accuracy_bt": bt,
        "accuracy_bh": bh,
        **{k: extra.pop(k) for k in ("OL", "UI", "BUF", "BC") if k in extra},
    }
    data = {
        "model": model,
        "revision": extra.pop("revision", "main"),
        "dataset": {"id": "ORG/phrbench", "revision": "v0.1.0"},
        "metrics": metrics,
        **extra,
    }
    if run_id:
        data["run_id"] = run_id
    return normalize(data)


@pytest.fixture
def records() -> list[dict]:
    return [
        rec(
            "org/alpha",
            0.60,
            0.70,
            0.30,
            OL=0.2,
            UI=0.1,
            BUF=0.3,
            BC=0.05,
            date="2025-06-01",
            source_url="https://example.org/alpha?a=1&b=2",
        ),
        rec("Org/Beta", 0.80, 0.85, 0.50, date="2025-05-01"),
        rec("org/gamma|pipe", 0.40, 0.45, 0.40, OL=0.5, revision="rev|1"),
        rec(HOSTILE, 0.70, 0.72, 0.10, OL=0.1, source_url="javascript:alert(1)"),
    ]


# ---- a small DOM reader (stdlib html.parser) ---------------------------------------------------------------

# ---- unit tests --------------------------------------------------------------------------------------------


def test_markdown_order_deltas_and_escaping(records):
    md = render_markdown(records, title="My board")
    lines = md.splitlines()
    assert lines[0] == "# My board"
    table = [ln for ln in lines if ln.startswith("| ")]
    # readable column names: the paper's T and H first, H - T and retention beside them
    assert table[0].startswith("| # | Model | Revision | Acc (T) | Acc (H) | Acc H − T | Retention H / T | Acc (B) |")
    assert table[0].endswith("| Insightful rate | Date | Coverage | Result |")
    body = table[1:]
    # best accuracy_bh first: Beta .50, gamma .40, alpha .30, hostile .10
    assert [row.split(" | ")[0] for row in body] == ["| 1", "| 2", "| 3", "| 4"]
    assert "Org/Beta" in body[0] and "gamma" in body[1] and "alpha" in body[2]
    # Beta: T .85, H .50 -> H - T -0.350, retention .50/.85; then B, T - B, H - B
    assert "| 0.850 | 0.500 | -0.350 | 0.588 | 0.800 | +0.050 | -0.300 |" in body[0]
    # '|' inside cells is escaped: every row still has 21 columns (Coverage added)
    for row in body:
        assert len([c for c in row.replace("\\|", "").split("|")[1:-1]]) == 21, row
    assert "org/gamma\\|pipe" in body[1] and "rev\\|1" in body[1]
    assert "[org/alpha](https://example.org/alpha?a=1&b=2)" in body[2]
    assert body[2].endswith(f"| [json](results/org--alpha/{records[0]['run_id']}.json) |")
    assert "not the paper's accuracy drop" in md
    assert "javascript:" not in md and "<script>" not in md
    assert lines[-1] == "4 submissions; datasets: ORG/phrbench (v0.1.0)"


def test_none_trajectory_metrics_render_empty(records):
    md_row = next(ln for ln in render_markdown(records).splitlines() if "Org/Beta" in ln)
    assert "| 0.850 | 0.500 | -0.350 | 0.588 | 0.800 | +0.050 | -0.300 |  |  |  |  |  |  |  |  | 2025-05-01 |" in md_row
    t = Table(render_html(records))
    assert t.column("OL") == ["", "0.5", "0.2", "0.1"]
    assert t.column("BC") == ["", "", "0.05", ""]
    assert t.column("date") == ["2025-05-01", "", "2025-06-01", ""]


def test_html_escapes_and_links(records):
    page = render_html(records, title="<b>title</b>")
    assert HOSTILE not in page and "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>title</b>" not in page and "&lt;b&gt;title&lt;/b&gt;" in page
    t = Table(page)
    model_links = [u for u in t.links if not u.startswith("results/")]
    assert model_links == ["https://example.org/alpha?a=1&b=2"]  # the javascript: source_url is not linked
    assert len([u for u in t.links if u.startswith("results/")]) == 4  # every model's result JSON
    assert 'href="https://example.org/alpha?a=1&amp;b=2"' in page
    assert "javascript:alert" not in page
    # self-contained: no external resources; the figures are PNG data URIs
    for needle in ("<link", "@import", "url("):
        assert needle not in page
    assert len(t.images) == 4 and all(src.startswith("data:image/png;base64,") for src in t.images)
    assert page.count(" src=") == 4
    assert t.column("model") == ["Org/Beta", "org/gamma|pipe", "org/alpha", HOSTILE]
    assert t.column("rank") == ["1", "2", "3", "4"]
    assert t.sorted_head() == {"accuracy_bh": "descending"}
    assert "4 submissions; datasets: ORG/phrbench (v0.1.0)" in page


def test_render_is_deterministic(records):
    assert render_html(records) == render_html(list(reversed(records)))
    assert render_markdown(records) == render_markdown(list(reversed(records)))


def _write(path: Path, r: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(r), encoding="utf-8")
    return path


def test_collect_results_folder_file_and_duplicates(tmp_path, records):
    repo = tmp_path / "repo"
    for r in records:
        _write(repo / result_path(r), r)
    (repo / "eval.yaml").write_text("tasks: []\n")
    _write(repo / "manifest.json", {"not": "a result"})  # outside results/: ignored
    got = collect_results([repo])
    assert sorted(r["model"] for r in got) == sorted(r["model"] for r in records)
    # the same file again (directly and via a plain folder) collapses
    loose = _write(tmp_path / "loose" / "a.json", records[0])
    _write(tmp_path / "loose" / ".hidden" / "x.json", {"junk": 1})
    assert len(collect_results([repo, loose, tmp_path / "loose"])) == len(records)
    # same (model, run_id), other content: refused, both files named
    clash = dict(records[0], metrics={**records[0]["metrics"], "accuracy_b": 0.99})
    other = _write(tmp_path / "other.json", clash)
    with pytest.raises(ResultsError) as e:
        collect_results([repo, other])
    msg = str(e.value)
    assert str(repo / result_path(records[0])) in msg and str(other) in msg and records[0]["run_id"] in msg
    with pytest.raises(ResultsError, match="manifest.json is not a PHRBench result: no 'benchmark' and no 'metrics'"):
        collect_results([tmp_path / "repo" / "manifest.json"])
    with pytest.raises(ResultsError, match="no such"):
        collect_results([tmp_path / "missing"])


def test_write_leaderboard(tmp_path, records):
    out = tmp_path / "site"
    paths = write_leaderboard(records, out)
    assert set(paths) == {"parquet", "markdown", "html"}
    names = ["leaderboard.html", "leaderboard.md", "leaderboard.parquet", "results"]
    assert sorted(p.name for p in out.iterdir()) == names
    # every result JSON the page links to is next to it
    linked = [u for u in Table(paths["html"].read_text(encoding="utf-8")).links if u.startswith("results/")]
    assert sorted(linked) == sorted(result_path(r) for r in records)
    assert all(json.loads((out / u).read_text())["model"] for u in linked)
    rows = pq.read_table(paths["parquet"]).to_pylist()
    assert [r["model"] for r in rows] == ["Org/Beta", "org/gamma|pipe", "org/alpha", HOSTILE]
    assert rows[0]["delta_bh"] == pytest.approx(-0.3) and rows[0]["OL"] is None
    assert rows[2]["source_url"] == "https://example.org/alpha?a=1&b=2"
    assert paths["html"].read_text(encoding="utf-8") == render_html(records)
    assert paths["markdown"].read_text(encoding="utf-8") == render_markdown(records)
    first = {k: p.read_bytes() for k, p in paths.items()}
    write_leaderboard(list(reversed(records)), out)  # overwrite in place: byte-identical
    assert {k: p.read_bytes() for k, p in paths.items()} == first
    assert sorted(p.name for p in out.iterdir()) == names


# ---- a real headless browser -------------------------------------------------------------------------------


def test_html_sorting_in_headless_chromium(tmp_path, records):
    exe = chromium()
    page = tmp_path / "leaderboard.html"
    page.write_text(render_html(records), encoding="utf-8")
    start = time.monotonic()

    default = dump_dom(exe, page, "", tmp_path)
    assert default.column("model") == ["Org/Beta", "org/gamma|pipe", "org/alpha", HOSTILE]
    assert default.sorted_head() == {"accuracy_bh": "descending"}

    t = dump_dom(exe, page, "#sort=accuracy_b&dir=asc", tmp_path)
    vals = [float(v) for v in t.column("accuracy_b")]
    assert vals == sorted(vals) == [0.4, 0.6, 0.7, 0.8]
    assert t.sorted_head() == {"accuracy_b": "ascending"}
    assert t.column("rank") == ["2", "3", "4", "1"]  # rank stays the leaderboard rank

    t = dump_dom(exe, page, "#sort=model", tmp_path)  # text: case-insensitive, first-click direction asc
    assert t.column("model") == sorted(default.column("model"), key=str.lower)
    assert t.sorted_head() == {"model": "ascending"}

    for direction in ("asc", "desc"):  # empty cells last in both directions
        t = dump_dom(exe, page, f"#sort=OL&dir={direction}", tmp_path)
        ol = t.column("OL")
        assert ol[-1] == "" and [float(v) for v in ol[:-1]] == sorted([0.1, 0.2, 0.5], reverse=direction == "desc")

    # clicks: an injected script clicks the accuracy_b header twice (first: desc, then toggled to asc)
    clicked = tmp_path / "clicked.html"
    clicks = (
        "<script>var b = document.querySelector('th[data-key=\"accuracy_b\"] button');"
        "b.click(); document.body.setAttribute('data-first', b.parentNode.getAttribute('aria-sort') + ' ' + "
        "document.querySelector('tbody td[data-value]').getAttribute('data-value')); b.click();</script>"
    )
    clicked.write_text(render_html(records).replace("</body>", clicks + "\n</body>"), encoding="utf-8")
    t = dump_dom(exe, clicked, "", tmp_path)
    assert t.body.get("data-first") == "descending 1"  # after the first click: Beta (0.8, rank 1) on top
    assert [float(v) for v in t.column("accuracy_b")] == [0.4, 0.6, 0.7, 0.8]
    assert t.sorted_head() == {"accuracy_b": "ascending"}

    elapsed = time.monotonic() - start
    print(f"headless chromium: 6 page dumps in {elapsed:.1f} s")  # reported, not asserted: a loaded machine is slow


def test_collect_results_from_a_runs_folder(tmp_path, records):
    runs = tmp_path / "runs"
    for n, r in enumerate(records[:2]):
        _write(runs / "m" / f"run{n}" / "run.json", {"schema_version": 1, "run_id": f"run{n}"})
        _write(runs / "m" / f"run{n}" / "scores" / "results.json", r)
    got = collect_results([runs])
    assert sorted(r["run_id"] for r in got) == sorted(r["run_id"] for r in records[:2])

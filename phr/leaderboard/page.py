"""The PHRBench leaderboard page: results rendered as parquet, Markdown and one static HTML page.

The HTML page is self-contained (inline CSS and vanilla JS, no external resources) and sortable by any column;
``#sort=<column>[&dir=asc|desc]`` in the URL picks the initial order. Figures show ``value ± standard error``
where a result has standard errors. Output is deterministic: the same results give byte-identical files. See
docs/leaderboard.md.
"""

from __future__ import annotations

import html
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from phr.bench.metrics import LEADERBOARD, RANK_BY
from phr.core.parquet import write_parquet
from phr.eval.results import Result
from phr.leaderboard.table import SE_NOTE, TITLE, LeaderboardEntry, entries, has_errors, leaderboard_table

Records = Sequence[Result | Mapping[str, Any]]
TEXT_COLUMNS = ("model", "revision", "date")
#: Display columns in order: (key, header label).
DISPLAY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rank", "#"), ("model", "model"), ("revision", "revision"),
    *((c, c) for c in LEADERBOARD), ("date", "date"),
)
_HTTP_URL = re.compile(r"^https?://[^\s\x00-\x1f\x7f\"'<>`\\]+$", re.IGNORECASE)


# ---- rendering ---------------------------------------------------------------------------------------------

def safe_url(url: str | None) -> str | None:
    """``url`` if it is a plain http(s) URL (no whitespace, quotes or angle brackets), else None."""
    return url if url and _HTTP_URL.match(url) else None


def _datasets(rows: list[LeaderboardEntry]) -> list[str]:
    return [f"{d} ({rev})" for d, rev in sorted({(e.dataset, e.dataset_revision) for e in rows})]


def _footer(rows: list[LeaderboardEntry]) -> str:
    n = len(rows)
    return f"{n} submission{'s' if n != 1 else ''}; datasets: {', '.join(_datasets(rows)) or 'none'}"


def _md(text: str, link_text: bool = False) -> str:
    text = " ".join(str(text).splitlines())
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")
    return text.replace("[", "\\[").replace("]", "\\]") if link_text else text


def render_markdown(records: Records, title: str = TITLE) -> str:
    """The leaderboard as a Markdown table (best ``accuracy_bh`` first; ``value ± standard error`` where known),
    models linked to their http(s) ``source_url``; '|' and other table-breaking characters escaped."""
    rows = entries(records)
    head = [label for _, label in DISPLAY_COLUMNS]
    lines = [f"# {_md(title)}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, e in enumerate(rows, 1):
        url = safe_url(e.source_url)
        model = (f"[{_md(e.model, True)}]({_md(url).replace('(', '%28').replace(')', '%29')})"
                 if url else _md(e.model))
        cells = [str(i), model, _md(e.revision), *(e.text(m) for m in LEADERBOARD),
                 _md(e.date) if e.date is not None else ""]
        lines.append("| " + " | ".join(cells) + " |")
    note = ["", SE_NOTE] if has_errors(rows) else []
    return "\n".join([*lines, *note, "", _md(_footer(rows)), ""])


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem; color: #1b1b1b; }
h1 { font-size: 1.5rem; }
table { border-collapse: collapse; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3rem 0.6rem; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th button { font: inherit; font-weight: 600; background: none; border: 0; padding: 0; cursor: pointer; }
th[aria-sort="ascending"] button::after { content: " \\25B2"; }
th[aria-sort="descending"] button::after { content: " \\25BC"; }
tbody tr:nth-child(even) { background: #f6f8fa; }
footer { margin-top: 1rem; color: #555; font-size: 0.85rem; }
""".strip()

_JS = """
(function () {
  "use strict";
  var table = document.getElementById("leaderboard");
  var tbody = table.tBodies[0];
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var rows = Array.prototype.slice.call(tbody.rows).map(function (tr, i) { return {tr: tr, i: i}; });
  function value(row, idx, num) {
    var v = row.tr.cells[idx].getAttribute("data-value");
    if (v === null || v === "") return null;
    if (!num) return v.toLowerCase();
    v = parseFloat(v);
    return isNaN(v) ? null : v;
  }
  function sortBy(key, dir) {
    var idx = -1;
    heads.forEach(function (h, i) { if (h.getAttribute("data-key") === key) idx = i; });
    if (idx < 0) return false;
    var th = heads[idx];
    if (dir !== "asc" && dir !== "desc") dir = th.getAttribute("data-dir");
    var num = th.getAttribute("data-type") === "num", sign = dir === "asc" ? 1 : -1;
    rows.sort(function (a, b) {
      var x = value(a, idx, num), y = value(b, idx, num);
      if (x === null || y === null) {
        if (x !== y) return x === null ? 1 : -1;  /* empty cells last in both directions */
      } else if (x !== y) {
        return x < y ? -sign : sign;
      }
      return a.i - b.i;  /* ties: leaderboard order */
    });
    rows.forEach(function (row) { tbody.appendChild(row.tr); });
    heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir === "asc" ? "ascending" : "descending");
    table.setAttribute("data-sort", key);
    table.setAttribute("data-dir", dir);
    return true;
  }
  function fromHash() {
    var params = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var kv = part.split("=");
      if (kv.length === 2) {
        try { params[decodeURIComponent(kv[0])] = decodeURIComponent(kv[1]); } catch (e) { /* ignore */ }
      }
    });
    if (params.sort) sortBy(params.sort, params.dir);
  }
  heads.forEach(function (th) {
    th.querySelector("button").addEventListener("click", function () {
      var key = th.getAttribute("data-key"), dir;
      if (table.getAttribute("data-sort") === key) {
        dir = table.getAttribute("data-dir") === "asc" ? "desc" : "asc";
      } else {
        dir = th.getAttribute("data-dir");
      }
      sortBy(key, dir);
      try {
        history.replaceState(null, "", "#sort=" + encodeURIComponent(key) + "&dir=" + dir);
      } catch (e) { /* some file: contexts refuse it */ }
    });
  });
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
""".strip()


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _num_cell(v: float | None, text: str, se: float | None = None) -> str:
    err = "" if se is None else f' data-se="{se!r}"'
    return f'<td class="num" data-value="{"" if v is None else repr(v)}"{err}>{_e(text)}</td>'


def render_html(records: Records, title: str = TITLE) -> str:
    """One self-contained, deterministic HTML page: the leaderboard table (best ``accuracy_bh`` first;
    ``value ± standard error`` where known, the error also in ``data-se``), sortable by clicking any header
    (again: reverse), initial order from ``#sort=<column>[&dir=asc|desc]``."""
    rows = entries(records)
    heads = []
    for key, label in DISPLAY_COLUMNS:
        typ = "text" if key in TEXT_COLUMNS else "num"
        first = "desc" if key in LEADERBOARD else "asc"  # first click: best metric first, text A-Z
        sort = ' aria-sort="descending"' if key == RANK_BY else ""
        heads.append(f'<th scope="col" data-key="{key}" data-type="{typ}" data-dir="{first}"{sort}>'
                     f'<button type="button">{_e(label)}</button></th>')
    body = []
    for i, e in enumerate(rows, 1):
        url = safe_url(e.source_url)
        model = f'<a href="{_e(url)}" rel="nofollow noopener">{_e(e.model)}</a>' if url else _e(e.model)
        cells = [_num_cell(i, str(i)),
                 f'<td data-value="{_e(e.model)}">{model}</td>',
                 f'<td data-value="{_e(e.revision)}"><code>{_e(e.revision)}</code></td>',
                 *(_num_cell(e.values[m], e.text(m), e.errors[m]) for m in LEADERBOARD),
                 f'<td data-value="{_e(e.date or "")}">{_e(e.date or "")}</td>']
        body.append(f'<tr data-run-id="{_e(e.run_id)}">' + "".join(cells) + "</tr>")
    note = [f"<p>{_e(SE_NOTE)}</p>"] if has_errors(rows) else []
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>\n{_CSS}\n</style>",
        "</head>",
        "<body>",
        f"<h1>{_e(title)}</h1>",
        ("<p>Accuracy under B (question only), B+T (truthful premise) and B+H (hallucinated premise), the deltas "
         "B+T &minus; B and B+H &minus; B, and the trajectory metrics OL, UI, BUF and BC where reported. "
         "Click a column header to sort (again to reverse).</p>"),
        f'<table id="leaderboard" data-sort="{RANK_BY}" data-dir="desc">',
        "<thead><tr>" + "".join(heads) + "</tr></thead>",
        "<tbody>", *body, "</tbody>",
        "</table>",
        *note,
        f"<footer>{_e(_footer(rows))}</footer>",
        f"<script>\n{_JS}\n</script>",
        "</body>",
        "</html>",
        "",
    ])


# ---- writing -----------------------------------------------------------------------------------------------

def write_leaderboard(records: Records, out_dir: str | Path, title: str = TITLE) -> dict[str, Path]:
    """Write ``leaderboard.parquet``, ``leaderboard.md`` and ``leaderboard.html`` into ``out_dir`` (temp files
    first, then ``os.replace``); returns {"parquet", "markdown", "html"} -> path."""

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    finals = {"parquet": out / "leaderboard.parquet", "markdown": out / "leaderboard.md",
              "html": out / "leaderboard.html"}
    temps: dict[str, Path] = {}
    try:
        for kind, final in finals.items():
            fd, name = tempfile.mkstemp(dir=out, prefix=f".{final.name}.", suffix=".tmp")
            os.close(fd)
            temps[kind] = Path(name)
            os.chmod(name, 0o644)  # mkstemp makes 0600 files
        write_parquet(leaderboard_table(records), temps["parquet"])
        temps["markdown"].write_text(render_markdown(records, title), encoding="utf-8", newline="\n")
        temps["html"].write_text(render_html(records, title), encoding="utf-8", newline="\n")
        for kind, final in finals.items():
            os.replace(temps.pop(kind), final)
    finally:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
    return finals

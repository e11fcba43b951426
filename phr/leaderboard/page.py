"""The PHRBench leaderboard page: results rendered as parquet, Markdown and one static HTML page.

The HTML page is self-contained (inline CSS, vanilla JS and the figures as PNG data URIs; no external
resources; every text escaped). Its views:

- **Overall**: one row per result, readable column names (``phr.bench.metrics.label``) whose hover text is the
  catalogue's definition and paper section, sortable by any column (``#sort=<column>[&dir=asc|desc]``), each model
  linked to its ``source_url`` and to its result JSON (``results/<model>/<run-id>.json`` next to the page);
- **By domain** (paper Tables 5-8) and **By mutation type** (Tables 9-11, science domains only): T vs H per model;
- **Resolution** (Table 2, Figure 4) and **Figures** (Figures 3-5, the Pearson correlations), each figure beside
  the table of its values ± standard error (``phr.leaderboard.report``).

A model filter (and ``#filter=<text>``) hides the rows of other models in every view; ``#view=<name>`` picks the
view. Figures show ``value ± standard error`` where a result has standard errors. Output is deterministic: the
same results give byte-identical files. See docs/leaderboard.md.
"""

from __future__ import annotations

import html
import os
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from phr.bench.metrics import (
    DOMAIN_NAMES,
    FIGURE_LABELS,
    INSIGHTFUL,
    LEADERBOARD,
    RANK_BY,
    RESOLUTIONS,
    definition,
    delta_of,
    label,
    metric,
    name_of,
    rate_of,
    section,
)
from phr.core.parquet import write_parquet
from phr.core.text import md_text
from phr.eval.results import H_MINUS_T, Result
from phr.leaderboard.repo import dump_result, result_path
from phr.leaderboard.report import (
    FIGURE_CAPTIONS,
    GROUP_FIGURES,
    RETENTION,
    Block,
    Comparison,
    CrossModelReport,
    Estimate,
    block_note,
    build_report,
    comparison_columns,
    correlations_note,
    data_uri,
    render_figures,
    retention_note,
    tags_markdown,
    tags_of,
)
from phr.leaderboard.table import (
    SE_NOTE,
    TITLE,
    LeaderboardEntry,
    as_result,
    entries,
    has_errors,
    leaderboard_table,
    ranks,
)

Records = Sequence[Result | Mapping[str, Any]]
TEXT_COLUMNS = ("model", "model_access", "revision", "date", "coverage")
#: the rank cell of a partial result (shown with --allow-partial, never ranked)
UNRANKED = "—"
#: Display columns of the overall table in order: (key, header label).
DISPLAY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rank", "#"),
    ("model", "Model"),
    ("model_access", "Access"),
    ("revision", "Revision"),
    *((c, label(c)) for c in LEADERBOARD),
    ("date", "Date"),
    ("coverage", "Coverage"),
)
#: the page's views: (id, tab label)
VIEWS = (
    ("overall", "Overall"),
    ("domain", "By domain"),
    ("type", "By mutation type"),
    ("resolution", "Resolution"),
    ("figures", "Figures"),
)
_HTTP_URL = re.compile(r"^https?://[^\s\x00-\x1f\x7f\"'<>`\\]+$", re.IGNORECASE)


# ---- rendering ---------------------------------------------------------------------------------------------


def safe_url(url: str | None) -> str | None:
    """``url`` if it is a plain http(s) URL (no whitespace, quotes or angle brackets), else None."""
    return url if url and _HTTP_URL.fullmatch(url) else None


def _datasets(rows: list[LeaderboardEntry], escape: Callable[[str], str] = lambda text: text) -> list[str]:
    return [f"{escape(d)} ({escape(rev)})" for d, rev in sorted({(e.dataset, e.dataset_revision) for e in rows})]


def _footer(rows: list[LeaderboardEntry], escape: Callable[[str], str] = lambda text: text) -> str:
    """The line under the table; ``escape`` makes the results' text (dataset ids and revisions) inert."""
    n = len(rows)
    partial = sum(not e.ranked and "partial" in e.tags for e in rows)
    other = sum(not e.ranked for e in rows) - partial
    why = [f"{partial} partial, unranked: scored on part of the dataset"] if partial else []
    why += [f"{other} {'other ' if partial else ''}unranked: see the tags next to the model"] if other else []
    unranked = f" ({'; '.join(why)})" if why else ""
    datasets = ", ".join(_datasets(rows, escape)) or "none"
    return f"{n} submission{'s' if n != 1 else ''}{unranked}; datasets: {datasets}"


def _md(text: str) -> str:
    return md_text(text)


def _md_url(url: str) -> str:
    """A link destination: parentheses percent-encoded, the rest escaped (``md_text``)."""
    return _md(url.replace("(", "%28").replace(")", "%29"))


def _tags_html(tags: Sequence[str]) -> str:
    """The tags shown next to a model name: `` <span class="tag">partial</span>`` each ('' for none)."""
    return "".join(f' <span class="tag">{_e(t)}</span>' for t in tags)


def render_markdown(records: Records, title: str = TITLE) -> str:
    """The leaderboard as a Markdown table (best ``accuracy_bh`` first; ``value ± standard error`` where known),
    readable column names, models linked to their http(s) ``source_url`` and to their result JSON; '|' and other
    table-breaking characters escaped."""
    results = [as_result(r) for r in records]
    files = _files(results)
    rows = entries(results)
    head = [lab for key, lab in DISPLAY_COLUMNS if key != "model_access"] + ["Result"]
    lines = [f"# {_md(title)}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for rank, e in zip(ranks(rows), rows):
        url = safe_url(e.source_url)
        model = (f"[{_md(e.model)}]({_md_url(url)})" if url else _md(e.model)) + tags_markdown(e.tags)
        cells = [
            UNRANKED if rank is None else str(rank),
            model,
            _md(e.revision),
            *(e.text(m) for m in LEADERBOARD),
            _md(e.date) if e.date is not None else "",
            _md(e.coverage),
            f"[json]({_md_url(files[(e.model, e.run_id)])})",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    note = ["", SE_NOTE] if has_errors(rows) else []
    legend = ["", _LEGEND_MD]
    return "\n".join([*lines, *note, *legend, "", _footer(rows, _md), ""])


def _files(results: Sequence[Result]) -> dict[tuple[str, str], str]:
    """(model, run id) -> the relative path of its result JSON (as in a results repo)."""
    return {(r.model, r.run_id or ""): result_path(r) for r in results}


_LEGEND_MD = (
    "T = B+T (truthful premise), H = B+H (hallucinated premise), B = question only. Acc H − T is the "
    "paper's accuracy drop with its sign (§5.1); retention is Acc H / Acc T (Figure 3). Acc T − B and "
    "Acc H − B are differences against B, not the paper's accuracy drop."
)

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem; color: #1b1b1b; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 1.5rem; }
table { border-collapse: collapse; font-size: 0.85rem; margin-bottom: 1rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3rem 0.5rem; }
th[title] { text-decoration: underline dotted; cursor: help; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th button { font: inherit; font-weight: 600; background: none; border: 0; padding: 0; cursor: pointer; }
th[aria-sort="ascending"] button::after { content: " \\25B2"; }
th[aria-sort="descending"] button::after { content: " \\25BC"; }
tbody tr:nth-child(even) { background: #f6f8fa; }
tr.average { font-weight: 600; }
tr.partial { color: #57606a; font-style: italic; }
.tag { display: inline-block; font-size: 0.75rem; font-style: normal; padding: 0 0.35rem; margin-left: 0.2rem;
       border: 1px solid #bf8700; border-radius: 0.6rem; color: #7d4e00; background: #fff8c5; white-space: nowrap; }
nav.views button { font: inherit; margin-right: 0.3rem; padding: 0.2rem 0.6rem; cursor: pointer; }
nav.views button[aria-pressed="true"] { background: #1b1b1b; color: #fff; }
.controls { margin: 1rem 0; }
figure { margin: 1rem 0; display: flex; flex-wrap: wrap; gap: 1.5rem; align-items: flex-start; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.85rem; color: #333; }
.note, footer { color: #555; font-size: 0.85rem; }
""".strip()

_JS = """
(function () {
  "use strict";
  var table = document.getElementById("leaderboard");
  var tbody = table.tBodies[0];
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var rows = Array.prototype.slice.call(tbody.rows).map(function (tr, i) { return {tr: tr, i: i}; });
  var filter = document.getElementById("model-filter");
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
  function applyFilter(text) {
    var q = (text || "").toLowerCase();
    Array.prototype.forEach.call(document.querySelectorAll("tr[data-model]"), function (tr) {
      if (!q || tr.getAttribute("data-model").toLowerCase().indexOf(q) >= 0) tr.removeAttribute("hidden");
      else tr.setAttribute("hidden", "");
    });
    document.body.setAttribute("data-filter", q);
  }
  function showView(name) {
    var sections = Array.prototype.slice.call(document.querySelectorAll("section[data-view]"));
    if (!sections.some(function (s) { return s.getAttribute("data-view") === name; })) name = "overall";
    sections.forEach(function (s) {
      if (s.getAttribute("data-view") === name) s.removeAttribute("hidden"); else s.setAttribute("hidden", "");
    });
    Array.prototype.forEach.call(document.querySelectorAll("nav.views button"), function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-view") === name ? "true" : "false");
    });
    document.body.setAttribute("data-view", name);
  }
  function params() {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var kv = part.split("=");
      if (kv.length === 2) {
        try { out[decodeURIComponent(kv[0])] = decodeURIComponent(kv[1]); } catch (e) { /* ignore */ }
      }
    });
    return out;
  }
  function setHash(key, val) {
    var p = params();
    p[key] = val;
    var parts = Object.keys(p).filter(function (k) { return p[k] !== ""; }).map(function (k) {
      return encodeURIComponent(k) + "=" + encodeURIComponent(p[k]);
    });
    try { history.replaceState(null, "", "#" + parts.join("&")); } catch (e) { /* some file: contexts refuse it */ }
  }
  function fromHash() {
    var p = params();
    if (p.sort) sortBy(p.sort, p.dir);
    showView(p.view || "overall");
    if (p.filter !== undefined) { filter.value = p.filter; }
    applyFilter(filter.value);
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
      setHash("sort", key);
      setHash("dir", dir);
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("nav.views button"), function (b) {
    b.addEventListener("click", function () { showView(b.getAttribute("data-view")); setHash("view", b.getAttribute("data-view")); });
  });
  filter.addEventListener("input", function () { applyFilter(filter.value); setHash("filter", filter.value); });
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
""".strip()


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _num_cell(v: float | None, text: str, se: float | None = None) -> str:
    err = "" if se is None else f' data-se="{se!r}"'
    return f'<td class="num" data-value="{"" if v is None else repr(v)}"{err}>{_e(text)}</td>'


def _est_cell(est: Estimate | None, signed: bool = False) -> str:
    est = est or Estimate()
    return _num_cell(est.value, est.text(signed), est.se)


def _hover(name: str) -> str:
    """A metric's hover text: its definition and the paper section."""
    return f"{definition(name)} (paper: {section(name)})"


def _th(text: str, hover: str | None = None, attrs: str = "") -> str:
    title = f' title="{_e(hover)}"' if hover else ""
    return f'<th scope="col"{attrs}{title}>{_e(text)}</th>'


def _model_links(model: str, url: str | None, result_file: str, tags: Sequence[str] = ()) -> str:
    """The model cell: the name (linked to its http(s) source), its tags, the link to its result JSON."""
    name = f'<a href="{_e(url)}" rel="nofollow noopener">{_e(model)}</a>' if url else _e(model)
    return f'{name}{_tags_html(tags)} <a class="result" href="{_e(result_file)}" title="the result JSON">[result]</a>'


def _overall_table(rows: list[LeaderboardEntry], files: dict[tuple[str, str], str]) -> list[str]:
    heads = []
    for key, lab in DISPLAY_COLUMNS:
        typ = "text" if key in TEXT_COLUMNS else "num"
        first = "desc" if key in LEADERBOARD and metric(key).better != "lower" else "asc"
        sort = ' aria-sort="descending"' if key == RANK_BY else ""
        hover = f' title="{_e(_hover(key))}"' if key in LEADERBOARD else ""
        heads.append(
            f'<th scope="col" data-key="{key}" data-type="{typ}" data-dir="{first}"{sort}{hover}>'
            f'<button type="button">{_e(lab)}</button></th>'
        )
    body = []
    for rank, e in zip(ranks(rows), rows):
        links = _model_links(e.model, safe_url(e.source_url), files[(e.model, e.run_id)], e.tags)
        cells = [
            _num_cell(rank, UNRANKED if rank is None else str(rank)),
            f'<td data-value="{_e(e.model)}">{links}</td>',
            f'<td data-value="{_e(e.model_access or "")}">{_e(e.model_access or "")}</td>',
            f'<td data-value="{_e(e.revision)}"><code>{_e(e.revision)}</code></td>',
            *(_num_cell(e.values[m], e.text(m), e.errors[m]) for m in LEADERBOARD),
            f'<td data-value="{_e(e.date or "")}">{_e(e.date or "")}</td>',
            f'<td data-value="{_e(e.coverage)}">{_e(e.coverage)}</td>',
        ]
        partial = "" if e.ranked else ' class="partial" data-partial="true"'
        body.append(f'<tr data-run-id="{_e(e.run_id)}" data-model="{_e(e.model)}"{partial}>' + "".join(cells) + "</tr>")
    return _table(f'id="leaderboard" data-sort="{RANK_BY}" data-dir="desc"', heads, body)


def _table(attrs: str, head: list[str], body: list[str]) -> list[str]:
    """A ``<table attrs>`` of the header cells ``head`` and the rows ``body``, as lines."""
    return [
        f"<table {attrs}>",
        "<thead><tr>" + "".join(head) + "</tr></thead>",
        "<tbody>",
        *body,
        "</tbody>",
        "</table>",
    ]


def _comparison_hover(side: str, figure: str) -> str:
    if side == RETENTION:
        return _hover(RETENTION)
    if side == H_MINUS_T:
        return _hover(delta_of(name_of(figure, "B+H"), name_of(figure, "B+T")))
    return _hover(name_of(figure, "B+T" if side == "T" else "B+H"))


def _row_attrs(key: str, report: CrossModelReport) -> str:
    """A report row's attributes: its model (the filter) and, for an unranked result, ``class="partial"``."""
    ref = next((m for m in report.models if m.key == key), None)
    unranked = ' class="partial"' if ref is not None and not ref.ranked else ""
    return f'data-model="{_e(ref.model if ref else key)}"{unranked}'


def _who(key: str, report: CrossModelReport) -> str:
    """A report row's model cell: the name and its tags."""
    return f"<td>{_e(key)}{_tags_html(tags_of(report).get(key, ()))}</td>"


def _note(text: str) -> str:
    return f'<p class="note">{_e(text)}</p>'


def _block_table(block: Block, report: CrossModelReport, table_id: str) -> list[str]:
    cols = comparison_columns()
    access = {m.key: m.model_access or "" for m in report.models}
    head = [_th("Model"), _th("Access"), *(_th(h, _comparison_hover(s, f)) for s, f, h in cols)]
    body = []
    for key, comp in block.rows.items():
        cells = [
            _who(key, report),
            f"<td>{_e(access.get(key, ''))}</td>",
            *(_est_cell(_side(comp, s, f), s == H_MINUS_T) for s, f, _ in cols),
        ]
        body.append(f"<tr {_row_attrs(key, report)}>" + "".join(cells) + "</tr>")
    for name, comp in block.averages.items():
        who = "Average" if name == "all" else f"Average ({name})"
        cells = [
            f"<td>{_e(who)}</td>",
            "<td></td>",
            *(_est_cell(_side(comp, s, f), s == H_MINUS_T) for s, f, _ in cols),
        ]
        body.append('<tr class="average">' + "".join(cells) + "</tr>")
    return [*_table(f'id="{_e(table_id)}"', head, body), _note(block_note(block))]


def _side(comp: Comparison, side: str, figure: str) -> Estimate | None:
    if side == RETENTION:
        return comp.retention
    return {"T": comp.T, "H": comp.H, H_MINUS_T: comp.h_minus_t}[side].get(figure)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _blocks_view(view: str, title: str, blocks: dict[str, Block], report: CrossModelReport, note: str) -> list[str]:
    out = [f'<section data-view="{view}">', f"<h2>{_e(title)}</h2>", f'<p class="note">{_e(note)}</p>']
    if not blocks:
        out.append('<p class="note">Not in these results.</p>')
    for name, block in blocks.items():
        number = f"Table {block.table}: " if block.table else ""
        out += [
            f"<h3>{_e(number + DOMAIN_NAMES.get(name, name))}</h3>",
            *_block_table(block, report, f"{view}-{_slug(name)}"),
        ]
    return [*out, "</section>"]


def _figure(key: str, png: bytes, table: list[str]) -> list[str]:
    return [
        "<figure>",
        f'<div><img alt="{_e(FIGURE_CAPTIONS[key])}" src="{data_uri(png)}">',
        f"<figcaption>{_e(FIGURE_CAPTIONS[key])}</figcaption></div>",
        "<div>",
        *table,
        "</div>",
        "</figure>",
    ]


def _resolution_table(report: CrossModelReport) -> list[str]:
    head = [
        _th("Model"),
        _th("Judged"),
        *(_th(r, _hover(rate_of(r))) for r in RESOLUTIONS),
        _th(label(rate_of(INSIGHTFUL)), _hover(rate_of(INSIGHTFUL))),
    ]
    body = []
    for key, row in report.table2.items():
        cells = [
            _who(key, report),
            _num_cell(row.judged, str(row.judged)),
            *(_est_cell(row.proportions.get(r)) for r in RESOLUTIONS),
            _est_cell(row.insightful),
        ]
        body.append(f"<tr {_row_attrs(key, report)}>" + "".join(cells) + "</tr>")
    return _table('id="resolution"', head, body)


def _retention_table(report: CrossModelReport) -> list[str]:
    keys = {m.key for m in report.models}
    cols = report.retention.columns
    head = [_th("Model"), *(_th(c, _hover(RETENTION)) for c in cols)]
    body = []
    for key, row in report.retention.rows.items():
        cells = [_who(key, report), *(_num_cell(row[c], "" if row[c] is None else f"{row[c]:.3f}") for c in cols)]
        attr = f" {_row_attrs(key, report)}" if key in keys else ' class="average"'
        body.append(f"<tr{attr}>" + "".join(cells) + "</tr>")
    return [*_table('id="retention"', head, body), _note(retention_note(report))]


def _groups_table(groups: dict, table_id: str, report: CrossModelReport) -> list[str]:
    if not groups:
        return ['<p class="note">Not in these results.</p>']
    head = [_th("Model"), _th("Group"), *(_th(FIGURE_LABELS[f], _hover(name_of(f, "B+H"))) for f in GROUP_FIGURES)]
    body = [
        f"<tr {_row_attrs(key, report)}>{_who(key, report)}<td>{_e(g)}</td>"
        + "".join(_est_cell(vals.get(f)) for f in GROUP_FIGURES)
        + "</tr>"
        for key, gs in groups.items()
        for g, vals in gs.items()
    ]
    return _table(f'id="{table_id}"', head, body)


def _correlation_table(report: CrossModelReport) -> list[str]:
    pairs = list(next(iter(report.correlations.values()), {}))
    head = [_th("Condition"), *(_th(p.replace("~", " vs ")) for p in pairs)]
    body = [
        "<tr><td>"
        + _e(cond)
        + "</td>"
        + "".join(_num_cell(v, "" if v is None else f"{v:.3f}") for v in vals.values())
        + "</tr>"
        for cond, vals in report.correlations.items()
    ]
    return _table('id="correlations"', head, body)


def _resolution_view(report: CrossModelReport, pngs: dict[str, bytes]) -> list[str]:
    return [
        '<section data-view="resolution">',
        "<h2>Behavioural resolution (Table 2) and insightful rate</h2>",
        f'<p class="note">{_e(_hover(rate_of(INSIGHTFUL)))}</p>',
        *_figure("figure4", pngs["figure4"], _resolution_table(report)),
        "</section>",
    ]


def _figures_view(report: CrossModelReport, pngs: dict[str, bytes]) -> list[str]:
    return [
        '<section data-view="figures">',
        "<h2>Figures</h2>",
        *_figure("figure3", pngs["figure3"], _retention_table(report)),
        *_figure(
            "figure5_resolution",
            pngs["figure5_resolution"],
            _groups_table(report.trajectory_by_resolution, "by-resolution", report),
        ),
        *_figure(
            "figure5_insightful",
            pngs["figure5_insightful"],
            _groups_table(report.trajectory_by_insight, "by-insight", report),
        ),
        "<h3>Pearson correlations among OL, BUF and BC across models (§5.1)</h3>",
        _note(correlations_note(report)),
        *_correlation_table(report),
        "</section>",
    ]


def render_html(records: Records, title: str = TITLE) -> str:
    """One self-contained, deterministic HTML page: the overall leaderboard table (best ``accuracy_bh`` first;
    ``value ± standard error`` where known, the error also in ``data-se``; sortable by clicking any header, initial
    order from ``#sort=<column>[&dir=asc|desc]``), the views per domain, per mutation type, resolution and the
    figures (``#view=``), and a model filter (``#filter=``)."""
    results = sorted((as_result(r) for r in records), key=lambda r: (r.model, r.run_id or ""))
    rows = entries(results)
    report = build_report(results, standing=rows)
    pngs = render_figures(report)
    files = _files(results)
    note = [f'<p class="note">{_e(SE_NOTE)}</p>'] if has_errors(rows) else []
    nav = "".join(
        f'<button type="button" data-view="{v}" aria-pressed="{str(v == "overall").lower()}">{_e(lab)}</button>'
        for v, lab in VIEWS
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(title)}</title>",
            f"<style>\n{_CSS}\n</style>",
            "</head>",
            '<body data-view="overall">',
            f"<h1>{_e(title)}</h1>",
            f"<p>{_e(_LEGEND_MD)} Hover a column name for its definition and paper section; click it to sort "
            "(again to reverse).</p>",
            '<div class="controls"><label>Model filter: <input id="model-filter" type="search" '
            'placeholder="part of a model name"></label></div>',
            f'<nav class="views">{nav}</nav>',
            '<section data-view="overall">',
            "<h2>Overall (Table 1)</h2>",
            *_overall_table(rows, files),
            *note,
            "<h3>Table 1: T vs H per model, the average and proprietary vs open</h3>",
            *_block_table(report.table1, report, "table1"),
            "</section>",
            *_blocks_view(
                "domain",
                "By domain (Tables 5-8)",
                report.per_domain,
                report,
                "T vs H per domain; each model's figures with their standard errors.",
            ),
            *_blocks_view(
                "type",
                "By mutation type (Tables 9-11)",
                report.per_mutation_type,
                report,
                "Science domains only (paper §C.2: Code Generation has State Distortion premises only).",
            ),
            *_resolution_view(report, pngs),
            *_figures_view(report, pngs),
            f"<footer>{_e(_footer(rows))}</footer>",
            f"<script>\n{_JS}\n</script>",
            "</body>",
            "</html>",
            "",
        ]
    )


# ---- writing -----------------------------------------------------------------------------------------------


def write_leaderboard(records: Records, out_dir: str | Path, title: str = TITLE) -> dict[str, Path]:
    """Write ``leaderboard.parquet``, ``leaderboard.md``, ``leaderboard.html`` and each result JSON the page
    links to (``results/<model>/<run-id>.json``) into ``out_dir`` (temp files first, then ``os.replace``);
    returns {"parquet", "markdown", "html"} -> path."""

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = [as_result(r) for r in records]
    finals = {
        "parquet": out / "leaderboard.parquet",
        "markdown": out / "leaderboard.md",
        "html": out / "leaderboard.html",
    }
    files = {out / result_path(r): dump_result(r) for r in results}
    temps: dict[Path, Path] = {}
    try:
        for final in [*finals.values(), *files]:
            final.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp")
            os.close(fd)
            temps[final] = Path(name)
            os.chmod(name, 0o644)  # mkstemp makes 0600 files
        write_parquet(leaderboard_table(results), temps[finals["parquet"]])
        temps[finals["markdown"]].write_text(render_markdown(results, title), encoding="utf-8", newline="\n")
        temps[finals["html"]].write_text(render_html(results, title), encoding="utf-8", newline="\n")
        for final, data in files.items():
            temps[final].write_bytes(data)
        for final in list(temps):
            os.replace(temps.pop(final), final)
    finally:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
    return finals

"""Manual review round trip of a built PHRBench folder (the human QC round).

1. :func:`export_review` writes a CSV review sheet (one row per premise of the ``truthful`` and
   ``hallucinated`` configs, three empty columns ``decision``, ``reviewer``, ``note``) and a standalone
   HTML page that shows the same premises grouped by question, for reading.
2. Maintainers fill ``decision`` (``accept`` / ``reject`` / ``revise`` / blank = undecided), ``reviewer``,
   for a rejection ``note`` (the reason) and for a revision ``revised_premise`` (the edited text: the paper's
   "remove or revise", §A.2 Quality Control).
3. :func:`import_review` checks the whole sheet against the folder (every problem is reported, with its
   sheet row and column; nothing is written unless the sheet is clean), re-checks every revised text with
   the rule checks in the context of its question's other premises (a revision that breaks a rule is
   refused with the rule's reason) and merges the decisions into ``<folder>/review/decisions.json``. The
   next build into the folder puts each revision in place of its premise (``apply_revisions``).
4. :func:`review_rejections` (called by ``validate_folder``) turns rejected premises still in the folder
   and revisions not yet applied into ``manual_review`` rejections, and flags accepted or revised
   premises whose text changed after the review as stale. :func:`review_status` counts the premises
   reviewed, revised, removed and undecided (the card's QC table; the push gate of a recipe that requires
   review refuses undecided premises).

Each row carries ``premise_sha`` (sha256 of the premise text, first 16 hex digits) so a decision is tied
to the exact text that was reviewed: an edited premise invalidates its decision.
"""

from __future__ import annotations

import csv
import hashlib
import html
import io
import json
import os
import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from phr.bench.conditions import CONDITIONS, condition_spec
from phr.bench.folder import data_file, read_rows
from phr.bench.records import Condition
from phr.core.errors import UsageError
from phr.core.report import Rejection

from .config import ValidationConfig
from .premises import folder_premises
from .semantic import run_all_checks

REVIEW_DIR = "review"
DECISIONS_FILE = "decisions.json"
CHECK = "manual_review"
BASELINE = condition_spec(Condition.B).config
PREMISE_CONFIGS = tuple(c.config for c in CONDITIONS if c.premise)
DECISIONS = ("accept", "reject", "revise")

COLUMNS = (
    "instance_id",
    "augmentation_id",
    "question_id",
    "domain",
    "subtype",
    "kind",
    "mutation_type",
    "question",
    "gold_answer",
    "premise",
    "truth_verification",
    "mutation_strategy",
    "mutation_logic",
    "premise_sha",
    "decision",
    "revised_premise",
    "reviewer",
    "note",
)
# columns an imported sheet must have; the others are context for the reviewer and are not read back
REQUIRED_COLUMNS = ("instance_id", "augmentation_id", "premise_sha", "decision", "reviewer", "note")
FILL_COLUMNS = ("decision", "revised_premise", "reviewer", "note")


class ReviewError(UsageError):
    """The folder or the decisions file cannot be used for a review round."""


@dataclass(frozen=True, slots=True)
class SheetProblem:
    """One problem of an imported sheet: spreadsheet ``row`` (header = row 1), physical ``line`` of the
    CSV file where the record starts (differs from ``row`` when earlier cells hold line breaks), the
    ``column`` concerned (None for the whole row) and what is wrong."""

    row: int
    column: str | None
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"row {self.row}" + (f" (line {self.line})" if self.line is not None and self.line != self.row else "")
        return f"{where}, column {self.column}: {self.message}" if self.column else f"{where}: {self.message}"


class ReviewSheetError(ReviewError):
    """A review sheet failed the import checks; ``problems`` lists every one (nothing was written)."""

    def __init__(self, sheet: Path, problems: list[SheetProblem]):
        self.sheet = Path(sheet)
        self.problems = list(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{self.sheet}: {len(self.problems)} problem(s), nothing was imported:\n{lines}")


@dataclass
class ReviewDecisions:
    """Result of one import: counts of this sheet's rows and the merged decisions now on file."""

    path: Path  # <folder>/review/decisions.json
    accepted: int  # rows of this sheet
    rejected: int
    undecided: int
    decisions: dict[str, dict] = field(default_factory=dict)  # all decisions on file after the merge
    changed: int = 0  # ids that had an earlier, different decision, overridden by this sheet
    revised: int = 0

    @property
    def total_accepted(self) -> int:
        return sum(d["decision"] == "accept" for d in self.decisions.values())

    @property
    def total_rejected(self) -> int:
        return sum(d["decision"] == "reject" for d in self.decisions.values())

    @property
    def total_revised(self) -> int:
        return sum(d["decision"] == "revise" for d in self.decisions.values())

    def summary(self) -> str:
        revised = f"{self.revised} revised, " if self.revised else ""
        s = f"{self.accepted} accepted, {revised}{self.rejected} rejected, {self.undecided} undecided"
        if self.changed:
            s += f" ({self.changed} earlier decision(s) overridden)"
        return (
            f"{s}; on file in {self.path}: {len(self.decisions)} decision(s), "
            f"{self.total_accepted} accepted, {self.total_rejected} rejected"
            + (f", {self.total_revised} revised (a rebuild puts the revisions in place)" if self.total_revised else "")
        )


# ---- helpers -------------------------------------------------------------------------------------------


def premise_sha(text: str | None) -> str:
    """sha256 of the premise text (UTF-8), first 16 hex digits."""
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()[:16]


def decisions_path(folder: str | Path) -> Path:
    return Path(folder) / REVIEW_DIR / DECISIONS_FILE


def _atomic_write(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to a temporary sibling, fsync, then rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _natural(s: str) -> tuple:
    """Sort key with digit runs compared as numbers (``-H2`` before ``-H10``)."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s or ""))


def _load_configs(folder: Path, names: tuple[str, ...]) -> dict[str, list[dict]]:
    if not folder.is_dir():
        raise ReviewError(f"{folder} is not a folder (build one with `phr-publish build phrbench`)")
    out = {}
    for name in names:
        p = data_file(folder, name)
        if p is None:
            raise ReviewError(f"{folder}: no data/{name}-*.parquet: is this a built PHRBench folder?")
        out[name] = pq.read_table(p).to_pylist()
    return out


def _gold(r: dict) -> str:
    opts = r.get("options") or []
    idx = r.get("answer_index")
    if opts and idx is not None and 0 <= idx < len(opts):
        return f"{idx + 1}. {opts[idx]}"
    return r.get("answer") or ""


def _question_text(r: dict) -> str:
    opts = r.get("options") or []
    q = r.get("question") or ""
    if not opts:
        return q
    return q.rstrip() + "\n" + "\n".join(f"{i}. {o}" for i, o in enumerate(opts, 1))


def sheet_rows(folder: str | Path, *, include_baseline: bool = False) -> list[dict]:
    """The review sheet's rows (dicts keyed by :data:`COLUMNS`), in the sheet's order:
    (domain, question_id, instance_id)."""
    folder = Path(folder)
    names = ((BASELINE,) if include_baseline else ()) + PREMISE_CONFIGS
    rows = []
    for name, records in _load_configs(folder, names).items():
        for r in records:
            rows.append(
                {
                    "instance_id": r["id"],
                    "augmentation_id": r.get("augmentation_id") or "",
                    "question_id": r["question_id"],
                    "domain": r.get("domain") or "",
                    "subtype": r.get("subtype") or "",
                    "kind": condition_spec(name).premise or name,
                    "mutation_type": r.get("mutation_type") or "",
                    "question": _question_text(r),
                    "gold_answer": _gold(r),
                    "premise": r.get("premise") or "",
                    "truth_verification": r.get("truth_verification") or "",
                    "mutation_strategy": r.get("mutation_strategy") or "",
                    "mutation_logic": r.get("mutation_logic") or "",
                    "premise_sha": premise_sha(r.get("premise")) if r.get("augmentation_id") else "",
                    "decision": "",
                    "revised_premise": "",
                    "reviewer": "",
                    "note": "",
                }
            )
    rows.sort(key=lambda x: (x["domain"], x["question_id"], _natural(x["instance_id"])))
    return rows


def render_csv(rows: list[dict]) -> str:
    """CSV text of the sheet: header + rows, every field quoted, ``\\r\\n`` records (RFC 4180)."""
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=COLUMNS, quoting=csv.QUOTE_ALL, lineterminator="\r\n", extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:70rem;
 padding:0 1rem;color:#1d1d1f;background:#fff}
h1{font-size:1.5rem;margin-bottom:.2rem}
.intro{color:#444;margin-bottom:1.5rem}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
pre{white-space:pre-wrap;word-wrap:break-word;background:#f6f8fa;border:1px solid #e1e4e8;border-radius:4px;
 padding:.5rem .7rem;margin:.3rem 0}
section.q{border:1px solid #d0d7de;border-radius:6px;padding:.8rem 1rem;margin:1.2rem 0}
section.q h2{font-size:1.05rem;margin:.1rem 0 .4rem}
.meta{color:#57606a;font-size:13px}
.gold{margin:.3rem 0 .6rem}
table{border-collapse:collapse;width:100%;margin-top:.4rem}
th,td{border:1px solid #d0d7de;padding:.35rem .5rem;vertical-align:top;text-align:left}
th{background:#f6f8fa;font-size:13px}
td.premise{width:45%;white-space:pre-wrap}
.kind-truthful{border-left:4px solid #2da44e}
.kind-hallucinated{border-left:4px solid #cf222e}
.kind-baseline{border-left:4px solid #8c959f}
td.fill{color:#8c959f;font-style:italic;white-space:nowrap}
.tag{display:inline-block;font-size:12px;border-radius:10px;padding:0 .45rem;background:#eaeef2}
""".strip()


def _e(s: object) -> str:
    return html.escape("" if s is None else str(s), quote=True)


def render_html(rows: list[dict], *, title: str = "PHRBench review", sheet_name: str = "review.csv") -> str:
    """A standalone HTML page of sheet rows grouped by question (every value escaped; inline CSS only)."""
    kinds = Counter(r.get("kind", "") for r in rows)
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r.get("question_id", ""), []).append(r)
    counts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="intro">{len(rows)} premise row(s) ({_e(counts)}) under {len(groups)} question(s). '
        f"Read the premises here; record decisions in <code>{_e(sheet_name)}</code>: column "
        "<code>decision</code> = <code>accept</code>, <code>reject</code>, <code>revise</code> or blank (undecided), "
        "<code>revised_premise</code> = the edited premise (for <code>revise</code>), "
        "<code>reviewer</code> = your name, <code>note</code> = the reason (required for a rejection). "
        "Then run <code>phr-publish review import</code>.</p>",
    ]
    for qid, items in groups.items():
        head = items[0]
        parts += [
            f'<section class="q" id="{_e(qid)}">',
            f"<h2>{_e(qid)}</h2>",
            f'<div class="meta">{_e(head.get("domain"))} / {_e(head.get("subtype"))}</div>',
            f"<pre>{_e(head.get('question'))}</pre>",
            f'<div class="gold"><strong>Gold answer:</strong></div><pre>{_e(head.get("gold_answer"))}</pre>',
            "<table><thead><tr><th>instance</th><th>premise</th><th>type / logic</th>"
            "<th>decision</th><th>revised premise</th><th>reviewer</th><th>note</th></tr></thead><tbody>",
        ]
        for r in items:
            kind = r.get("kind", "")
            if kind == "truthful":
                detail = (
                    f'<span class="tag">truthful</span><div><strong>verification:</strong> '
                    f"{_e(r.get('truth_verification'))}</div>"
                )
            elif kind == "hallucinated":
                detail = (
                    f'<span class="tag">{_e(r.get("mutation_type"))}</span>'
                    f"<div><strong>strategy:</strong> {_e(r.get('mutation_strategy'))}</div>"
                    f"<div><strong>logic:</strong> {_e(r.get('mutation_logic'))}</div>"
                )
            else:
                detail = '<span class="tag">baseline (no premise)</span>'
            fill = [r.get(c) or "" for c in FILL_COLUMNS]
            fill_cells = "".join(f"<td>{_e(v)}</td>" if v else '<td class="fill">in the CSV</td>' for v in fill)
            sha = r.get("premise_sha")
            parts.append(
                f'<tr class="kind-{_e(kind)}" id="{_e(r.get("instance_id"))}">'
                f'<td><code>{_e(r.get("instance_id"))}</code><div class="meta">{_e(r.get("augmentation_id"))}</div>'
                + (f'<div class="meta">sha {_e(sha)}</div>' if sha else "")
                + f'</td><td class="premise">{_e(r.get("premise"))}</td><td>{detail}</td>{fill_cells}</tr>'
            )
        parts.append("</tbody></table></section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# ---- export --------------------------------------------------------------------------------------------


def export_review(folder: str | Path, out: str | Path, *, include_baseline: bool = False) -> tuple[Path, Path]:
    """Write the review sheet ``out`` (CSV) and ``out`` with suffix ``.html`` (readable page).

    One row per premise of the truthful and hallucinated configs (``include_baseline`` adds the baseline
    rows, for context only: they carry no premise and take no decision). Returns (csv path, html path).
    """
    folder = Path(folder)
    out = Path(out)
    if out.is_dir():
        out = out / "review.csv"
    rows = sheet_rows(folder, include_baseline=include_baseline)
    page = out.with_suffix(".html")
    _atomic_write(out, render_csv(rows))
    _atomic_write(page, render_html(rows, title=f"PHRBench review: {folder.resolve().name}", sheet_name=out.name))
    return out, page


# ---- import --------------------------------------------------------------------------------------------


def load_decisions(folder: str | Path) -> dict[str, dict]:
    """The decisions on file (``{}`` when there are none); :class:`ReviewError` when the file is unusable."""
    path = decisions_path(folder)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ReviewError(f"{path} does not parse ({e}); fix or remove it") from None
    if not isinstance(data, dict) or not all(_is_decision(v) for v in data.values()):
        raise ReviewError(
            f"{path} is not a review decisions file "
            '({augmentation_id: {"decision", "reviewer", "note", "premise_sha", "instance_id", '
            '"revision" (for revise), "history"}})'
        )
    return data


def _is_decision(v: object, *, history: bool = True) -> bool:
    return (
        isinstance(v, dict)
        and v.get("decision") in DECISIONS
        and isinstance(v.get("premise_sha"), str)
        and (v["decision"] != "revise" or isinstance(v.get("revision"), str))
        and (not history or all(_is_decision(h, history=False) for h in v.get("history", [])))
    )


_FIELDS = ("decision", "reviewer", "note", "premise_sha", "instance_id")


def _record(d: dict) -> dict:
    """One decision as stored: the five fields, the revision of a revise decision, and earlier decisions
    of the same id on other texts (``history``: how a premise was removed or revised before)."""
    out = {f: d.get(f, "") for f in _FIELDS}
    if d.get("decision") == "revise":
        out["revision"] = d.get("revision", "")
    if d.get("history"):
        out["history"] = [_record(h) for h in d["history"]]
    return out


def _dump_decisions(decisions: dict[str, dict]) -> str:
    ordered = {k: _record(decisions[k]) for k in sorted(decisions)}
    return json.dumps(ordered, indent=2, ensure_ascii=False) + "\n"


def _read_sheet(sheet: Path) -> tuple[list[str] | None, list[tuple[int, int, list[str]]], list[SheetProblem]]:
    """(header, [(row, line, cells)], problems) of a CSV file; a BOM and a ";" or tab separator
    (spreadsheet exports) are accepted."""
    try:
        text = sheet.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ReviewError(f"{sheet}: no such file") from None
    except UnicodeDecodeError as e:
        raise ReviewSheetError(
            sheet, [SheetProblem(1, None, f"the sheet is not UTF-8 ({e}); save it as CSV UTF-8")]
        ) from None
    # spreadsheets in some locales save CSV with ";" (or tabs): take the header line's separator
    first = text.split("\n", 1)[0]
    delimiter = max((",", ";", "\t"), key=first.count) if first else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    header, records, problems = None, [], []
    row, start = 0, 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            problems.append(SheetProblem(row + 1, None, f"not valid CSV: {e}", start))
            break
        row += 1
        if header is None:
            header = [c.strip() for c in cells]
        else:
            records.append((row, start, cells))
        start = reader.line_num + 1
    return header, records, problems


def _folder_index(rows: dict[str, list[dict]]) -> tuple[dict[str, dict], dict[str, str | None]]:
    """(premises: augmentation id -> {instance_id, sha, premise}, instances: instance id -> augmentation id,
    None for a baseline row) of the folder's rows."""
    premises: dict[str, dict] = {}
    instances: dict[str, str | None] = {}
    for name, records in rows.items():
        for r in records:
            instances[r["id"]] = r.get("augmentation_id") if name != BASELINE else None
            if name != BASELINE:
                premises[r["augmentation_id"]] = {
                    "instance_id": r["id"],
                    "sha": premise_sha(r.get("premise")),
                    "premise": r.get("premise") or "",
                }
    return premises, instances


def _sheet_columns(sheet: Path, header: list[str], problems: list[SheetProblem]) -> dict[str, int]:
    """The index of each column read back (the required ones and ``revised_premise`` when present);
    :class:`ReviewSheetError` when a required column is missing or appears twice."""
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    problems += [SheetProblem(1, c, "missing required column") for c in missing]
    dup_cols = sorted(c for c, n in Counter(header).items() if n > 1 and c in REQUIRED_COLUMNS)
    problems += [SheetProblem(1, c, "column appears more than once") for c in dup_cols]
    if missing or dup_cols:
        raise ReviewSheetError(sheet, problems)
    col = {c: header.index(c) for c in REQUIRED_COLUMNS}
    if "revised_premise" in header:
        col["revised_premise"] = header.index("revised_premise")
    return col


@dataclass
class _SheetCheck:
    """One sheet's check in progress: the folder's premises and instances, the sheet's header and columns,
    the default reviewer, and what the rows gave so far (problems, decisions, revisions, the row of each id,
    counts per decision)."""

    folder: Path
    premises: dict[str, dict]  # augmentation id -> {instance_id, sha, premise}
    instances: dict[str, str | None]  # instance id -> augmentation id (None for baseline)
    header: list[str]
    col: dict[str, int]
    reviewer: str | None
    problems: list[SheetProblem]
    decided: dict[str, dict] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    revisions: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # aid -> (row, line, revised text)


@dataclass
class _SheetRow:
    """One non-blank sheet row: its spreadsheet row, the line where it starts, its cells by column read back,
    and the problem list its problems go to."""

    row: int
    line: int
    get: dict[str, str]
    problems: list[SheetProblem]

    def problem(self, column: str | None, message: str) -> None:
        self.problems.append(SheetProblem(self.row, column, message, self.line))


def _check_row(s: _SheetCheck, row: int, line: int, cells: list[str]) -> None:
    """Check one sheet row against the folder, recording its problems, decision and revision in ``s``."""
    if not any(c.strip() for c in cells):
        return  # blank rows (spreadsheets add them at the end)
    get = {c: (cells[i].strip() if i < len(cells) else "") for c, i in s.col.items()}
    get.setdefault("revised_premise", "")
    r = _SheetRow(row, line, get, s.problems)
    if len(cells) > len(s.header):
        extra = [c for c in cells[len(s.header) :] if c.strip()]
        if extra:
            r.problem(None, f"{len(cells)} cells but the header has {len(s.header)} columns")
    iid, aid = get["instance_id"], get["augmentation_id"]
    raw_decision = get["decision"]
    decision: str | None = raw_decision.lower()
    key = aid or iid
    if key:
        if key in s.seen:
            r.problem("augmentation_id" if aid else "instance_id", f"duplicate of row {s.seen[key]} ({key})")
            return
        s.seen[key] = row
    if decision not in ("", *DECISIONS):
        r.problem("decision", f"{raw_decision!r} is not a decision: use accept, reject, revise or leave it blank")
        decision = None  # keep checking the other fields
    cur = _row_premise(s, r, decision)
    if cur is None:
        return
    _check_revision(s, r, cur, decision)
    if decision == "":
        s.counts["undecided"] += 1
        return
    _record_decision(s, r, cur, decision)


def _row_premise(s: _SheetCheck, r: _SheetRow, decision: str | None) -> dict | None:
    """The folder's premise that row ``r`` decides on, or None (with the row's problem, if any) when its ids
    are empty, unknown or do not match, or when it is a baseline row (context only)."""
    iid, aid = r.get["instance_id"], r.get["augmentation_id"]
    if not iid:
        r.problem("instance_id", "empty")
    elif iid not in s.instances:
        r.problem(
            "instance_id",
            f"unknown instance id {iid!r} (not in {s.folder.name}); was the sheet exported from this folder?",
        )
        return None
    if not aid:
        if iid and s.instances.get(iid) is None:  # a baseline row, context only
            if decision:
                r.problem("decision", f"{iid} is a baseline row (no premise): leave its decision blank")
            return None
        r.problem("augmentation_id", "empty")
        return None
    if aid not in s.premises:
        r.problem("augmentation_id", f"unknown augmentation id {aid!r} (not in {s.folder.name})")
        return None
    cur = s.premises[aid]
    if iid and cur["instance_id"] != iid:
        r.problem("augmentation_id", f"{aid} belongs to instance {cur['instance_id']}, not {iid}")
        return None
    return cur


def _check_revision(s: _SheetCheck, r: _SheetRow, cur: dict, decision: str | None) -> None:
    """Check row ``r``'s ``revised_premise``: a revise decision needs an edited text (kept in
    ``s.revisions`` for the rule checks), and an edited text needs a revise decision."""
    iid, aid, revised = r.get["instance_id"], r.get["augmentation_id"], r.get["revised_premise"]
    if decision == "revise":
        if "revised_premise" not in s.col:
            r.problem("revised_premise", "a revise decision needs the revised_premise column (re-export the sheet)")
        elif not revised:
            r.problem("revised_premise", f"revising {iid} needs the edited premise text")
        elif " ".join(revised.split()) == " ".join(cur["premise"].split()):
            r.problem("revised_premise", f"the revision of {iid} is the premise unchanged: use accept")
        else:
            s.revisions[aid] = (r.row, r.line, revised)
    elif revised and decision is not None:
        r.problem(
            "revised_premise", f"an edited premise needs decision revise (the decision is {decision or 'blank'!r})"
        )


def _record_decision(s: _SheetCheck, r: _SheetRow, cur: dict, decision: str | None) -> None:
    """Check the fields of row ``r``'s decision (the premise's sha, a reviewer, a rejection's note) and,
    for a valid decision value, count it and keep it in ``s.decided``."""
    iid, aid = r.get["instance_id"], r.get["augmentation_id"]
    sha = r.get["premise_sha"]
    if not sha:
        r.problem("premise_sha", f"empty: cannot tell which text of {iid} was reviewed; re-export")
    elif sha != cur["sha"]:
        r.problem("premise_sha", f"premise of {iid} changed since export; re-export")
    who = r.get["reviewer"] or (s.reviewer or "").strip()
    if decision and not who:
        r.problem("reviewer", "a decision needs a reviewer (fill the column, or pass a default reviewer)")
    note = r.get["note"]
    if decision == "reject" and not note:
        r.problem("note", f"rejecting {iid} needs a reason in the note")
    if decision:
        s.counts[decision] += 1
        s.decided[aid] = {
            "decision": decision,
            "reviewer": who,
            "note": note,
            "premise_sha": sha,
            "instance_id": cur["instance_id"],
        }
        if decision == "revise":
            s.decided[aid]["revision"] = r.get["revised_premise"]


def _merge_decisions(existing: dict[str, dict], decided: dict[str, dict]) -> tuple[dict[str, dict], int]:
    """(the decisions on file with this sheet's merged in, how many ids had a different earlier decision);
    an earlier decision on another text (removed or revised before) becomes the new one's history."""
    merged = dict(existing)
    changed = sum(1 for k, v in decided.items() if k in existing and existing[k].get("decision") != v["decision"])
    for aid, d in decided.items():
        old = existing.get(aid)
        if old is not None:
            history = list(old.get("history", []))
            if old["premise_sha"] != d["premise_sha"]:
                history.append({k: v for k, v in old.items() if k != "history"})
            if history:
                d["history"] = history
        merged[aid] = d
    return merged, changed


def import_review(
    sheet: str | Path, folder: str | Path, *, reviewer: str | None = None, config: ValidationConfig | None = None
) -> ReviewDecisions:
    """Check a filled review sheet against ``folder`` and merge its decisions into
    ``<folder>/review/decisions.json``.

    Every problem is collected (bad decision value, unknown or mismatched ids, premise changed since the
    export, duplicate rows, missing columns, a rejection without a note, a decision without a reviewer)
    and raised together as :class:`ReviewSheetError`; then nothing is written. Blank decisions leave any
    decision on file unchanged; a decision for an id already on file replaces it. ``reviewer`` fills blank
    ``reviewer`` cells of decided rows. A ``revise`` row needs ``revised_premise``; the revised texts are
    checked by the rule checks (``config``) with their question's other premises, and a revision that fails
    is a problem of its row naming the rule and its reason.
    """
    sheet, folder = Path(sheet), Path(folder)
    rows = _load_configs(folder, (BASELINE, *PREMISE_CONFIGS))
    existing = load_decisions(folder)  # an unusable decisions file stops the import before anything else
    premises, instances = _folder_index(rows)
    header, sheet_records, problems = _read_sheet(sheet)
    if header is None:
        raise ReviewSheetError(sheet, problems or [SheetProblem(1, None, "the sheet is empty (no header row)")])
    col = _sheet_columns(sheet, header, problems)
    s = _SheetCheck(folder, premises, instances, header, col, reviewer, problems)
    for row, line, cells in sheet_records:
        _check_row(s, row, line, cells)
    if not problems and s.revisions:
        problems += _recheck(rows, s.revisions, config)
    if problems:
        raise ReviewSheetError(sheet, problems)

    merged, changed = _merge_decisions(existing, s.decided)
    path = decisions_path(folder)
    _atomic_write(path, _dump_decisions(merged))
    return ReviewDecisions(
        path=path,
        accepted=s.counts["accept"],
        rejected=s.counts["reject"],
        undecided=s.counts["undecided"],
        decisions=json.loads(_dump_decisions(merged)),
        changed=changed,
        revised=s.counts["revise"],
    )


def _recheck(
    rows: dict[str, list[dict]], revisions: dict[str, tuple[int, int, str]], config: ValidationConfig | None
) -> list[SheetProblem]:
    """Rule checks of the revised texts, each with its question's other premises as they are in the folder."""
    found = folder_premises(rows)
    augs = [
        a.model_copy(update={"statement": revisions[a.id][2]}) if a.id in revisions else a for a in found.augmentations
    ]
    report = run_all_checks(list(found.questions.values()), augs, config or ValidationConfig())
    out, seen = [], set()
    for r in report.rejections:
        words = set(r.reason.replace(",", " ").split())
        for aid in (a for a in revisions if a == r.row_id or a in words):
            if (aid, r.check, r.reason) in seen:
                continue
            seen.add((aid, r.check, r.reason))
            row, line, _ = revisions[aid]
            out.append(
                SheetProblem(
                    row, "revised_premise", f"the revision fails the rule checks: [{r.check}] {r.reason}", line
                )
            )
    return sorted(out, key=lambda p: p.row)


# ---- validation ----------------------------------------------------------------------------------------


def _on_text(d: dict, sha: str) -> tuple[dict | None, bool]:
    """(the decision of id ``d`` (with its history) on the text with ``sha``, whether that text is a
    reviewer's revision)."""
    chain = [d, *reversed(d.get("history", []))]  # newest first
    on = next((x for x in chain if x["premise_sha"] == sha), None)
    revised = any(x["decision"] == "revise" and premise_sha(x.get("revision")) == sha for x in chain)
    return on, revised


def decision_on(d: dict | None, text: str | None) -> dict | None:
    """The decision of one id (``d``, with its history) on the premise text ``text``; None when there is none."""
    return _on_text(d, premise_sha(text))[0] if d else None


@dataclass
class ReviewStatus:
    """Where the manual review of a folder's premises stands (counts over the premises now in the folder,
    except ``removed``: rejected texts no longer in it)."""

    premises: int = 0
    reviewed: int = 0  # accepted, or a reviewer's revision
    revised: int = 0  # the text is a reviewer's revision
    removed: int = 0  # rejected in review and replaced (or dropped) since
    undecided: list[str] = field(default_factory=list)  # augmentation ids without a decision on their text
    pending: list[str] = field(default_factory=list)  # rejected or revised, not yet rebuilt

    def qc_rows(self) -> dict[str, int]:
        """The card's QC rows of the manual review."""
        return {
            "manual review: reviewed": self.reviewed,
            "manual review: revised": self.revised,
            "manual review: removed": self.removed,
            "manual review: undecided": len(self.undecided),
        }


def review_status(decisions: dict[str, dict], premises: dict[str, str]) -> ReviewStatus:
    """The review status of ``premises`` ({augmentation id: text}) under ``decisions``."""
    st = ReviewStatus(premises=len(premises))
    for aid, text in premises.items():
        d = decisions.get(aid)
        on, revised = _on_text(d, premise_sha(text)) if d else (None, False)
        st.revised += revised
        if on is None:
            st.reviewed += revised
            if not revised:
                st.undecided.append(aid)
        elif on["decision"] == "accept":
            st.reviewed += 1
        else:
            st.pending.append(aid)
    for aid, d in decisions.items():
        now = premise_sha(premises[aid]) if aid in premises else None
        st.removed += sum(x["decision"] == "reject" and x["premise_sha"] != now for x in [d, *d.get("history", [])])
    return st


def apply_revisions(decisions: dict[str, dict], texts: dict[str, str]) -> dict[str, str]:
    """{augmentation id: revised text} for each premise of ``texts`` that a reviewer revised (a revision of
    a revision is followed to the last one)."""
    out = {}
    for aid, text in texts.items():
        d = decisions.get(aid)
        if d is None:
            continue
        current = text
        for _ in range(1 + len(d.get("history", []))):
            on, _rev = _on_text(d, premise_sha(current))
            if on is None or on["decision"] != "revise":
                break
            current = on["revision"]
        if current != text:
            out[aid] = current
    return out


def review_rejections(folder: str | Path, rows: dict[str, list[dict]] | None = None) -> list[Rejection]:
    """``manual_review`` rejections of a folder: premises rejected in review still in it, revisions not yet
    put in place by a rebuild, and stale decisions (an accepted or revised premise changed, or gone, since
    the review). A rejected premise replaced since is no rejection (it was removed; its replacement is
    undecided). ``[]`` when there is no decisions file.

    ``rows`` are the folder's rows per config (as ``validation.folder.load_rows``), read when not given.
    """
    folder = Path(folder)
    path = decisions_path(folder)
    if not path.exists():
        return []
    where = f"{REVIEW_DIR}/{DECISIONS_FILE}"
    try:
        decisions = load_decisions(folder)
    except ReviewError as e:
        return [Rejection(where, CHECK, str(e))]
    if rows is None:
        rows = read_rows(folder)
    current = {r["augmentation_id"]: r for n in PREMISE_CONFIGS for r in rows.get(n, []) if r.get("augmentation_id")}
    out = []
    for aid in sorted(decisions):
        d = decisions[aid]
        r = current.get(aid)
        if r is None:
            if d["decision"] != "reject":
                out.append(
                    Rejection(
                        d.get("instance_id") or aid,
                        CHECK,
                        f"decision is stale: augmentation {aid} is no longer in the folder",
                    )
                )
            continue
        on, revised = _on_text(d, premise_sha(r.get("premise")))
        if on is None:
            if not revised and d["decision"] != "reject":
                out.append(Rejection(r["id"], CHECK, "decision is stale: premise changed after review"))
        elif on["decision"] == "reject":
            out.append(
                Rejection(r["id"], CHECK, f"rejected in review by {on.get('reviewer', '')}: {on.get('note', '')}")
            )
        elif on["decision"] == "revise":
            out.append(
                Rejection(
                    r["id"],
                    CHECK,
                    f"revised in review by {on.get('reviewer', '')}: rebuild the folder to put the revision in place",
                )
            )
    return out

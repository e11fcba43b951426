"""Submitter text (issue 26, item 1): model name, revision, link, submitted-by, notes and every other string of a
result are checked on entry (`submit`, `score`, `push-results`) and escaped wherever they are rendered (the results
repo's card, the Markdown leaderboard and report, the HTML page). The card is rendered with a real Markdown
renderer (markdown-it, raw HTML allowed as on the Hub) and read back as a DOM."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from phr.cli import app
from phr.eval.report import render_report
from phr.eval.results import read_result_file
from phr.eval.submission import SubmissionError, load_meta
from phr.hub.local import LocalHub, commit_files
from phr.leaderboard.page import render_html, render_markdown
from phr.leaderboard.repo import render_card

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
HEADING = "v1\n\n# injected heading\n"


def result(model: str = "org/model", **fields) -> dict:
    return {
        "schema_version": 2,
        "model": model,
        "revision": "abc1234",
        "run_id": "run1",
        "dataset": {"id": "org/phrbench", "revision": "v0.1.0"},
        "metrics": {"accuracy_b": 0.7, "accuracy_bt": 0.72, "accuracy_bh": 0.4},
        "date": "2025-06-01",
        **fields,
    }


class _Dom(HTMLParser):
    """The tags of an HTML text, and the text of its headings and table rows."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[str] = []
        self.headings: list[str] = []
        self.rows: list[list[str]] = []
        self._heading: list[str] | None = None
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag in ("h1", "h2", "h3"):
            self._heading = []
        elif tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("h1", "h2", "h3") and self._heading is not None:
            self.headings.append("".join(self._heading))
            self._heading = None
        elif tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        for part in (self._heading, self._cell):
            if part is not None:
                part.append(data)


def rendered(markdown: str) -> _Dom:
    """The card as the Hub shows it: CommonMark with tables, raw HTML passed through."""
    body = markdown.split("\n---\n", 1)[-1]  # the YAML header is metadata, not shown
    return _Dom(MarkdownIt("commonmark", {"html": True}).enable("table").render(body))


def assert_inert(dom: _Dom, columns: int | None = None) -> None:
    """No tag, heading or table cell made of submitter text."""
    assert not {"script", "img", "b"} & set(dom.tags), dom.tags
    assert not any("injected" in h for h in dom.headings), dom.headings
    assert columns is None or all(len(row) == columns for row in dom.rows), dom.rows


# ---- escaped where rendered (results committed before these checks, or edited by hand) ------------------------


HOSTILE = result(
    SCRIPT,
    revision=HEADING,
    date=IMG,
    run_id="hostile",
    dataset={"id": "evil/x)<b>bold</b>", "revision": "v1\n# injected heading"},
)


def test_card_of_hostile_results_is_inert_markdown():
    card = render_card([result(), HOSTILE], repo_id="org/results")
    dom = rendered(card)
    assert_inert(dom, columns=len(dom.rows[0]))
    assert len(dom.rows) == 3  # header + two results: no row split by a line break or a '|'
    hostile_row = next(r for r in dom.rows if "script" in r[1])
    date = dom.rows[0].index("Date")
    assert hostile_row[1] == SCRIPT and hostile_row[2] == " ".join(HEADING.splitlines()) and hostile_row[date] == IMG
    assert "[evil/x" not in card and "evil/x\\)&lt;b&gt;bold&lt;/b&gt;" in card  # no link made of a non-repo id
    assert "[org/phrbench](https://huggingface.co/datasets/org/phrbench)" in card


def test_leaderboard_markdown_and_report_render_hostile_text_inert():
    dom = rendered(render_markdown([result(), HOSTILE]))
    assert_inert(dom, columns=len(dom.rows[0]))
    assert len(dom.headings) == 1
    page, clean = _Dom(render_html([result(), HOSTILE])).tags, _Dom(render_html([result(), result("org/b")])).tags
    assert [page.count(t) for t in ("script", "img", "b")] == [clean.count(t) for t in ("script", "img", "b")]
    report = read_result_file(FIXTURES / "results_v1" / "results.json").model_copy(
        update={"model": SCRIPT, "revision": "r`1` <b>x</b>\n# injected heading"}
    )
    dom = rendered(render_report(report))
    assert_inert(dom)
    assert dom.headings[0] == f"PHRBench results: {SCRIPT}"


def test_a_hand_edited_hostile_result_in_the_results_repo_is_escaped_by_the_next_push(tmp_path, mini_folder):
    from tests.support.scored import scored_result

    hub = tmp_path / "hub"
    args = ["--repo", "org/results", "--hub", str(hub), "--dataset", str(mini_folder)]
    good = scored_result(tmp_path / "good", mini_folder, "org/m")
    r = CliRunner().invoke(app, ["push-results", str(good), *args])
    assert r.exit_code == 0, r.output
    # someone commits a hostile result by hand (not through push-results)
    edited = {"results/script--alert--1--script/hostile.json": json.dumps(HOSTILE).encode()}
    commit_files(LocalHub(hub), "org/results", "dataset", edited, message="hand edit", replace=False, create=False)
    other = scored_result(tmp_path / "other", mini_folder, "org/other", wrong_if=lambda n: n % 2 == 0, run_id="run2")
    r = CliRunner().invoke(app, ["push-results", str(other), *args])
    assert r.exit_code == 0, r.output
    card = (hub / "datasets" / "org" / "results" / "README.md").read_text()
    dom = rendered(card)
    assert len(dom.rows) == 4 and "&lt;script&gt;alert\\(1\\)&lt;/script&gt;" in card
    assert "unverified" in dom.rows[-1][1]  # hand-committed: no evidence, shown unverified and unranked
    assert_inert(dom, columns=len(dom.rows[0]))


# ---- checked on entry ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields,problem",
    [
        ({"model": SCRIPT}, "model: must be a Hub model id (NAME or ORG/NAME) or a model spec PROVIDER:MODEL"),
        ({"model": "hf:../../x"}, "model: must not hold '..' (a path out of a folder, not a model), got 'hf:../../x'"),
        ({"model": "local:.."}, "model: must not hold '..' (a path out of a folder, not a model), got 'local:..'"),
        ({"model": "hf:org/a..b"}, "model: must not hold '..'"),
        ({"revision": HEADING}, "revision: must be a git revision (a commit hash, tag or branch"),
        ({"revision": "<b>1</b>"}, "revision: must be a git revision"),
        ({"submitted_by": IMG}, "submitted_by: must be plain text (no '<' or '>': no HTML)"),
        ({"notes": "fine\n# injected heading"}, "notes: must be one line of text (no line breaks"),
        ({"source_url": "javascript:alert(1)"}, "source_url: must be an http(s) URL"),
        ({"date": IMG}, "date: must be an ISO date or date-time"),
        ({"date": "![](https://evil.example/x.png)"}, "date: must be an ISO date or date-time (2025-06-01, "),
        ({"date": "June 2025"}, "date: must be an ISO date or date-time"),
        ({"dataset": {"id": "org/d\n# x", "revision": "v1"}}, "dataset.id: must be a Hub dataset repo id ORG/NAME"),
        ({"dataset": {"id": "[x](javascript:alert(1))", "revision": "v1"}}, "dataset.id: must be a Hub dataset repo"),
        ({"dataset": {"id": "local/my data", "revision": "v1"}}, "dataset.id: must be a Hub dataset repo id"),
        ({"dataset": {"id": "org/d", "revision": "![](https://e.example/x.png)"}}, "dataset.revision: must be a git"),
        ({"dataset": {"id": "org/d", "revision": "sha256:not-hex"}}, "dataset.revision: must be a git revision"),
        ({"leaderboard_label": SCRIPT}, "leaderboard_label: must be plain text"),  # a further top-level key
    ],
)
def test_push_results_refuses_hostile_submitter_text_and_writes_nothing(tmp_path, fields, problem):
    path, output = push_refused(tmp_path, fields)
    assert f"error: {path}: refused, its submitter text is not safe to publish: {problem}" in output
    assert "Traceback" not in output


def push_refused(tmp_path, fields) -> tuple[Path, str]:
    """``push-results`` of a result with ``fields`` to a local hub exits 2 and makes no results repo; (the result
    file, what it said)."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result(**fields)))
    hub = tmp_path / "hub"
    r = CliRunner().invoke(app, ["push-results", str(path), "--repo", "org/results", "--hub", str(hub)])
    assert r.exit_code == 2, r.output
    assert not (hub / "datasets" / "org" / "results").exists()
    return path, r.output


def test_results_eval_writes_are_accepted_on_entry(tmp_path):
    """Model specs as `eval phrbench` records them, revisions as providers report them."""
    from phr.eval.results import entry_problems, read_result

    for model in ("local:smollm2", "hf:Qwen/Qwen2.5-0.5B-Instruct@main", "openai-compatible:http://h:8000/v1#m"):
        assert entry_problems(read_result(result(model, revision="30fc7cc64f0d"))) == []
    assert entry_problems(read_result_file(FIXTURES / "results_v1" / "results.json")) == []


@pytest.mark.parametrize(
    "option,value,problem",
    [
        ("--model-revision", SCRIPT, "field 'revision' must be a git revision"),
        ("--model-revision", HEADING, "field 'revision' must be a git revision"),
        ("--submitted-by", IMG, "field 'submitted_by' must be plain text (no '<' or '>': no HTML)"),
        ("--notes", "a\n# injected heading", "field 'notes' must be one line of text"),
        ("--model", SCRIPT, "field 'model' must be a Hub model id"),
        ("--link", 'https://example.org/"><script>x</script>', "field 'link' must be an http(s) URL without spaces"),
        ("--submitted-by", "Alice \u202egnp.exe", "field 'submitted_by' must be one line of text"),
    ],
)
def test_submit_refuses_hostile_metadata_before_anything_runs(tmp_path, option, value, problem):
    sub = tmp_path / "sub.jsonl"
    sub.write_text("")
    hub = tmp_path / "hub"
    args = ["submit", str(sub), "--model", "org/m", "--model-revision", "v1", option, value]
    r = CliRunner().invoke(app, [*args, "--scorer", "none", "--repo", "org/results", "--hub", str(hub)])
    assert r.exit_code == 2, r.output
    assert f"error: submission metadata: {problem}" in r.output and "Traceback" not in r.output
    assert not hub.exists() and not (tmp_path / "sub.scored").exists()


def test_sidecar_metadata_is_checked_like_the_options(tmp_path):
    meta = tmp_path / "sub.meta.json"
    meta.write_text(json.dumps({"model": "org/m", "revision": "v1", "submitted_by": IMG}))
    with pytest.raises(SubmissionError, match="field 'submitted_by' must be plain text"):
        load_meta(meta)
    meta.write_text(json.dumps({"model": "org/m", "revision": "v1", "submitted_by": "Alice (ACME lab)", "notes": "ok"}))
    assert load_meta(meta).submitted_by == "Alice (ACME lab)"


# ---- the issue's strings (issue 32, item 4): refused on entry, inert where a hand-committed result shows them -----

EVIL_DATE = "![](https://evil.example/x.png)"
EVIL_ID = "[x](javascript:alert(1))"
EVIL_REVISION = "[r](https://evil.example/r)"
EVIL_MODEL = "![m](https://evil.example/m.png)[m](javascript:alert(2))"


class _Live(HTMLParser):
    """Every link target and image source of an HTML text."""

    def __init__(self, text: str):
        super().__init__()
        self.hrefs: list[str] = []
        self.srcs: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if tag == "a":
            self.hrefs.append(values.get("href") or "")
        elif tag == "img":
            self.srcs.append(values.get("src") or "")


def _html(markdown: str) -> str:
    """Markdown as the Hub shows it (raw HTML on), with markdown-it's own filter of javascript: links turned off:
    what is checked is that no link is made at all, not that the renderer drops a bad one."""
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    md.validateLink = lambda url: True
    return md.render(markdown.split("\n---\n", 1)[-1])


def assert_nothing_live(html_text: str) -> None:
    live = _Live(html_text)
    assert not any("javascript:" in u or "//evil" in u for u in live.hrefs + live.srcs), (live.hrefs, live.srcs)
    assert all(s.startswith("data:image/png;base64,") for s in live.srcs), live.srcs
    assert "<img" not in html_text.replace('<img alt="Figure', "")  # the page's own figures only


def _committed_by_hand(**fields):
    """A result as someone could commit it into a results repo: built directly, no entry checks."""
    from phr.eval.results import Result

    data = result(EVIL_MODEL, date=EVIL_DATE, run_id="evil", **fields)
    data["dataset"] = {"id": EVIL_ID, "revision": EVIL_REVISION}
    return Result.model_validate(data)


@pytest.mark.parametrize(
    "fields,field",
    [
        ({"date": EVIL_DATE}, "date"),
        ({"dataset": {"id": EVIL_ID, "revision": "v1"}}, "dataset.id"),
        ({"dataset": {"id": "org/phrbench", "revision": EVIL_REVISION}}, "dataset.revision"),
    ],
)
def test_push_results_refuses_the_issue_strings_in_one_line(tmp_path, fields, field):
    path, output = push_refused(tmp_path, fields)
    lines = output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: refused") and f": {field}: must be " in lines[0]


def test_what_eval_writes_for_a_folder_and_the_hub_is_accepted():
    from phr.eval.results import entry_problems, read_result

    for dataset in ({"id": "local/phrbench-mini_1.0", "revision": "sha256:e68827942dd3"},
                    {"id": "ORG/phrbench", "revision": "0123456789abcdef0123456789abcdef01234567"},
                    {"id": "ORG/phrbench", "revision": "v0.1.0"}):  # fmt: skip
        for date in ("2025-06-01", "2025-06-01T12:30:00+00:00", "2025-06-01T12:30:00Z", None):
            assert entry_problems(read_result(result(dataset=dataset, date=date))) == [], (dataset, date)


def test_the_issue_strings_committed_by_hand_render_inert_everywhere(tmp_path):
    from phr.leaderboard.report import build_report, render_report_markdown

    evil, clean = _committed_by_hand(), read_result_file(FIXTURES / "results_v1" / "results.json")
    card = render_card([result(), evil], repo_id="org/results")
    html_card = _html(card)
    assert_nothing_live(html_card)
    first = html_card.split("<p>", 1)[1].split("</p>", 1)[0]  # the card's first paragraph names the datasets
    assert EVIL_ID in first and '<a href="https://huggingface.co/datasets/org/phrbench">org/phrbench</a>' in first
    dom = rendered(card)
    row = next(r for r in dom.rows if r[1].startswith("![m]"))
    assert row[1] == EVIL_MODEL and row[dom.rows[0].index("Date")] == EVIL_DATE  # shown as written, not rendered

    board = render_markdown([result(), evil])
    assert_nothing_live(_html(board))
    footer = _html(board).rsplit("<p>", 1)[1]  # the datasets, under the table
    assert f"{EVIL_ID} ({EVIL_REVISION})" in footer
    # the cross-model report and eval's report.md of one run: a result with tables, the same strings
    dataset = clean.dataset.model_copy(update={"id": EVIL_ID, "revision": EVIL_REVISION})
    tabled = clean.model_copy(update={"model": EVIL_MODEL, "date": EVIL_DATE, "dataset": dataset})
    report = _html(render_report_markdown(build_report([clean, tabled])))
    assert_nothing_live(report)
    assert EVIL_MODEL in report
    single = _html(render_report(tabled))
    assert_nothing_live(single)
    assert EVIL_MODEL in single and EVIL_ID in single

    page, plain = render_html([result(), evil]), render_html([result(), result("org/b")])
    assert_nothing_live(page)
    counts = [(len(_Live(p).hrefs), len(_Live(p).srcs)) for p in (page, plain)]
    assert counts[0] == counts[1]  # the same links and figures as a page of clean results


def test_a_local_dataset_name_is_not_linked_to_the_hub():
    card = render_card([result(dataset={"id": "local/phrbench", "revision": "sha256:e68827942dd3"})])
    assert "huggingface.co/datasets/local" not in card and "Scored submissions to local/phrbench:" in card

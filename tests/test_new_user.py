"""What a new user hit (issue 9, section 8): help text, clear errors for missing inputs, no leftovers, the card."""

import json
import os
from pathlib import Path

import yaml
from rich.console import Console
from typer.testing import CliRunner

from phr.bench.instance import COLUMN_NAMES
from phr.cards.phrbench_card import LICENSE_FILE, PAPER_TITLE
from phr.cli import app
from phr.config.ops import PushResultsConfig
from phr.llm.summary import RunSummary
from tests.support.cli import run

ROOT = Path(__file__).resolve().parents[1]


def test_help_shows_no_type_placeholders_on_flags_and_plain_argument_names():
    for args in (["validate", "--help"], ["build", "phrbench", "--help"], ["push", "--help"], ["pull", "--help"]):
        r = CliRunner().invoke(app, args, env={"COLUMNS": "120"})
        assert r.exit_code == 0, r.output
        assert "<bool>" not in r.output and "{" not in r.output.splitlines()[0], r.output
    usage = CliRunner().invoke(app, ["validate", "--help"]).output.splitlines()[0]
    assert usage.endswith("validate [OPTIONS] FOLDER")  # required (it may come from --config, but it is required)
    for args, tail in ((["report", "--help"], "report [OPTIONS] RESULTS..."), (["score", "--help"], " SUBMISSION")):
        usage = CliRunner().invoke(app, args).output.splitlines()[0]
        assert usage.endswith(tail) and "{" not in usage, usage


def _commands(group, path=()):
    """Every command of the CLI: (its words, the click command)."""
    import click

    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if hasattr(cmd, "list_commands"):
            yield from _commands(cmd, (*path, name))
        else:
            yield (*path, name), cmd


def test_a_required_argument_is_shown_required_in_every_usage_line():
    """`repair --help` showed its required ORG/NAME as optional ([ORG/NAME]): in --help and in a usage error,
    an argument the command's config requires is shown plainly, an optional one in brackets."""
    from typer.main import get_command

    usage = CliRunner().invoke(app, ["repair", "--help"]).output.splitlines()[0]
    assert usage == "Usage: phr-publish repair [OPTIONS] ORG/NAME", usage
    wrong = CliRunner().invoke(app, ["repair", "--no-such-flag"])
    assert wrong.exit_code == 2 and "Usage: phr-publish repair [OPTIONS] ORG/NAME\n" in wrong.stderr, wrong.stderr
    seen = 0
    for words, cmd in _commands(get_command(app)):
        cls = getattr(cmd.callback, "config_class", None)
        if cls is None or not cls.arguments:
            continue
        line = CliRunner().invoke(app, [*words, "--help"]).output.splitlines()[0]
        for name in cls.arguments:
            [param] = [p for p in cmd.params if p.name == name]
            shown = param.metavar
            required = cls.model_fields[name].is_required()
            assert (f" {shown}" in line and f"[{shown}]" not in line) == required, (words, line)
            seen += required
    assert seen >= 8  # push, pull, repair, validate, score, submit, push-results, report, eval merge / score, ...


def test_validate_a_missing_folder_says_so(tmp_path):
    r = run("validate", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and r.stderr.strip() == f"error: no such folder: {tmp_path / 'nowhere'}"
    assert "Traceback" not in r.stderr and "rejection" not in r.stderr + r.stdout


def test_score_a_missing_submission_names_the_file_first(tmp_path, mini_folder):
    missing = tmp_path / "nothing.jsonl"
    r = CliRunner().invoke(app, ["score", str(missing), "--dataset", str(mini_folder), "--scorer", "none"])
    assert r.exit_code == 2 and f"no such submission file: {missing}" in r.output
    assert "meta" not in r.output.lower()


def test_leaderboard_from_a_repo_leaves_no_temporary_folder(tmp_path, monkeypatch, mini_folder):
    from phr.core.parquet import write_parquet  # noqa: F401 (the repo is pushed with the real writer below)
    from phr.leaderboard.repo import push_results
    from tests.support.scored import scored_result

    result = scored_result(tmp_path / "scored", mini_folder, "org/m")
    hub = tmp_path / "hub"
    push_results(PushResultsConfig(results=[result], repo="org/results", hub=hub, datasets=[str(mini_folder)]))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    r = CliRunner().invoke(
        app, ["leaderboard", "--repo", "org/results", "--hub", str(hub), "--out", str(tmp_path / "lb")]
    )
    assert r.exit_code == 0, r.output
    assert (tmp_path / "lb" / "leaderboard.md").is_file()
    assert list(scratch.iterdir()) == []


def test_dataset_card_names_its_license_features_limitations_and_the_paper(mini_folder):
    text = (mini_folder / "README.md").read_text()
    meta = yaml.safe_load(text.split("---")[1])
    assert meta["license"] == "other" and meta["license_name"] and meta["license_link"] == LICENSE_FILE
    assert (mini_folder / LICENSE_FILE).is_file() and "| mmlu |" in (mini_folder / LICENSE_FILE).read_text()
    infos = {i["config_name"]: i for i in meta["dataset_info"]}
    assert set(infos) == {"baseline", "truthful", "hallucinated", "all"}
    assert [f["name"] for f in infos["all"]["features"]] == list(COLUMN_NAMES)
    assert {"name": "options", "list": "string"} in infos["all"]["features"]
    assert "## Limitations" in text and PAPER_TITLE in text and "not recorded in this card" in text


def test_run_summary_counts_responses_and_batches_apart():
    s = RunSummary()
    m = s.model("local:smollm2")
    m.samples, m.batches = 20, 3
    con = Console(record=True, width=160)
    s.print(con)
    out = con.export_text()
    assert "responses" in out and "20" in out and "3 batches" in out and "calls" in out
    assert s.responses == 20 and s.batches == 3 and s.calls == 0
    assert json.loads(json.dumps(s.as_dict()))["local:smollm2"]["batches"] == 3


def test_default_outputs_are_ignored_by_git():
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert "/runs/" in ignored and "/leaderboard/" in ignored  # anchored: phr/leaderboard/ is code
    assert "/runs-hr1/" in ignored  # eval hr1's default output


def test_setup_script_says_what_it_installs():
    script = (ROOT / "scripts" / "setup.sh").read_text()
    assert (
        "--quiet" not in script
        and "step " in script
        and "1/3" in script
        and os.access(ROOT / "scripts" / "setup.sh", os.R_OK)
    )

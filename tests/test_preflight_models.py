"""The preflight checks everything a run will load or call, in every role, before the first call (issue 25,
item 2): an ``hf:`` scorer / judge / grader that is neither installed nor downloadable is a problem of the dry
run; a recipe's missing sources are all reported at once."""

from __future__ import annotations

import shutil

from typer.testing import CliRunner

from phr.cli import app
from tests.support.hf_cache import install_snapshot, use_cache
from tests.support.hub_server import HubServer

runner = CliRunner()
PAPER_SCORER = "Qwen/Qwen2.5-7B-Instruct"


def cli(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_paper_preset_dry_run_names_the_scorer_that_is_not_installed(fake_openai, mini_folder, tmp_path, monkeypatch):
    """`eval phrbench --preset paper --dry-run` without the paper's scorer installed (downloads off): exit 2, the
    scorer named, nothing generated or called. Installed (a snapshot in the HF cache): the dry run passes."""
    srv = fake_openai()
    use_cache(monkeypatch, tmp_path / "hf")  # an empty Hugging Face cache
    monkeypatch.chdir(tmp_path)
    args = ["eval", "phrbench", "--preset", "paper", "--model", "openai:gpt-4o", "--dataset", mini_folder]
    r = cli(*args, "--dry-run")
    assert r.exit_code == 2, r.output
    assert "preflight found 1 problem(s); nothing was called" in r.output
    assert f"scorer hf:{PAPER_SCORER}: model '{PAPER_SCORER}' is not installed" in r.output
    assert "downloads are off (HF_HUB_OFFLINE)" in r.output
    r = cli(*args, "--limit", 1)  # the run itself stops at the same preflight: nothing generated
    assert r.exit_code == 2 and f"scorer hf:{PAPER_SCORER}" in r.output
    assert srv.server.count == 0 and not (tmp_path / "runs").exists()

    install_snapshot(tmp_path / "hf", PAPER_SCORER)
    r = cli(*args, "--dry-run")
    assert r.exit_code == 0 and "dry run: all checks passed" in r.output, r.output


def test_every_role_is_checked_and_a_hub_that_has_the_model_passes(fake_openai, mini_folder, tmp_path, monkeypatch):
    """Judge and grader are checked like the scorer; a local folder without config.json is named; with downloads
    on, a model the Hub ($HF_ENDPOINT) has passes (downloaded on first use), one it lacks is a problem."""
    fake_openai()
    use_cache(monkeypatch, tmp_path / "hf")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty-model").mkdir()
    args = ["eval", "phrbench", "--model", "openai:gpt-4o", "--dataset", mini_folder, "--dry-run"]
    r = cli(*args, "--scorer", "hf:org/scorer", "--judge", "hf:org/judge", "--grader", f"hf:{tmp_path / 'empty-model'}")
    assert r.exit_code == 2 and "preflight found 3 problem(s)" in r.output, r.output
    assert "scorer hf:org/scorer: model 'org/scorer' is not installed" in r.output
    assert "judge hf:org/judge: model 'org/judge' is not installed" in r.output
    assert f"{tmp_path / 'empty-model'} has no config.json (not a transformers model folder)" in r.output

    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # downloads on (the client reads it at import)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with HubServer(tokens={"hf_test": "org"}, orgs={"org": ["org"]}) as hub:
        from huggingface_hub import HfApi

        api = HfApi(endpoint=hub.url, token="hf_test")
        api.create_repo("org/scorer")
        api.upload_file(path_or_fileobj=b"{}", path_in_repo="config.json", repo_id="org/scorer")
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        r = cli(*args, "--scorer", "hf:org/scorer", "--judge", "hf:org/judge")
    assert r.exit_code == 2 and "preflight found 1 problem(s)" in r.output, r.output
    assert "judge hf:org/judge: model 'org/judge' is not installed: it is not in the Hugging Face cache and the Hub " \
        "cannot serve it (RepositoryNotFoundError" in r.output  # fmt: skip
    assert "hf:org/scorer" not in r.output.split("problem(s)")[1]


def test_build_dry_run_lists_every_missing_source_at_once(fake_openai, tmp_path, monkeypatch):
    """The paper recipe with bbbp, ChemBench and GPQA missing: one report naming all three (not one per run);
    ChemBench's text offers no `pip install` (no offline package exists)."""
    from tests.support.paper_fixtures import write_sources

    srv = fake_openai()
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    write_sources(tmp_path / "src")
    for gone in ("bbbp", "chembench", "gpqa"):
        shutil.rmtree(tmp_path / "src" / gone)
    out = tmp_path / "pb"
    r = cli("build", "phrbench", "--recipe", "paper", "--source-dir", tmp_path / "src", "--out", out, "--dry-run")
    assert r.exit_code == 2, r.output
    assert "preflight found 3 problem(s); nothing was called" in r.output
    problems = [ln for ln in r.output.splitlines() if ln.startswith("  - ")]
    assert [p.split(":")[0] for p in problems] == ["  - source bbbp", "  - source chembench", "  - source gpqa"]
    chembench = r.output[r.output.index("source chembench") : r.output.index("source gpqa")]
    assert "no offline package is known for ChemBench" in chembench and "pip install" not in chembench
    assert "Supply it one of 2 ways" in chembench
    assert srv.server.count == 0 and not out.exists()

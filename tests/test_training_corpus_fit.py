"""A training preflight compares the corpus with the recipe (issue 25, item 3): a mini / smoke corpus under a
recipe that trains a real model, or fewer rows than the recipe's data.limit, is a problem unless
--set data.allow_smaller=true (then printed, and recorded in training_manifest.json)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from phr.cli import app
from tests.support.hf_cache import install_snapshot, use_cache

runner = CliRunner()
PAPER = ["train", "grpo", "--stage", "1", "--config", "paper-qwen2.5-3b-stage1", "--set", "trainer.use_vllm=false"]


def cli(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def in_folder(tmp_path, monkeypatch):
    """The README's order: the no-argument builds write hr1-grpo/ and hr1-sft/ (preset mini) in the cwd."""
    monkeypatch.chdir(tmp_path)
    for kind in ("hr1-grpo", "hr1-sft"):
        r = cli("build", kind)
        assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "hr1-grpo" / "manifest.json").read_text())["preset"] == "mini"
    return tmp_path


def test_the_paper_recipe_on_the_mini_corpus_names_the_mismatch(in_folder, fake_openai, monkeypatch):
    srv = fake_openai()
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-test-0123456789")
    install_snapshot(use_cache(monkeypatch, in_folder / "hf"), "Qwen/Qwen2.5-3B-Instruct")
    r = cli(*PAPER, "--dry-run")
    assert r.exit_code == 2, r.output
    assert "preflight found 2 problem(s)" in r.output
    assert (
        "data.path hr1-grpo: a 'mini' corpus (manifest.json preset; 14 rows) for the smoke model, under a recipe "
        "that trains Qwen/Qwen2.5-3B-Instruct" in r.output
    )
    assert "data.path hr1-grpo: 14 train rows, fewer than the recipe's data.limit 1536" in r.output
    assert "--set data.allow_smaller=true" in r.output and "all checks passed" not in r.output
    r = cli(*PAPER)  # the run stops at the same check: nothing loaded, nothing written
    assert r.exit_code == 2 and "fewer than the recipe's data.limit 1536" in r.output
    assert not (in_folder / "runs").exists() and srv.server.count == 0

    allowed = cli(*PAPER, "--set", "data.allow_smaller=true", "--dry-run")
    assert allowed.exit_code == 0, allowed.output
    warnings = [ln for ln in allowed.output.splitlines() if ln.startswith("warning: ")]
    assert len(warnings) == 2 and all("(data.allow_smaller: true; recorded in training_manifest.json)" in w
                                      for w in warnings)  # fmt: skip


def test_the_paper_recipe_names_a_base_model_that_is_not_installed(in_folder, monkeypatch):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-test-0123456789")
    use_cache(monkeypatch, in_folder / "hf")  # empty
    r = cli(*PAPER, "--set", "data.allow_smaller=true", "--dry-run")
    assert r.exit_code == 2, r.output
    assert "model.name_or_path Qwen/Qwen2.5-3B-Instruct: model 'Qwen/Qwen2.5-3B-Instruct' is not installed" in r.output


@pytest.mark.parametrize(
    "command",
    [("grpo", "--config", "tiny-stage1"), ("grpo", "--config", "smoke-stage1"), ("sft", "--config", "tiny-sft")],
)
def test_the_smoke_recipes_pass_on_the_mini_corpus(in_folder, command):
    r = cli("train", *command, "--dry-run")
    assert r.exit_code == 0 and "all checks passed" in r.output, r.output
    assert "warning:" not in r.output


def test_the_library_refuses_it_too_and_records_what_was_allowed(in_folder):
    """train_grpo's own check (without the CLI), and the smaller_corpus record of training_manifest.json."""
    from phr.core.errors import UsageError
    from phr.training.config import load_recipe
    from phr.training.run import artifacts, check_prerequisites

    small = {"data": {"path": "hr1-grpo", "limit": 100}}
    with pytest.raises(UsageError, match="14 train rows, fewer than the recipe's data.limit 100"):
        check_prerequisites(load_recipe("tiny-stage1", **small))
    recipe = load_recipe("tiny-stage1", data={"path": "hr1-grpo", "limit": 100, "allow_smaller": True})
    check_prerequisites(recipe)
    data = {"path": "hr1-grpo", "name": "hr1-grpo", "folder_sha256": "0" * 64, "rows": 14}
    arts = artifacts(recipe, base_model="tiny", start_from="tiny", data=data, reward=None, args=recipe.trl_config())
    assert arts.manifest["recipe"]["data"]["allow_smaller"] is True
    assert arts.manifest["smaller_corpus"] == [
        "data.path hr1-grpo: 14 train rows, fewer than the recipe's data.limit 100"
    ]

"""A dry run checks before it loads (issue 33, item 4): every missing key, source, output and model in one list;
no model is converted or loaded to plan; in-process generation is sized (a rough time, a warning past an hour)."""

from __future__ import annotations

import pytest

from phr.api import plan
from phr.config.ops import EvalPhrbenchConfig
from phr.core.settings import HOME_ENV, MODELS_ENV
from tests.support.cli import invoke


def test_the_paper_build_dry_run_lists_keys_output_and_every_source_at_once(tmp_path):
    (tmp_path / "phrbench").mkdir()
    r = invoke("build", "phrbench", "--recipe", "paper", "--dry-run", cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    problems = [line for line in (r.stdout + r.stderr).splitlines() if line.startswith("  - ")]
    text = "\n".join(problems)
    assert "generator openai:gpt-4o: needs an API key" in text and "judge google:" in text
    assert f"--out phrbench: {tmp_path / 'phrbench'} already exists (pass --overwrite to replace it)" in text
    sources = [p for p in problems if p.startswith("  - source ")]
    assert {s.split(":")[0].removeprefix("  - source ") for s in sources} >= {"chembench", "gpqa", "medmcqa", "sciq"}


def test_a_paper_eval_dry_run_with_a_missing_scorer_loads_no_model(tmp_path, mini_folder, monkeypatch):
    home = tmp_path / "home"  # a fresh home: SmolLM2 has never been converted into it
    monkeypatch.setenv(HOME_ENV, str(home))
    monkeypatch.delenv(MODELS_ENV, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = invoke("eval", "phrbench", "--preset", "paper", "--model", "local:smollm2", "--dataset", mini_folder,
               "--dry-run", env={HOME_ENV: str(home), "HF_HUB_OFFLINE": "1"})  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr
    assert "scorer hf:Qwen/Qwen2.5-7B-Instruct" in r.stdout + r.stderr
    assert "max_tokens" not in r.stderr  # the output limit was read without the model (GGUF metadata)
    assert "loading local:smollm2" not in r.stderr and not (home / "models").exists()


def test_a_local_model_plan_says_roughly_how_long_and_warns_past_an_hour(mini_folder, tmp_path, monkeypatch):
    monkeypatch.setenv("PHR_CACHE", str(tmp_path / "calls.sqlite"))  # empty: the nominal rate
    p = plan(EvalPhrbenchConfig(model="local:smollm2", dataset=str(mini_folder), samples=10))
    u = p.preflight.usage["local:smollm2"]
    assert u.seconds == pytest.approx(u.completion_tokens / 20.0)  # the nominal CPU rate, nothing cached
    lines = p.lines()
    line = next(x for x in lines if x.startswith("  local:smollm2:"))
    assert "of generation here at ~20 tokens/s (nominal for a CPU)" in line
    assert any(x.startswith("warning: local:smollm2: about ") and "more than 1 hour" in x for x in lines)
    small = plan(EvalPhrbenchConfig(model="local:smollm2", dataset=str(mini_folder), samples=1, limit=1, max_tokens=8))
    assert not any(x.startswith("warning: local:smollm2") for x in small.lines())


def test_every_output_exists_check_names_the_config_field_in_python(tmp_path):
    """The one output-exists check (Preflight.output): a script sees the fields (the CLI shows its flags)."""
    from phr.api import plan
    from phr.config.ops import BuildHr1ParaphrasesConfig, BuildPhrbenchConfig

    (tmp_path / "x").mkdir()
    want = f"out='{tmp_path / 'x'}': {tmp_path / 'x'} already exists (pass overwrite=True to replace it)"
    for cfg in (BuildPhrbenchConfig(out=tmp_path / "x"), BuildHr1ParaphrasesConfig(out=tmp_path / "x")):
        assert want in plan(cfg).problems, cfg
    assert not [p for p in plan(BuildPhrbenchConfig(out=tmp_path / "x", overwrite=True)).problems if "exists" in p]

"""The PHRBench evaluation operations through the Python API (``phr.api.plan`` / ``run``) and through the CLI
(issue 27): the same config writes the same files, byte for byte; a value out of its bounds is one line naming the
flag, exit 2, before anything loads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from phr import api
from phr.config.ops import EvalPhrbenchConfig, EvalScoreConfig
from tests.support.cli import invoke

#: two instances of PHRBench-mini (the first question under B and B+T), one short sample each
SMALL = {"limit": 1, "conditions": "B,B+T", "samples": 1, "max_tokens": 24}


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _flags(settings: dict) -> list[str]:
    return [w for k, v in settings.items() for w in (f"--{k.replace('_', '-')}", str(v))]


@pytest.mark.slow
def test_eval_phrbench_python_api_and_cli_write_the_same_files(smollm2, mini_folder, tmp_path, monkeypatch):
    """`eval phrbench` of the offline model on 2 instances, scored by it (trajectory metrics, plots): the run
    folder the API writes and the one the CLI writes for the same settings are identical, file for file. Both
    write the same folder in turn (a run records its folder and rerun command) after a first run filled the call
    cache, so both read the same generations from it."""
    monkeypatch.setenv("PHR_CACHE", str(tmp_path / "calls.sqlite"))
    out = tmp_path / "run"
    cfg = EvalPhrbenchConfig(model="local:smollm2", dataset=str(mini_folder), out=out, **SMALL)
    api.run(api.plan(cfg))  # the cold run: fills the call cache
    shutil.rmtree(out)

    p = api.plan(cfg)
    assert not p.problems and "2 prompts x 1 samples, max_tokens 24" in "\n".join(p.lines())
    done = api.run(p)
    assert done.result is not None and done.scores == out / "scores"
    assert done.result["counts"]["samples"] == 2 and done.result["config"]["reference_scorer"]["spec"] == cfg.scorer
    by_api = _files(out)
    shutil.rmtree(out)

    args = ["eval", "phrbench", "--model", "local:smollm2", "--dataset", mini_folder, "--out", out, *_flags(SMALL)]
    r = invoke(*args)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("preset: none (the defaults)\n") and "results: " in r.stdout
    by_cli = _files(out)
    assert {"run.json", "responses.jsonl", "generations.jsonl", "scores/results.json"} <= set(by_cli)
    assert {"scores/samples.jsonl", "scores/report.md"} <= set(by_cli)
    assert sorted(by_api) == sorted(by_cli)
    assert [name for name in by_api if by_api[name] != by_cli[name]] == []

    # `eval score` of that run: the same through both paths too (scores/ rewritten in place)
    api.run(api.plan(EvalScoreConfig(run=out, scorer="none", plots=False)))
    rescored = _files(out / "scores")
    r = invoke("eval", "score", out, "--scorer", "none", "--no-plots")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "scoring with settings other than the run's: scorer=none" in r.stdout
    assert _files(out / "scores") == rescored


@pytest.mark.parametrize(
    "args, line",
    [
        (["eval", "phrbench", "--model", "local:smollm2", "--samples", "0"], "error: --samples 0: "),
        (["eval", "phrbench", "--model", "local:smollm2", "--concurrency", "0"], "error: --concurrency 0: "),
        (["eval", "phrbench", "--model", "local:smollm2", "--temperature", "-1"], "error: --temperature -1.0: "),
        (["eval", "phrbench", "--model", "local:smollm2", "--limit", "0"], "error: --limit 0: "),
        (["eval", "phrbench", "--model", "local:smollm2", "--timeout", "0"], "error: --timeout 0.0: "),
        (["eval", "phrbench", "--model", "local:smollm2", "--max-retry-after", "-1"], "error: --max-retry-after -1"),
        (["eval", "phrbench", "--model", "m", "--kl-direction", "forward"], "error: --kl-direction 'forward': "),
        (["eval", "score", "RUN", "--step-rule", "words"], "error: --step-rule 'words': "),
        (["eval", "merge", "A", "B", "--out", "M", "--bc-counting", "all"], "error: --bc-counting 'all': "),
        (["score", "SUB", "--samples", "0"], "error: --samples 0: "),
        (["submit", "SUB", "--repo", "org/r", "--samples", "0"], "error: --samples 0: "),
    ],
)
def test_a_value_out_of_bounds_is_one_line_naming_the_flag(args, line, tmp_path):
    r = invoke(*args, cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith(line) and len(r.stderr.splitlines()) == 1, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_bad_config_value_through_the_api_names_the_field():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="samples"):
        EvalPhrbenchConfig(model="local:smollm2", samples=0)

"""Issue 27, the analyses, training and the LLM layer's operations: the Python API (``run(plan(cfg))``) writes
what the CLI writes, byte for byte; every out-of-bounds value of their configs is one line naming the flag, exit 2,
before anything is read or loaded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from annotated_types import Ge, Gt, Le, Lt

from phr.api import plan, run
from phr.config.base import choices, field_type, flag_of
from phr.config.ops import (
    AnalyzeParaphrasesConfig,
    AnalyzePredictorConfig,
    CacheClearConfig,
    CacheStatsConfig,
    LlmPingConfig,
    TrainGrpoConfig,
    TrainSftConfig,
)
from tests.support.cli import invoke
from tests.support.predictor import mini_results
from tests.support.training import grpo_corpus

#: the least a command line of each config needs besides the value under test (never read: the bound fails first)
REQUIRED = {
    AnalyzePredictorConfig: ["--dataset", "phrbench", "--judge", "none"],
    AnalyzeParaphrasesConfig: ["--corpus", "c", "--model", "hf:m"],
    TrainGrpoConfig: ["--config", "tiny-stage1"],
    TrainSftConfig: ["--config", "tiny-sft"],
    LlmPingConfig: ["local:smollm2"],
    CacheStatsConfig: [],
    CacheClearConfig: ["--yes"],
}


def _outside(meta, kind) -> list:
    """Values just outside a bound (``ge=2`` -> 1, ``lt=1.0`` -> 1.0)."""
    step = 1 if kind is int else 0.5
    if isinstance(meta, Ge):
        return [meta.ge - step]
    if isinstance(meta, Gt):
        return [meta.gt]
    if isinstance(meta, Lt):
        return [meta.lt]
    if isinstance(meta, Le):
        return [meta.le + step]
    return []


def _bad_values():
    for cls, base in REQUIRED.items():
        for name, f in cls.model_fields.items():
            kind = field_type(cls, name)
            values = [v for m in f.metadata for v in _outside(m, kind)]
            if choices(cls, name):
                values.append("no-such-choice")
            for v in values:
                yield pytest.param(cls, base, flag_of(cls, name), str(v), id=f"{' '.join(cls.command)} {name}={v}")


BAD = list(_bad_values())


def test_every_bound_is_tested():
    """The issue's examples are among the cases: analyze predictor --resamples 1 and --threshold 1.5."""
    ids = {p.id for p in BAD}
    assert {"analyze predictor resamples=1", "analyze predictor threshold=1.0"} <= ids
    assert len(BAD) >= 25


@pytest.mark.parametrize(("cls", "base", "flag", "value"), BAD)
def test_out_of_bounds_is_one_line_naming_the_flag(cls, base, flag, value, tmp_path, monkeypatch):
    monkeypatch.setenv("PHR_CACHE", str(tmp_path / "calls.sqlite"))
    res = invoke(*cls.command, *base, flag, value, cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {flag} "), res.stderr
    assert "Traceback" not in res.stderr and not res.stdout
    assert not (tmp_path / "calls.sqlite").exists() and not list(tmp_path.iterdir())  # nothing read or written


def test_threshold_above_one_names_the_flag(tmp_path):
    res = invoke("analyze", "predictor", "--dataset", "phrbench", "--threshold", "1.5", cwd=tmp_path)
    assert res.returncode == 2 and res.stderr.startswith("error: --threshold 1.5: Input should be less than 1")


def _same_files(a: Path, b: Path, normalize=None) -> list[str]:
    """The relative paths of the files of ``a`` and ``b``; asserts each file is byte-identical (after
    ``normalize(name, bytes)`` when given)."""
    names = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file())
    assert names == sorted(str(p.relative_to(b)) for p in b.rglob("*") if p.is_file())
    for name in names:
        x, y = (a / name).read_bytes(), (b / name).read_bytes()
        if normalize is not None:
            x, y = normalize(name, x), normalize(name, y)
        assert x == y, name
    return names


def test_analyze_predictor_api_and_cli_write_the_same_files(mini_folder, tmp_path):
    """Every file (JSON, Markdown, CSV, both PNGs) byte for byte; nothing excluded."""
    results = mini_results(tmp_path, mini_folder)
    common = {"dataset": str(mini_folder), "judge": "none", "resamples": 50, "folds": 3}
    cfg = AnalyzePredictorConfig(results=results, out=tmp_path / "api", **common)  # type: ignore[arg-type]
    result = run(plan(cfg))
    assert result.report.rows == 102 and result.report.settings.resamples == 50
    res = invoke(
        "analyze", "predictor", "--results", *results, "--dataset", mini_folder, "--judge", "none",
        "--resamples", "50", "--folds", "3", "--out", tmp_path / "cli",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("plan:\n  features of 102 B+H prompts") and result.lines()[0] in res.stdout
    names = _same_files(tmp_path / "api", tmp_path / "cli")
    assert len(names) == 5


@pytest.mark.slow
def test_analyze_paraphrases_api_and_cli_write_the_same_files(tmp_path):
    """The diagnostics of a two-question corpus on a tiny random Llama: the four PNGs, diagnostics.json and
    summary.md byte for byte; nothing excluded."""
    from tests.support.hr1_corpora import make_folder
    from tests.test_analyze_hr1 import ORIG, PARAS, _corpus_rows
    from training.tiny import TinySettings, build_tiny_model

    texts = [ORIG, *(t for t, _, _ in PARAS), "Question: Answer: Shakespeare Marlowe <answer>"] * 4
    model = build_tiny_model(texts, tmp_path / "model", TinySettings(num_hidden_layers=3))
    corpus = make_folder(tmp_path, "hr1-paraphrases", _corpus_rows())
    cfg = AnalyzeParaphrasesConfig(corpus=corpus, model=f"hf:{model}", layer=2, out=tmp_path / "api")
    diag = run(plan(cfg))
    assert diag.counts == {"RF": 2, "RP": 4} and diag.settings["lens_cases"] == 4
    res = invoke(
        "analyze",
        "paraphrases",
        "--corpus",
        corpus,
        "--model",
        f"hf:{model}",
        "--layer",
        "2",
        "--out",
        tmp_path / "cli",
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("plan:\n  2 questions, 8 paraphrases") and "2 RF and 4 RP" in res.stdout
    assert len(_same_files(tmp_path / "api", tmp_path / "cli")) == 6


#: wall-clock values TRL logs into trainer_state.json (seconds and rates of this run on this machine): the only
#: bytes two runs of the smoke differ by, so they are left out of the comparison
WALL_CLOCK = {"step_time", "train_runtime", "train_samples_per_second", "train_steps_per_second"}


def _without_wall_clock(name: str, body: bytes) -> bytes:
    if not name.endswith("trainer_state.json"):
        return body
    state = json.loads(body)
    state["log_history"] = [{k: v for k, v in e.items() if k not in WALL_CLOCK} for e in state["log_history"]]
    return json.dumps(state, sort_keys=True).encode()


@pytest.mark.slow
def test_train_grpo_smoke_api_and_cli_write_the_same_files(tmp_path):
    """GRPO stage 1 of the tiny smoke recipe into the same folder both ways (paths are recorded in the manifest,
    the card and training_args.bin), each moved aside after its run; every file byte for byte except TRL's
    wall-clock timings in trainer_state.json (WALL_CLOCK)."""
    corpus = grpo_corpus(tmp_path)
    out = tmp_path / "run"
    result = run(plan(TrainGrpoConfig(recipe="tiny-stage1", stage=1, data=corpus, output_dir=out)))
    assert result.global_step == 2 and result.final_dir == out.resolve() / "final"
    shutil.move(out, tmp_path / "api")
    res = invoke("train", "grpo", "--stage", "1", "--config", "tiny-stage1", "--data", corpus, "--output-dir", out)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("plan:\n  grpo recipe") and "\n".join(result.lines()) in res.stdout
    shutil.move(out, tmp_path / "cli")
    names = _same_files(tmp_path / "api", tmp_path / "cli", _without_wall_clock)
    assert "final/model.safetensors" in names and "final/training_manifest.json" in names


def test_cache_stats_api_and_cli_agree(tmp_path, monkeypatch):
    monkeypatch.setenv("PHR_CACHE", str(tmp_path / "calls.sqlite"))
    stats = run(plan(CacheStatsConfig(as_json=True)))
    res = invoke("cache", "stats", "--json")
    assert res.returncode == 0
    api, cli = json.loads("\n".join(stats.lines())), json.loads(res.stdout)
    api.pop("size_bytes"), cli.pop("size_bytes")  # the sqlite files' size on disk: WAL pages come and go
    assert api == cli and cli["entries"] == 0
    assert run(plan(CacheClearConfig(yes=True))) == 0
    assert invoke("cache", "clear", "-y").stdout == f"deleted 0 entries from {tmp_path / 'calls.sqlite'}\n"


def test_hr1_reward_settings_out_of_range_stop_the_plan(tmp_path):
    """A reward setting the run would refuse (lambda_div < 0) is a problem of the plan: exit 2, nothing created."""
    import yaml

    from tests.support.training import TINY_GRPO_RECIPE

    corpus = grpo_corpus(tmp_path)
    recipe = {**TINY_GRPO_RECIPE, "data": {"path": str(corpus)}, "trainer": {**TINY_GRPO_RECIPE["trainer"]}}
    recipe["reward"] = {"name": "hr1", "settings": {"judge": "none", "lambda_div": -1}}
    recipe["trainer"]["output_dir"] = str(tmp_path / "run")
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe))
    cfg = TrainGrpoConfig(recipe=str(tmp_path / "r.yaml"))
    line = "reward.settings.lambda_div: -1: Input should be greater than or equal to 0"
    assert plan(cfg).problems == [f"{tmp_path / 'r.yaml'}: {line}"]
    res = invoke("train", "grpo", "--config", tmp_path / "r.yaml")
    assert res.returncode == 2 and line in res.stderr and not (tmp_path / "run").exists()

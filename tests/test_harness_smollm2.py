"""The documented lm-eval and inspect commands (docs/harnesses.md) with the offline SmolLM2 on PHRBench-mini, greedy,
the same max tokens: each harness's responses are ``eval phrbench``'s, word for word, its Acc B / T / H, H - T and
retention equal ``eval phrbench``'s, and its output scored by ``score`` gives the same result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")
pytest.importorskip("inspect_ai")

from phr.api import plan, run  # noqa: E402
from phr.config.ops import EvalPhrbenchConfig  # noqa: E402
from phr.eval.harness.common import HEADLINE  # noqa: E402
from tests.support.scored import score_output  # noqa: E402

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
MAX_TOKENS = 24


def _run(cmd: list[str], cwd: Path) -> str:
    proc = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=900, env=os.environ | {"HF_HUB_OFFLINE": "1"}
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def model_dir():
    out = subprocess.run(
        [sys.executable, "-m", "phr.eval.harness", "model-path", "local:smollm2"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


@pytest.fixture(scope="module")
def ours(mini_folder, tmp_path_factory):
    """eval phrbench: the first question (5 instances), one greedy sample, MAX_TOKENS."""
    out = tmp_path_factory.mktemp("ours") / "run"
    cfg = EvalPhrbenchConfig(
        model="local:smollm2",
        dataset=str(mini_folder),
        limit=1,
        samples=1,
        temperature=0,
        max_tokens=MAX_TOKENS,
        scorer="none",
        out=out,
        plots=False,
    )
    run(plan(cfg))
    responses = {
        json.loads(line)["instance_id"]: json.loads(line)["response"] for line in (out / "responses.jsonl").open()
    }
    metrics = json.loads((out / "scores" / "results.json").read_text())["metrics"]
    return responses, {k: metrics[k] for k in HEADLINE}


def _scored(path: Path, mini_folder: Path, out: Path) -> dict:
    metrics = score_output(path, mini_folder, out, allow_partial=True)
    return {k: metrics[k] for k in HEADLINE}


def test_lm_eval_command_gives_eval_phrbenchs_numbers(mini_folder, model_dir, ours, tmp_path):
    tasks = subprocess.run([sys.executable, "-m", "phr.eval.harness", "lm-eval-tasks"], capture_output=True, text=True)
    printed = _run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "hf",
            "--model_args",
            f"pretrained={model_dir},dtype=float32",
            "--apply_chat_template",
            "--tasks",
            "phrbench_greedy",
            "--include_path",
            tasks.stdout.strip(),
            "--metadata",
            json.dumps({"dataset": str(mini_folder), "limit": 1}),
            "--gen_kwargs",
            f"max_gen_toks={MAX_TOKENS}",
            "--device",
            "cpu",
            "--batch_size",
            "8",
            "--log_samples",
            "--output_path",
            "out",
        ],
        tmp_path,
    )
    responses, metrics = ours
    (samples,) = (tmp_path / "out").rglob("samples_phrbench_greedy_*.jsonl")
    logged = [json.loads(line) for line in samples.open()]
    assert {s["doc"]["id"]: s["filtered_resps"][0][0] for s in logged} == responses
    (results,) = (tmp_path / "out").rglob("results_*.json")
    got = {k.split(",")[0]: v for k, v in json.loads(results.read_text())["results"]["phrbench_greedy"].items()}
    assert {k: got[k] for k in HEADLINE if k in metrics} == pytest.approx(metrics)
    assert "accuracy_bh" in printed and "retention" in printed
    assert _scored(samples, mini_folder, tmp_path / "scored") == pytest.approx(metrics)


def test_inspect_command_gives_eval_phrbenchs_numbers(mini_folder, model_dir, ours, tmp_path):
    from inspect_ai.log import read_eval_log

    printed = _run(
        [
            str(BIN / "inspect"),
            "eval",
            "phr/phrbench",
            "--model",
            f"hf/{model_dir}",
            "-M",
            "do_sample=false",
            "-M",
            "device=cpu",
            "--epochs",
            "1",
            "--max-tokens",
            str(MAX_TOKENS),
            "-T",
            f"dataset={mini_folder}",
            "-T",
            "limit=1",
            "--log-dir",
            "logs",
            "--display",
            "plain",
        ],
        tmp_path,
    )
    responses, metrics = ours
    (log_file,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(log_file))
    assert {s.id: s.output.completion for s in log.samples} == responses
    got = {name: m.value for name, m in log.results.scores[0].metrics.items()}
    assert {k: got[k] for k in HEADLINE if k in metrics} == pytest.approx(metrics)
    assert "accuracy_bh" in printed and "retention" in printed
    assert _scored(log_file, mini_folder, tmp_path / "scored") == pytest.approx(metrics)

"""Two ranks on the CPU (docs/scaling.md): `train grpo` and `train sft` under torchrun / `accelerate launch` with the
shipped cpu2.yaml write one run (rank 0's files, the world size in the manifest), resume after the whole launch is
SIGKILLed once a checkpoint is complete, and make every judge call once (rank 0 rewards the gathered batch); a
missing-rewards stop ends both ranks with one message; `eval phrbench` on two ranks writes the results.json of the
one-process run. Every launch here uses both cores: these tests are slow and never run beside each other."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from phr.training.checkpoint import MANIFEST
from phr.training.run import checkpoint_problem
from tests.support.training import grpo_corpus, sft_corpus

ROOT = Path(__file__).resolve().parents[1]
CPU2 = ROOT / "training" / "recipes" / "accelerate_configs" / "cpu2.yaml"


def _port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def torchrun(*args: str) -> list[str]:
    """``torchrun --nproc_per_node 2`` (a free port: tests may run beside other launches)."""
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", _port(), *args]


def accelerate(*args: str) -> list[str]:
    """``accelerate launch --config_file cpu2.yaml`` (the shipped two-rank CPU config)."""
    return [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CPU2), "--main_process_port",
            _port(), *args]  # fmt: skip


def launch(cmd: list[str], cache: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    env |= {"PHR_CACHE": str(cache)} if cache is not None else {}
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def judge_ok(model, messages, k):
    """The B.2 judge: every paraphrase consistent."""
    assert messages[0][1].startswith("Please help me determine"), messages[0][1][:80]
    return json.dumps({"think": "same question", "result": 1})


def _killed_then_resumed(method: list[str], out: Path, steps: int = 3):
    """A launch SIGKILLed (launcher and ranks) right after checkpoint-1 is complete, then the same command with
    --resume through accelerate launch; (killed, resumed) processes."""
    args = [*method, "--output-dir", str(out), "--max-steps", str(steps)]
    killed = launch(torchrun("-m", "tests.support.rank_kill", "1", *args))
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert [p.name for p in out.glob("checkpoint-*")] == ["checkpoint-1"] and not (out / "final").exists()
    assert checkpoint_problem(out / "checkpoint-1") is None
    assert {p.name for p in (out / "checkpoint-1").glob("rng_state_*.pth")} == {"rng_state_0.pth", "rng_state_1.pth"}
    resumed = launch(accelerate("-m", "phr.cli", *args, "--resume"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    return killed, resumed


def _one_run(out: Path, resumed: subprocess.CompletedProcess, what: str, steps: int = 3) -> dict:
    """The resumed run finished once (rank 0's summary), every checkpoint complete with its artifacts, no file
    left half-written by a second writer; the final manifest."""
    assert resumed.stdout.count(f"{what} finished: {steps} steps (resumed from {out / 'checkpoint-1'})") == 1
    assert resumed.stdout.count("final model:") == 1
    # one plan, stating the launch as typed; the rerun is that launch (accelerate launch --config_file cpu2.yaml)
    launcher = f"accelerate launch --config_file {CPU2} --main_process_port "
    assert resumed.stdout.count("plan:") == 1 and resumed.stdout.count(f"launch: 2 processes ({launcher}") == 1
    assert resumed.stdout.count(f"rerun: {launcher}") == 1
    for n in range(1, steps + 1):
        assert checkpoint_problem(out / f"checkpoint-{n}") is None and (out / f"checkpoint-{n}" / MANIFEST).is_file()
    assert not [p for p in out.rglob("*") if p.name.startswith(".")]  # no temporary file or folder left
    manifest = json.loads((out / "final" / MANIFEST).read_text())
    assert manifest["global_step"] == steps
    assert manifest["launch"]["world_size"] == 2 and manifest["launch"]["backend"] == "gloo"
    assert manifest["launch"]["distributed_type"] == "MULTI_CPU"
    assert manifest["launch"]["accelerate"]["ACCELERATE_MIXED_PRECISION"] == "no"  # cpu2.yaml, as launched
    assert manifest["launch"]["command"].startswith(launcher) and " -m phr.cli train " in manifest["launch"]["command"]
    return manifest


@pytest.mark.slow
def test_grpo_on_two_ranks_resumes_after_a_kill_and_judges_each_paraphrase_once(fake_openai, tmp_path):
    fo = fake_openai(judge_ok)
    corpus, out = grpo_corpus(tmp_path, 8), tmp_path / "run"
    method = ["train", "grpo", "--stage", "1", "--config", "tiny-stage1", "--data", str(corpus),
              "--set", "reward.name=tests.support.training:tagged_hr1_reward"]  # fmt: skip
    _killed, resumed = _killed_then_resumed(method, out)
    _one_run(out, resumed, "GRPO stage 1")
    # tiny-stage1: 4 completions per process and step; the plan counts both processes' (the global batch)
    assert resumed.stdout.count("optimizer step(s) of 8 completions (the global batch: 2 processes x 4)") == 1
    # 3 steps x 2 ranks x 4 completions, each judged by rank 0 once: no prompt asked twice, across ranks or the kill
    asked = [json.dumps(r["json"]["messages"], sort_keys=True) for r in fo.server.requests]
    assert len(asked) == 24 and len(set(asked)) == 24
    assert "judge_calls 16, judge_cache_hits 0" in resumed.stdout  # the resumed run's 2 steps (rank 0's stats)


@pytest.mark.slow
def test_sft_on_two_ranks_resumes_after_a_kill(tmp_path):
    corpus, out = sft_corpus(tmp_path, 8), tmp_path / "run"
    _killed, resumed = _killed_then_resumed(["train", "sft", "--config", "tiny-sft", "--data", str(corpus)], out)
    manifest = _one_run(out, resumed, "LoRA SFT")
    assert (out / "final" / "adapter_config.json").is_file() and manifest["method"] == "sft"


@pytest.mark.slow
def test_a_missing_rewards_stop_ends_both_ranks_with_one_message(fake_openai, tmp_path):
    fo = fake_openai()
    fo.server.script(None, [("status", 401)] * 1000)
    corpus, out = grpo_corpus(tmp_path, 8), tmp_path / "run"
    res = launch(torchrun("-m", "phr.cli", "train", "grpo", "--stage", "1", "--config", "tiny-stage1", "--data",
                          str(corpus), "--output-dir", str(out), "--max-steps", "5", "--set",
                          "reward.name=tests.support.training:tagged_hr1_reward"))  # fmt: skip
    assert res.returncode == 1, res.stderr[-3000:]
    err = " ".join(res.stderr.split())
    assert err.count("error: GRPO stage 1 stopped at step 2: reward r_stab was missing for every completion") == 1
    assert "reasons: auth 16." in err  # 2 steps x 8 completions of both ranks, judged by rank 0
    resume = (
        r"resume with: torchrun --nproc_per_node 2 --master_port \d+ -m phr\.cli train grpo --stage 1 [^\n]* --resume"
    )
    assert err.count("resume with:") == 1 and re.search(resume, res.stderr), res.stderr[-3000:]  # the launch as typed
    assert fo.server.count == 16 and sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1",
                                                                                          "checkpoint-2"]  # fmt: skip


@pytest.mark.slow
def test_eval_phrbench_on_two_ranks_writes_the_one_process_results(smollm2, mini_folder, tmp_path):
    """The command and ``run(plan(cfg))`` from a script under torchrun: one plan stating the launch, one call
    table, the launch as the rerun, and the one-process run's scores and responses."""
    from tests.support.cli import run

    common = ["--dataset", str(mini_folder), "--limit", "2", "--samples", "1", "--max-tokens", "24", "--no-plots"]
    one = run("--cache", str(tmp_path / "one.sqlite"), "eval", "phrbench", "--model", "local:smollm2", *common,
              "--out", str(tmp_path / "one"))  # fmt: skip
    assert one.returncode == 0, one.stderr[-3000:]
    cmd = torchrun("-m", "phr.cli", "eval", "phrbench", "--model", "local:smollm2", *common, "--out",
                   str(tmp_path / "two"))  # fmt: skip
    two = launch(cmd, cache=tmp_path / "two.sqlite")
    assert two.returncode == 0, two.stderr[-3000:]
    said = two.stdout + two.stderr
    launcher = shlex.join(["torchrun", *cmd[3:7]])  # torchrun --nproc_per_node 2 --master_port N
    assert said.count("plan:") == 1 and said.count(f"launch: 2 processes ({launcher})") == 1, said
    assert (
        said.count("rank r (0..1) generates shard r+1/2 (every 2nd base question)") == 1 and said.count("results:") == 1
    )
    assert _call_tables(two) == _call_tables(one) >= 1, two.stderr  # generation's of both ranks as one
    rerun = f"rerun: {launcher} -m phr.cli eval phrbench --model local:smollm2"
    assert two.stdout.count(rerun) == 1 and "shard 1/2 done" not in said
    record = json.loads((tmp_path / "two" / "run.json").read_text())["settings"]
    assert record["launch"]["processes"] == 2 and record["launch"]["launcher"] == "torchrun"
    assert record["rerun"] == record["launch"]["command"] and record["rerun"].startswith(f"{launcher} -m phr.cli ")
    assert record["config"]["out"] == str(tmp_path / "two")
    merged = json.loads((tmp_path / "two" / "run.json").read_text())["merged_from"]
    assert merged == [str(tmp_path / f"two.shards/shard-{i}-of-2") for i in (1, 2)]
    script = launch(torchrun("-m", "tests.support.eval_script", str(mini_folder), str(tmp_path / "three")),
                    cache=tmp_path / "two.sqlite")  # fmt: skip
    assert script.returncode == 0, script.stderr[-3000:]
    for name in ("scores/results.json", "scores/samples.jsonl", "responses.jsonl"):  # the trajectory metrics too
        want = (tmp_path / "one" / name).read_bytes()
        assert (tmp_path / "two" / name).read_bytes() == want and (tmp_path / "three" / name).read_bytes() == want


def _call_tables(res: subprocess.CompletedProcess) -> int:
    """How many call tables (phr.llm.summary) a run printed."""
    return (res.stdout + res.stderr).count("LLM calls")


# ---- what a rank says (no launch: the launcher's environment set by hand) --------------------------------------


@pytest.mark.parametrize("rank", ["0", "1"])
def test_an_interrupted_launch_prints_the_rerun_line_on_rank_0_only(monkeypatch, rank):
    from click.testing import CliRunner

    from phr.cli.common import Root

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", rank)

    @click_command
    def stop():
        raise KeyboardInterrupt

    res = CliRunner().invoke(Root(commands={"stop": stop}), ["stop"])
    assert res.exit_code == 130
    said = "interrupted; rerun to resume: torchrun --nproc_per_node 2 -m phr.cli stop  (or the launcher and config"
    assert (said in res.stderr) == (rank == "0")


def click_command(f):
    import click

    return click.command(name=f.__name__)(f)


@pytest.mark.parametrize("rank", ["0", "1"])
def test_a_refusal_every_rank_reaches_is_printed_by_rank_0(monkeypatch, tmp_path, rank):
    from typer.testing import CliRunner

    from phr.cli import app

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", rank)
    res = CliRunner().invoke(app, ["train", "sft", "--config", "tiny-sft", "--data", str(tmp_path / "none"),
                                   "--output-dir", str(tmp_path / "run")])  # fmt: skip
    assert res.exit_code == 2
    assert ("no corpus folder" in res.stderr) == (rank == "0") and (res.stderr.strip() == "") == (rank == "1")


def test_agree_without_a_process_group_is_this_process_alone():
    from phr.core.errors import UsageError
    from phr.core.ranks import agree

    agree(None)
    with pytest.raises(UsageError, match="mine"):
        agree(UsageError("mine"))

"""The launch a rank belongs to (phr.core.launch): the launcher's command line read from the process that started
the rank, the rerun that repeats the launch, and plans that state it (rank 0 prints them, the global batch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from phr.core.launch import Launch, _launcher_of, current_launch

ROOT = Path(__file__).resolve().parents[1]
PY = "/venv/bin/python3.11"


@pytest.mark.parametrize(
    ("cmdline", "args", "launcher"),
    [
        ([PY, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "123", "-m", "phr.cli",
          "eval", "phrbench"], ["eval", "phrbench"], ["torchrun", "--nproc_per_node", "2", "--master_port", "123"]),
        ([PY, "/venv/bin/torchrun", "--nproc_per_node=2", "train.py", "a"], ["a"],
         ["torchrun", "--nproc_per_node=2"]),
        ([PY, "/venv/bin/accelerate", "launch", "--config_file", "c.yaml", "-m", "phr.cli", "train", "sft"],
         ["train", "sft"], ["accelerate", "launch", "--config_file", "c.yaml"]),
        ([PY, "-m", "accelerate.commands.launch", "--num_processes", "2", "-m", "phr.cli", "x"], ["x"],
         ["accelerate", "launch", "--num_processes", "2"]),
        (["/venv/bin/torchrun", "--no-python", "--nproc_per_node", "2", "phr-publish", "x"], ["x"],
         ["torchrun", "--nproc_per_node", "2"]),  # the rerun runs `-m phr.cli`: no --no-python
    ],
)  # fmt: skip
def test_the_launcher_is_read_from_its_command_line(cmdline, args, launcher):
    assert _launcher_of(cmdline, args) == launcher


@pytest.mark.parametrize(
    ("cmdline", "args"),
    [
        (["bash", "-c", "phr-publish x"], ["x"]),  # not a launcher
        ([PY, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "phr.cli", "y"], ["x"]),  # not ours
        ([PY, "-m", "pytest", "-m", "phr.cli", "x"], ["x"]),
    ],
)
def test_another_command_line_is_not_a_launcher(cmdline, args):
    assert _launcher_of(cmdline, args) is None


def test_one_process_has_no_launch(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert current_launch() is None
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert current_launch() is None


def test_a_launcher_that_cannot_be_read_is_named_as_a_stand_in(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    launch = current_launch()  # pytest's parent is no launcher
    assert launch == Launch(2, ("torchrun", "--nproc_per_node", "2"), known=False)
    assert launch.command(["eval", "phrbench", "--model", "openai:gpt-4o"]) == (
        "torchrun --nproc_per_node 2 -m phr.cli eval phrbench --model openai:gpt-4o"
        "  (or the launcher and config you started it with)"
    )


def test_a_real_launch_is_named_as_typed():
    """torchrun's two ranks each find the launcher's command line, its options as typed."""
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "0",
           "-m", "tests.support.launch_probe", "eval", "phrbench", "--samples", "2"]  # fmt: skip
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    said = sorted((json.loads(line) for line in res.stdout.splitlines()), key=lambda r: r["rank"])
    want = "torchrun --nproc_per_node 2 --master_port 0 -m phr.cli eval phrbench --samples 2"
    assert said == [{"rank": r, "processes": 2, "launcher": "torchrun", "command": want} for r in (0, 1)]


# ---- plans under a launch (the launcher's environment set by hand) ----------------------------------------------


@pytest.mark.parametrize("rank", ["0", "1"])
def test_rank_0_alone_prints_the_plan_with_the_launch_and_the_global_batch(monkeypatch, tmp_path, rank):
    from typer.testing import CliRunner

    from phr.cli import app
    from tests.support.training import grpo_corpus

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", rank)
    corpus = grpo_corpus(tmp_path, 8)
    res = CliRunner().invoke(app, ["train", "grpo", "--stage", "1", "--config", "tiny-stage1", "--data", str(corpus),
                                   "--output-dir", str(tmp_path / "run"), "--dry-run", "--set",
                                   "reward.name=tests.support.training:tagged_hr1_reward"])  # fmt: skip
    assert res.exit_code == 0, res.output
    if rank == "1":
        assert res.stdout == ""
        return
    assert "launch: 2 processes (torchrun --nproc_per_node 2)" in res.stdout
    # tiny-stage1: max_steps 2, 4 completions per process and step -> 2 steps of 8, 16 completions at most
    assert "completions: at most 16 (4 generations per prompt, 3 epoch(s)), 2 optimizer step(s) of 8 completions " \
           "(the global batch: 2 processes x 4)" in res.stdout  # fmt: skip


def test_the_plan_of_one_process_says_so(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from phr.cli import app
    from tests.support.training import grpo_corpus

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    res = CliRunner().invoke(app, ["train", "grpo", "--stage", "1", "--config", "tiny-stage1", "--data",
                                   str(grpo_corpus(tmp_path, 8)), "--output-dir", str(tmp_path / "run"), "--dry-run",
                                   "--set", "reward.name=tests.support.training:tagged_hr1_reward"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "launch:" not in res.stdout and "2 optimizer step(s) of 4 completions (the global batch: one process)" \
        in res.stdout  # fmt: skip


def test_an_eval_shard_under_a_launcher_is_refused(monkeypatch, mini_folder):
    from phr.api import plan
    from phr.config.ops import EvalPhrbenchConfig

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    p = plan(EvalPhrbenchConfig(model="local:smollm2", dataset=str(mini_folder), shard="1/2", score=False))
    assert p.problems == [
        "--shard 1/2 under 2 processes (torchrun --nproc_per_node 2): the launch splits the run over its processes "
        "itself; drop --shard, or run the shard without a launcher"
    ]

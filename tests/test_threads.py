"""torch threads on a shared CPU (phr.core.threads): OMP_NUM_THREADS first, then the cores this process may use,
shared among a launch's local ranks, capped by the model's size and the idle cores (injected here)."""

from __future__ import annotations

import os

import pytest

from phr.core import threads
from phr.core.threads import Threads, choose_threads, cpu_times, host_share, idle_cores, use_cpu_threads


@pytest.fixture
def machine(monkeypatch):
    """4 cores, ``idle`` of them idle; no OMP_NUM_THREADS, no launch."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    state = {"idle": 4.0, "sampled": 0}

    def idle(sample_s):
        state["sampled"] += 1
        return state["idle"]

    monkeypatch.setattr(threads, "idle_cores", idle)
    return state


def test_omp_num_threads_is_followed(machine, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert choose_threads(params=10**6) == Threads(3, "OMP_NUM_THREADS")


@pytest.mark.parametrize(
    ("idle", "params", "ranks", "want"),
    [
        (4.0, None, None, 4),  # a quiet machine: every core
        (1.6, None, None, 2),  # two cores busy elsewhere
        (0.2, None, None, 1),  # a busy machine: still one
        (4.0, None, "2", 2),  # two ranks of a launch share the cores
        (4.0, 135_000_000, None, 1),  # SmolLM2-135M: one thread (bench/threads.py)
        (4.0, 700_000_000, None, 3),  # a thread per 300M parameters
        (1.0, 7_000_000_000, None, 1),  # a 7B model beside busy work: the idle core
    ],
)
def test_the_count_follows_cores_ranks_model_size_and_idle_cores(machine, monkeypatch, idle, params, ranks, want):
    machine["idle"] = idle
    if ranks:
        monkeypatch.setenv("LOCAL_WORLD_SIZE", ranks)
    assert choose_threads(params).count == want


def test_a_small_model_is_not_sampled(machine):
    assert choose_threads(params=2_000_000) == Threads(1, "4 cores, a model of 2.0M parameters")
    assert machine["sampled"] == 0


def test_the_count_only_grows_within_a_process(machine, monkeypatch):
    import torch

    monkeypatch.setattr(threads, "_CHOSEN", None)
    was = torch.get_num_threads()
    try:
        assert use_cpu_threads(135_000_000).count == 1 and torch.get_num_threads() == 1
        assert use_cpu_threads(1_000_000).count == 1
        assert use_cpu_threads(900_000_000).count == 3 and torch.get_num_threads() == 3  # a larger model later
        assert use_cpu_threads(135_000_000).count == 3  # never fewer than an earlier model got
    finally:
        torch.set_num_threads(was)


def test_idle_cores_are_measured_on_this_machine():
    idle = idle_cores(0.05)
    assert idle is None or 0.0 <= idle <= (os.cpu_count() or 1) + 1e-9


def test_host_share_of_busy_and_stolen_cpu_time():
    # user nice system idle iowait irq softirq steal: 100 jiffies, 50 idle, 10 iowait, 15 steal
    before = [1000, 0, 200, 5000, 100, 0, 0, 300]
    after = [1020, 0, 205, 5050, 110, 0, 0, 315]
    assert host_share(before, after) == {"busy": 0.25, "steal": 0.15}
    assert host_share(before, before) is None and host_share(None, after) is None
    live = host_share(cpu_times(), cpu_times())
    assert live is None or 0.0 <= live["steal"] <= 1.0  # Linux: a real reading

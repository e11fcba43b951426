"""How many threads torch uses for a model on the CPU: no more than the model can use and the machine has idle,
so that a small model does not burn a shared CPU (docs/scaling.md, "Threads on a shared CPU"; bench/threads.py).

torch's default is one intra-op thread per core. Beside other busy processes its threads spin-wait for cores they
do not get: measured on 2 cores beside two busy loops (bench/threads.py), the GRPO smoke took 2.2x and a small
SmolLM2 eval 4.4x the CPU time of one thread, and more wall time too. On a quiet machine a second thread bought a
small model 10 % of wall time for 10-45 % more CPU time. So, in order:

1. ``OMP_NUM_THREADS`` set (by the user, or by ``torchrun``, which sets 1 per rank): torch already follows it;
2. else the cores this process may use (its CPU affinity), shared among the ranks of a launch on this machine
   (``LOCAL_WORLD_SIZE``), capped by the cores idle right now (``/proc/stat`` sampled for ``SAMPLE_S``) and, for a
   model of known size, by one thread per ``PARAMS_PER_THREAD`` parameters (SmolLM2-135M and the tiny training
   models: 1); at least 1.

The count only grows within a process (a larger model loaded later may raise it) and each change is logged.
"""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: how long the idle cores are sampled before the first model loads
SAMPLE_S = 0.3
#: a model gets a thread per this many parameters (bench/threads.py: a 135M model gains little from a second one)
PARAMS_PER_THREAD = 300_000_000

_CHOSEN: Threads | None = None


@dataclass(frozen=True)
class Threads:
    """The thread count chosen and why."""

    count: int
    why: str

    def __str__(self) -> str:
        return f"{self.count} thread{'s' if self.count != 1 else ''} ({self.why})"


def choose_threads(params: int | None = None, sample_s: float = SAMPLE_S) -> Threads:
    """The thread count for a model of ``params`` parameters (None: unknown) on the CPU of this process (the
    module's rules); nothing is set."""
    given = os.environ.get("OMP_NUM_THREADS", "").strip()
    if given.isdigit() and int(given) > 0:
        return Threads(int(given), "OMP_NUM_THREADS")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    ranks = max(1, _int_env("LOCAL_WORLD_SIZE", 1))
    share = max(1, cores // ranks)
    why = [f"{cores} cores"] + ([f"{ranks} ranks"] if ranks > 1 else [])
    if params is not None:
        share = min(share, max(1, math.ceil(params / PARAMS_PER_THREAD)))
        millions = params / 1e6
        why.append(f"a model of {millions:,.{1 if millions < 10 else 0}f}M parameters")
    if share == 1:
        return Threads(1, ", ".join(why))
    idle = idle_cores(sample_s)
    if idle is None:
        return Threads(share, ", ".join(why))
    return Threads(max(1, min(share, math.floor(idle + 0.5))), ", ".join([*why, f"{idle:.1f} idle"]))


def use_cpu_threads(params: int | None = None) -> Threads:
    """Set torch's intra-op threads for a model of ``params`` parameters (``choose_threads``; never fewer than an
    earlier model of this process got) and return the count in use."""
    global _CHOSEN
    if _CHOSEN is not None and (_CHOSEN.why == "OMP_NUM_THREADS" or params is None and _CHOSEN.count > 1):
        return _CHOSEN
    import torch

    chosen = choose_threads(params)
    if _CHOSEN is not None and chosen.count <= _CHOSEN.count:
        return _CHOSEN
    if chosen.why != "OMP_NUM_THREADS" and torch.get_num_threads() != chosen.count:
        torch.set_num_threads(chosen.count)
    _CHOSEN = chosen
    log.info("torch on the CPU: %s", chosen)
    return chosen


def idle_cores(sample_s: float) -> float | None:
    """The cores idle over the next ``sample_s`` seconds, machine-wide (``/proc/stat``); None off Linux."""
    first = cpu_times()
    if first is None:
        return None
    time.sleep(sample_s)
    second = cpu_times()
    if second is None:
        return None
    total = sum(second) - sum(first)
    if total <= 0:
        return None
    idle = (second[3] + second[4]) - (first[3] + first[4])  # idle + iowait
    return max(0.0, idle / total * (os.cpu_count() or 1))


def host_share(first: list[int] | None, second: list[int] | None) -> dict[str, float] | None:
    """Between two ``cpu_times`` readings, the share of all CPU time that was busy and that the hypervisor gave
    to other guests (``steal``: a vCPU waiting for a real one). A timing taken with steal is not a quiet
    machine's, however idle this machine looks. None when unknown."""
    if first is None or second is None:
        return None
    delta = [b - a for a, b in zip(first, second, strict=True)]
    total = sum(delta)
    if total <= 0:
        return None
    return {"busy": 1 - (delta[3] + delta[4] + delta[7]) / total, "steal": delta[7] / total}


def cpu_times() -> list[int] | None:
    """Machine-wide CPU time counters since boot (``/proc/stat``: user nice system idle iowait irq softirq steal);
    None off Linux. Two readings give ``idle_cores`` and ``host_share``."""
    try:
        line = Path("/proc/stat").read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    parts = line.split()
    return [int(v) for v in parts[1:9]] if parts and parts[0] == "cpu" else None


def _int_env(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default

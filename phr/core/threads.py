"""How many threads torch uses for a model on the CPU: as many as there are idle cores, measured when the first
model loads, so that a small model beside other work does not oversubscribe a shared CPU (docs/scaling.md,
"Threads on a shared CPU"; bench/threads.py).

torch's default is one intra-op thread per core. On a quiet machine that is right; beside other busy processes
its threads spin-wait for cores they do not get, and a small model burns several times the CPU time of one thread
for no gain in wall time (measured: bench/threads.py). So, in order:

1. ``OMP_NUM_THREADS`` set (by the user, or by ``torchrun``, which sets 1 per rank): torch already follows it;
2. else the cores this process may use (its CPU affinity), shared among the ranks of a launch on this machine
   (``LOCAL_WORLD_SIZE``), capped by the cores idle right now (``/proc/stat`` sampled for ``SAMPLE_S``), at
   least 1.

The choice is made once per process (torch's thread pool is set once) and logged.
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

_CHOSEN: Threads | None = None


@dataclass(frozen=True)
class Threads:
    """The thread count chosen and why."""

    count: int
    why: str

    def __str__(self) -> str:
        return f"{self.count} thread{'s' if self.count != 1 else ''} ({self.why})"


def choose_threads(sample_s: float = SAMPLE_S) -> Threads:
    """The thread count for a model on the CPU of this process (the module's rules); nothing is set."""
    given = os.environ.get("OMP_NUM_THREADS", "").strip()
    if given.isdigit() and int(given) > 0:
        return Threads(int(given), "OMP_NUM_THREADS")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    ranks = max(1, _int_env("LOCAL_WORLD_SIZE", 1))
    share = max(1, cores // ranks)
    idle = idle_cores(sample_s)
    if idle is None:
        return Threads(share, f"{cores} cores" + (f" / {ranks} ranks" if ranks > 1 else ""))
    count = max(1, min(share, math.floor(idle + 0.5)))
    return Threads(count, f"{cores} cores, {idle:.1f} idle" + (f", {ranks} ranks" if ranks > 1 else ""))


def use_cpu_threads() -> Threads:
    """Set torch's intra-op threads for this process once (``choose_threads``) and return the choice."""
    global _CHOSEN
    if _CHOSEN is not None:
        return _CHOSEN
    import torch

    chosen = choose_threads()
    if chosen.why != "OMP_NUM_THREADS" and torch.get_num_threads() != chosen.count:
        torch.set_num_threads(chosen.count)
    _CHOSEN = chosen
    log.info("torch on the CPU: %s", chosen)
    return chosen


def idle_cores(sample_s: float) -> float | None:
    """The cores idle over the next ``sample_s`` seconds, machine-wide (``/proc/stat``); None off Linux."""
    first = _cpu_times()
    if first is None:
        return None
    time.sleep(sample_s)
    second = _cpu_times()
    if second is None:
        return None
    total = sum(second) - sum(first)
    if total <= 0:
        return None
    idle = (second[3] + second[4]) - (first[3] + first[4])  # idle + iowait
    return max(0.0, idle / total * (os.cpu_count() or 1))


def _cpu_times() -> list[int] | None:
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

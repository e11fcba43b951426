"""Threads on a shared CPU: CPU seconds and wall time of the GRPO smoke and of a small eval, with the toolkit's
default thread choice (phr.core.threads: no more torch threads than idle cores) and with one thread
(``OMP_NUM_THREADS=1``), on a quiet machine and beside two busy loops, in one run. ``--all-cores`` adds torch's
own default (one thread per core, what the toolkit did before; slow beside busy loops).

Each workload runs as the command a user types, in a scratch folder, with a fresh call cache:

- smoke: ``phr-publish train grpo --stage 1 --config smoke-stage1`` (docs/training.md, "Offline training smoke":
  the tiny model's warm-up, then 2 GRPO steps);
- eval: ``phr-publish eval phrbench --model local:smollm2 --dataset mini --limit 2 --samples 1 --max-tokens 48
  --no-score`` (10 generations with SmolLM2).

Goal (issue 35): in each situation the default's CPU time is within 1.2x of the best setting's.

    python bench/threads.py [--all-cores] [--only smoke|eval] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKLOADS = {
    "smoke": ["train", "grpo", "--stage", "1", "--config", "smoke-stage1", "--output-dir", "{run}"],
    "eval": ["eval", "phrbench", "--model", "local:smollm2", "--dataset", "mini", "--limit", "2", "--samples", "1",
             "--max-tokens", "48", "--no-score", "--out", "{run}"],
}  # fmt: skip
SETTINGS = {"default": None, "1 thread": "1"}
GOAL = 1.2


def phr(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "phr.cli", *args], cwd=cwd, env=env, capture_output=True, text=True)


def measure(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """(CPU seconds of the command and its children, wall seconds, the thread choice it logged)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    res = phr(["--log-level", "INFO", *args], cwd, env)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{res.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    chosen = re.search(r"torch on the CPU: (\d+ threads? \([^)]*\))", res.stderr)
    return cpu, wall, chosen[1] if chosen else "torch's default"


def busy_loops(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop(loops: list[subprocess.Popen]) -> None:
    for p in loops:
        p.kill()
        p.wait()


def prepare(work: Path, env: dict[str, str]) -> None:
    """The inputs of the workloads: the hr1-grpo corpus the smoke recipe reads, PHRBench-mini."""
    for args in (["build", "hr1-grpo"], ["build", "phrbench", "--out", "mini"]):
        res = phr(args, work, env)
        if res.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed:\n{res.stderr[-3000:]}")
    # the first load converts SmolLM2 once: not part of any measurement
    phr(["eval", "phrbench", "--model", "local:smollm2", "--dataset", "mini", "--limit", "1", "--samples", "1",
         "--max-tokens", "1", "--no-score", "--out", "warm"], work, env)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--all-cores", action="store_true", help="also torch's own default (one thread per core)")
    ap.add_argument("--only", choices=sorted(WORKLOADS), help="one workload")
    ap.add_argument("--keep", type=Path, help="scratch folder to keep (default: a temporary one, removed)")
    args = ap.parse_args()
    settings = dict(SETTINGS) | ({"all cores": str(os.cpu_count() or 1)} if args.all_cores else {})
    workloads = [args.only] if args.only else list(WORKLOADS)
    work = args.keep or Path(tempfile.mkdtemp(prefix="phr-threads-"))
    work.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "WORLD_SIZE", "RANK")}
    print(f"{os.cpu_count()} cores; scratch {work}", flush=True)
    prepare(work, base | {"PHR_CACHE": str(work / "prep.sqlite")})
    rows = []
    n = 0
    try:
        for load in ("quiet", "2 busy loops"):
            loops = busy_loops(2) if load != "quiet" else []
            try:
                for name in workloads:
                    for setting, omp in settings.items():
                        n += 1
                        env = base | {"PHR_CACHE": str(work / f"c{n}.sqlite")}
                        env |= {"OMP_NUM_THREADS": omp} if omp else {}
                        cmd = [a.replace("{run}", str(work / f"run{n}")) for a in WORKLOADS[name]]
                        cpu, wall, chosen = measure(cmd, work, env)
                        rows.append((load, name, setting, cpu, wall, chosen))
                        print(f"  {load:13} {name:6} {setting:9} CPU {cpu:7.1f} s  wall {wall:7.1f} s  {chosen}",
                              flush=True)  # fmt: skip
            finally:
                stop(loops)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    report(rows, workloads)


def report(rows: list[tuple], workloads: list[str]) -> None:
    print("\n| situation | workload | setting | CPU s | wall s | threads | CPU / best |")
    print("|---|---|---|---:|---:|---|---:|")
    verdicts = []
    for load in ("quiet", "2 busy loops"):
        for name in workloads:
            mine = [r for r in rows if r[0] == load and r[1] == name]
            best = min(r[3] for r in mine)
            for r in mine:
                print(f"| {load} | {name} | {r[2]} | {r[3]:.1f} | {r[4]:.1f} | {r[5]} | {r[3] / best:.2f}x |")
            default = next(r for r in mine if r[2] == "default")
            verdicts.append((load, name, default[3] / best))
    print()
    for load, name, ratio in verdicts:
        print(
            f"{name}, {load}: default CPU {ratio:.2f}x the best ({'meets' if ratio <= GOAL else 'misses'} <= {GOAL}x)"
        )


if __name__ == "__main__":
    main()

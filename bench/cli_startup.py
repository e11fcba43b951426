"""CLI start-up: CPU seconds of `phr-publish --help` and of every subcommand's `--help`, and of `import phr.cli`,
against a bare interpreter (`python -c pass`) measured in the same run (issue 20 item 4: <= 0.5 s of CPU).

Each command runs ``--repeat`` times in a fresh process; the minimum child CPU time (user + system, from
``resource.getrusage(RUSAGE_CHILDREN)``) is reported, so other load on the machine counts as little as possible.

    python bench/cli_startup.py [--repeat 3] [--all]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
from pathlib import Path

PY = sys.executable
EXE = shutil.which("phr-publish", path=str(Path(PY).parent)) or "phr-publish"
#: the commands measured without --all (one per group, the deepest help of each)
SAMPLE = ([], ["eval", "phrbench"], ["build", "phrbench"], ["build", "hr1-paraphrases"], ["push"], ["train", "grpo"])


def cpu_seconds(argv: list[str], repeat: int) -> float:
    """The least CPU time (user + system) of ``repeat`` runs of ``argv`` in a fresh process."""
    best = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return best


def command_paths() -> list[list[str]]:
    """Every command and group of the CLI, as argument lists (the root first)."""
    import typer.main

    from phr.cli import app

    paths: list[list[str]] = []

    def walk(cmd, path):
        paths.append(path)
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--all", action="store_true", help="Every subcommand's --help (else one per group).")
    args = ap.parse_args()
    base = cpu_seconds([PY, "-c", "pass"], args.repeat)
    imp = cpu_seconds([PY, "-c", "import phr.cli"], args.repeat)
    print(f"python -c pass: {base:.3f} s CPU")
    print(f"import phr.cli: {imp:.3f} s CPU = {imp / base:.1f} x python -c pass")
    worst = 0.0
    for path in command_paths() if args.all else [list(p) for p in SAMPLE]:
        t = cpu_seconds([EXE, *path, "--help"], args.repeat)
        worst = max(worst, t)
        print(f"phr-publish {' '.join([*path, '--help'])}: {t:.3f} s CPU = {t / base:.1f} x")
    print(f"slowest --help: {worst:.3f} s CPU (goal <= 0.5 s)")


if __name__ == "__main__":
    main()

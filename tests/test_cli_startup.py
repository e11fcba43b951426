"""CLI start-up (issue 20 item 4): `--help` of every command works without loading the heavy libraries, and
`import phr.cli` costs a few bare interpreters, not seconds."""

from __future__ import annotations

import json
import resource
import subprocess
import sys

#: what no `--help` may load: the model, data and SDK stacks (each costs 0.1-2 s of CPU to import)
HEAVY = (
    "torch",
    "transformers",
    "datasets",
    "trl",
    "peft",
    "accelerate",
    "sentence_transformers",
    "pandas",
    "pyarrow",
    "numpy",
    "pandera",
    "great_expectations",
    "matplotlib",
    "sklearn",
    "xgboost",
    "huggingface_hub",
    "openai",
    "anthropic",
    "google.genai",
    "httpx",
)

#: every command's `--help`, in process, then the heavy modules that got loaded (printed as JSON)
HELP_ALL = """
import json, sys
import typer.main
from typer.testing import CliRunner
from phr.cli import app

def walk(cmd, path):
    yield path
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from walk(sub, [*path, name])

runner, seen = CliRunner(), []
for path in walk(typer.main.get_command(app), []):
    res = runner.invoke(app, [*path, "--help"])
    seen.append({"path": path, "code": res.exit_code, "usage": "Usage:" in res.output})
print(json.dumps({"commands": seen, "heavy": [m for m in HEAVY if m in sys.modules]}))
"""


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_import_phr_cli_loads_no_model_data_or_sdk_library():
    r = _python(f"import sys, phr.cli; print([m for m in {HEAVY!r} if m in sys.modules])")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_every_command_help_works_and_loads_no_heavy_library():
    r = _python(f"HEAVY = {HEAVY!r}\n{HELP_ALL}")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    paths = [" ".join(c["path"]) for c in out["commands"]]
    # the groups and a command of each (the list grows with the CLI; these must be there)
    for p in ("", "eval", "eval phrbench", "eval hr1", "build phrbench", "build hr1-paraphrases", "validate", "push"):
        assert p in paths
    for p in ("train grpo", "train sft", "analyze predictor", "analyze paraphrases", "llm ping", "report"):
        assert p in paths
    failed = [c for c in out["commands"] if c["code"] != 0 or not c["usage"]]
    assert failed == []
    assert out["heavy"] == []


def _cpu(argv: list[str], repeat: int = 3) -> float:
    """The least CPU time (user + system) of ``repeat`` runs of ``argv`` in a fresh process."""
    best = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, check=True, capture_output=True, timeout=300)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def test_import_phr_cli_costs_a_few_bare_interpreters():
    """CPU time, not wall time, each the least of three runs, against `python -c pass` in the same run: 6x here
    (0.29 s); 50x (2.4 s) before the command modules imported their library code lazily."""
    bare = _cpu([sys.executable, "-c", "pass"])
    cli = _cpu([sys.executable, "-c", "import phr.cli"])
    assert cli / bare < 20, f"import phr.cli: {cli:.2f} s CPU = {cli / bare:.0f} x python -c pass ({bare:.3f} s)"

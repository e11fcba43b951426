"""`phr-publish` as a user runs it: the installed entry point, in a subprocess (``run``), or the same command line
in the test's process (``invoke``: no interpreter start-up and no second import of torch, datasets and the QC
model, for tests that are about what a command does rather than about the process)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

EXE = shutil.which("phr-publish", path=str(Path(sys.executable).parent)) or "phr-publish"


def run(*args, env=None, timeout=None) -> subprocess.CompletedProcess:
    """Run ``phr-publish ARGS`` without the caller's API keys (plus ``env``); text output captured. No timeout of
    its own by default: pytest's (``timeout`` in pyproject.toml) ends a hung test, and a loaded machine that is
    slow is not a failure."""
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run([EXE, *args], env={**clean, **(env or {})}, capture_output=True, text=True, timeout=timeout)


def invoke(*args, env=None, cwd=None) -> subprocess.CompletedProcess:
    """``run``'s contract in this process: ``phr-publish ARGS`` through the CLI app (``phr.cli.app``) without the
    caller's API keys (plus ``env``), in ``cwd``; the environment and working folder are restored afterwards. An
    unexpected exception ends it as Python would end the process: its traceback on stderr, return code 1."""
    from typer.testing import CliRunner

    from phr.cli import app

    keys = {k: None for k in os.environ if k.endswith("_API_KEY")}
    saved = dict(os.environ)
    try:
        with contextlib.chdir(cwd or os.getcwd()):
            res = CliRunner().invoke(app, [str(a) for a in args], env={**keys, **(env or {})})
    finally:
        os.environ.clear()
        os.environ.update(saved)
    stderr = res.stderr
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        stderr += "".join(traceback.format_exception(res.exception))
    return subprocess.CompletedProcess(["phr-publish", *map(str, args)], res.exit_code, res.stdout, stderr)

"""`phr-publish` as a user runs it: the installed entry point, in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

EXE = shutil.which("phr-publish", path=str(Path(sys.executable).parent)) or "phr-publish"


def run(*args, env=None, timeout=None) -> subprocess.CompletedProcess:
    """Run ``phr-publish ARGS`` without the caller's API keys (plus ``env``); text output captured. No timeout of
    its own by default: pytest's (``timeout`` in pyproject.toml) ends a hung test, and a loaded machine that is
    slow is not a failure."""
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run([EXE, *args], env={**clean, **(env or {})}, capture_output=True, text=True, timeout=timeout)

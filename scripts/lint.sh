#!/usr/bin/env bash
# Habits checked in CI before the tests: ruff (lint + format check) and the import-layer contracts of
# pyproject.toml ([tool.importlinter]). The contracts run on a plain install of the package in .cache/lint-tree,
# because the editable install maps phr.builders, phr.eval, ... to top-level folders that import-linter does not see.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "[lint] ruff check"
.venv/bin/ruff check .
echo "[lint] ruff format --check"
.venv/bin/ruff format --check .
echo "[lint] import contracts (lint-imports)"
rm -rf .cache/lint-tree
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --target .cache/lint-tree . 2>&1 \
    | grep -v '^WARNING: Location' || true
rm -rf build
(cd .cache/lint-tree && PYTHONPATH="$PWD" ../../.venv/bin/lint-imports --config ../../pyproject.toml)

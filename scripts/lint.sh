#!/usr/bin/env bash
# Habits checked in CI before the tests: ruff (lint + format check), the import-layer contracts of
# pyproject.toml ([tool.importlinter]) and the type check (mypy, [tool.mypy]). The contracts and the types run on a
# plain install of the package in .cache/lint-tree, because the editable install maps phr.builders, phr.eval, ...
# to top-level folders that import-linter and mypy do not see as phr.*. Tools run as `python -m` so a worktree's
# venv that shares the main one's packages works too.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "[lint] ruff check"
.venv/bin/python -m ruff check .
echo "[lint] ruff format --check"
.venv/bin/python -m ruff format --check .
echo "[lint] import contracts (lint-imports)"
rm -rf .cache/lint-tree
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --target .cache/lint-tree . 2>&1 \
    | grep -v '^WARNING: Location' || true
rm -rf build
(cd .cache/lint-tree && PYTHONPATH="$PWD" ../../.venv/bin/python -c \
    'import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())' \
    --config ../../pyproject.toml)
echo "[lint] types (mypy on phr and the domain folders)"
(cd .cache/lint-tree && ../../.venv/bin/python -m mypy --config-file ../../pyproject.toml --cache-dir ../mypy -p phr)

"""Where the real benchmark files of ../shared/data are (PHR_SHARED_DATA overrides); tests that need them skip
with the reason when they are absent."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("PHR_SHARED_DATA") or REPO.parent / "shared" / "data")


def missing(name: str) -> str | None:
    """None when ``SHARED/name`` exists, else the skip reason."""
    path = SHARED / name
    return None if path.is_dir() else f"shared benchmark data {path} not present (set PHR_SHARED_DATA)"


def needs(*names: str) -> pytest.MarkDecorator:
    """Skips a test (or, as ``pytestmark``, a module) with the reason when one of ``SHARED/name`` is absent."""
    reasons = [r for r in map(missing, names) if r]
    return pytest.mark.skipif(bool(reasons), reason="; ".join(reasons))

"""A model "installed" in a Hugging Face cache folder, as `hf download` leaves it (refs/main -> a snapshot)."""

from __future__ import annotations

import json
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def install_snapshot(cache: Path, repo_id: str) -> Path:
    """Write ``repo_id``'s cache entry under ``cache`` (a config.json only: enough for the preflight, which loads
    nothing) and return its snapshot folder."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snap = repo / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    return snap


def use_cache(monkeypatch, cache: Path) -> Path:
    """Point the huggingface_hub client of this process at ``cache`` (it reads HF_HUB_CACHE at import)."""
    from huggingface_hub import constants

    cache.mkdir(parents=True, exist_ok=True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return cache

"""Where the toolkit keeps its files, read from the environment (one place for every default)."""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "PHR_HOME"  # models, exported datasets, the call cache (unless PHR_CACHE)
CACHE_ENV = "PHR_CACHE"  # the call cache file
HUB_DIR_ENV = "PHR_HUB_DIR"  # a local hub folder used instead of the Hugging Face Hub
MODELS_ENV = "PHR_MODELS"  # converted offline models (default $PHR_HOME/models)
DEFAULT_HOME = "~/.cache/phr"


def phr_home() -> Path:
    """``$PHR_HOME``, default ``~/.cache/phr``."""
    return Path(os.environ.get(HOME_ENV) or DEFAULT_HOME).expanduser()


def cache_path() -> Path:
    """The call cache: ``$PHR_CACHE``, default ``$PHR_HOME/calls.sqlite``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return phr_home() / "calls.sqlite"


def models_dir() -> Path:
    """Converted offline models: ``$PHR_MODELS``, default ``$PHR_HOME/models``."""
    return Path(os.environ[MODELS_ENV]).expanduser() if os.environ.get(MODELS_ENV) else phr_home() / "models"


def hub_dir(value: str | os.PathLike | None = None) -> Path | None:
    """The local hub to use: ``value``, else ``$PHR_HUB_DIR``, else ``None`` (the online Hub)."""
    if value is not None and str(value) != "":
        return Path(value).expanduser().resolve()
    env = os.environ.get(HUB_DIR_ENV)
    return Path(env).expanduser().resolve() if env else None

"""Shared test fixtures."""

import os

import pytest


# ---- local model (phr.llm.providers.hf_local) -----------------------------------------------------

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never download models


@pytest.fixture(scope="session")
def smollm2():
    """local:smollm2, loaded once per session (converted once into the default $PHR_HOME if needed)."""
    from phr.core.errors import ModelNotInstalledError
    from phr.llm.providers.hf_local import local_provider

    try:
        provider = local_provider("smollm2")
    except ModelNotInstalledError as e:
        pytest.skip(str(e))
    return provider.load()


# ---- PHRBench-mini, built once per session (read-only: copy it before changing it) -------------------------------

@pytest.fixture(scope="session")
def mini_folder(tmp_path_factory):
    from phr.builders.phrbench import build_mini

    out = tmp_path_factory.mktemp("mini") / "phrbench"
    build_mini(out)
    return out

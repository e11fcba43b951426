"""The suite never touches the user's ~/.cache/phr: every test has its own PHR_HOME and call cache."""

import os
from pathlib import Path

from phr.core.settings import cache_path, phr_home
from phr.llm import LLM


def test_each_test_has_its_own_phr_home(tmp_path):
    assert phr_home() == tmp_path / "phr-home"
    assert cache_path() == tmp_path / "phr-home" / "calls.sqlite"
    assert not str(cache_path()).startswith(str(Path("~/.cache/phr").expanduser()))
    assert "PHR_CACHE" not in os.environ and "PHR_HUB_DIR" not in os.environ  # the user's values are dropped


def test_the_call_cache_of_a_test_is_its_own(tmp_path):
    llm = LLM("openai-compatible:http://127.0.0.1:9#m", progress=False)
    assert llm.cache.path == tmp_path / "phr-home" / "calls.sqlite"

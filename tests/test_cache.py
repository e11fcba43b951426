import sqlite3

import pytest

from phr.llm.cache import CacheMode, CallCache, call_key
from phr.llm.types import GenerationParams, Message, Sample

MSGS = (Message("user", "What is 2+2?"),)


def key(**kw):
    args = dict(
        provider="openai",
        model="gpt-4o",
        revision=None,
        params=GenerationParams(temperature=0.7),
        messages=MSGS,
        sample_index=0,
    )
    args.update(kw)
    return call_key(**args)[0]


def test_key_is_stable_and_covers_every_input():
    base = key()
    assert base == key()
    variants = [
        key(provider="anthropic"),
        key(model="gpt-4o-mini"),
        key(revision="abc123"),
        key(params=GenerationParams(temperature=0.8)),
        key(params=GenerationParams(temperature=0.7, top_p=0.9)),
        key(params=GenerationParams(temperature=0.7, top_k=5)),
        key(params=GenerationParams(temperature=0.7, max_tokens=100)),
        key(params=GenerationParams(temperature=0.7, seed=1)),
        key(params=GenerationParams(temperature=0.7, stop=("\n",))),
        key(messages=(Message("system", "be terse"),) + MSGS),
        key(messages=(Message("user", "What is 2+3?"),)),
        key(sample_index=1),
    ]
    assert len({base, *variants}) == len(variants) + 1


def sample(i=0, text="4"):
    return Sample(i, text, "stop", 10, 1, 0.05, "gpt-4o")


def test_put_get_roundtrip_and_modes(tmp_path):
    path = tmp_path / "c.sqlite"
    c = CallCache(path)
    k, req = call_key("openai", "gpt-4o", None, GenerationParams(), MSGS, 0)
    assert c.get(k) is None
    c.put(k, req, "openai", None, sample())
    hit = c.get(k)
    assert hit.text == "4" and hit.cached and hit.prompt_tokens == 10 and hit.finish_reason == "stop"
    # use mode never overwrites; refresh mode ignores hits and overwrites
    c.put(k, req, "openai", None, sample(text="five"))
    assert c.get(k).text == "4"
    r = CallCache(path, mode="refresh")
    assert r.get(k) is None
    r.put(k, req, "openai", None, sample(text="four"))
    assert CallCache(path).get(k).text == "four"
    off = CallCache(tmp_path / "off.sqlite", mode=CacheMode.OFF)
    off.put(k, req, "openai", None, sample())
    assert off.get(k) is None and not (tmp_path / "off.sqlite").exists()


def test_wal_mode_stats_and_clear(tmp_path):
    path = tmp_path / "c.sqlite"
    c = CallCache(path)
    for i in range(3):
        k, req = call_key("openai", "gpt-4o", None, GenerationParams(), MSGS, i)
        c.put(k, req, "openai", None, sample(i))
    k, req = call_key("anthropic", "claude", None, GenerationParams(), MSGS, 0)
    c.put(k, req, "anthropic", None, Sample(0, "4", "end_turn", 7, 2, 0.1, "claude"))
    c.record_failure(k, "anthropic", "claude", 1, "rate_limit", "429", 6)
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    st = c.stats()
    assert st.entries == 4 and st.failures == 1
    assert ("openai", "gpt-4o", 3, 30, 3) in st.by_model
    assert c.clear(model="claude") == 1
    assert c.stats().entries == 3
    assert c.clear() == 3 and c.stats().entries == 0


def test_params_validation():
    with pytest.raises(ValueError, match="temperature"):
        GenerationParams(temperature=-1)
    with pytest.raises(ValueError, match="top_p"):
        GenerationParams(top_p=0)
    assert GenerationParams(stop="END").stop == ("END",)

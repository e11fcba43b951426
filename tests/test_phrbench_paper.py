"""The paper recipe at full scale (460 / 460 / 3900 / 4820) on released-format fixtures.

The generator is a deterministic "model" behind the real OpenAI protocol (ProtocolServer's responder), so the
whole LLM path runs: cache, structured output with re-asks, rule checks, regeneration of rejected slots.
"""

import hashlib
import json
import re
import threading
from collections import Counter

import pyarrow.parquet as pq
import pytest

from phr.bench.folder import data_file
from phr.builders.phrbench import build
from phr.builders.recipe import RecipeError
from phr.validation.folder import validate_folder
from tests.support.paper_fixtures import WORDS, write_sources
from tests.support.protocol_server import ProtocolServer


def _words(seed: str, k: int) -> str:
    h = hashlib.sha256(seed.encode()).digest()
    return " ".join(WORDS[b % len(WORDS)] + WORDS[(b // 7) % len(WORDS)] for b in h[:k])


_seen: Counter = Counter()
_lock = threading.Lock()


def responder(model, messages, k):
    """Valid premises, except: the first answer to some prompts is not JSON (fixed by the re-ask) and the
    second sample of some hallucinated prompts leaks the gold answer (rejected, regenerated next round)."""
    prompt = messages[0][1]
    last = messages[-1][1]
    if "<premise>" in prompt:  # the judge: rejects ~1 in 13 premises for type consistency
        premise = re.search(r"<premise>\n(.*?)\n</premise>", prompt, re.S).group(1)
        bad = int(hashlib.sha256(premise.encode()).hexdigest(), 16) % 13 == 0 and "Mutation types:" in prompt
        return json.dumps(
            {
                "reason": "checked",
                "factual_validity": True,
                "relevance": True,
                "type_consistency": not bad if "Mutation types:" in prompt else None,
                "mutation_logic_consistent": True if "Mutation types:" in prompt else None,
                "plausible": True if "Mutation types:" in prompt else None,
                "single_claim": True if "Mutation types:" in prompt else None,
                "leaks_answer": False,
                "verdict": "reject" if bad else "accept",
            }
        )
    key = hashlib.sha256(prompt.encode()).hexdigest()
    answer = re.search(r"do not reveal it\): (.*)", prompt).group(1)
    if len(messages) == 1 and k == 0 and int(key, 16) % 11 == 0:
        return "Sorry, here is my premise without JSON."
    with _lock:  # the server's k restarts per seed; a counter per prompt keeps every sample distinct
        _seen[key] += 1
        nth = _seen[key]
    statement = f"The toy system obeys the {_words(key + str(nth), 6)} relation."
    if "Mutation type:" not in prompt:
        return json.dumps({"statement": statement, "truth_verification": "It follows from the toy rules."})
    if k == 1 and int(key, 16) % 5 == 0 and "re-ask" not in last:
        statement = f"The toy system says the answer is {answer}."
    return "Here you go: " + json.dumps(
        {"mutation_strategy": "swap", "mutation_logic": "It swaps one relation.", "statement": statement}
    )


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("paper")
    write_sources(root / "sources")
    with ProtocolServer(responder=responder) as srv:
        mp = pytest.MonkeyPatch()
        mp.setenv("OPENAI_API_KEY", "sk-test-paper-0123456789")
        mp.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        mp.setenv("PHR_CACHE", str(root / "calls.sqlite"))
        yield root, srv
        mp.undo()


@pytest.fixture(scope="module")
def built(env):
    root, srv = env
    res = build(
        "paper",
        root / "out",
        generator="openai:gpt-4o",
        judge="openai:judge-model",
        source_dir=root / "sources",
        progress=False,
    )
    return res, srv.count


def test_paper_counts(built):
    res, _ = built
    assert res.counts == {"baseline": 460, "truthful": 460, "hallucinated": 3900}
    out = res.out
    base = pq.read_table(data_file(out, "baseline")).to_pylist()
    per_source = Counter((r["source"], r["domain"]) for r in base)
    assert per_source == {
        ("bbbp", "Chemistry"): 50,
        ("chembench", "Chemistry"): 50,
        ("gpqa", "Chemistry"): 20,
        ("medmcqa", "Biomedicine"): 100,
        ("gpqa", "Biomedicine"): 20,
        ("mmlu", "Physics"): 50,
        ("sciq", "Physics"): 50,
        ("gpqa", "Physics"): 20,
        ("humaneval", "Code"): 50,
        ("mbpp", "Code"): 50,
    }
    mmlu = Counter(r["source_row_id"].split("/")[0] for r in base if r["source"] == "mmlu")
    assert mmlu == {"college_physics": 14, "conceptual_physics": 36}
    hall = pq.read_table(data_file(out, "hallucinated")).to_pylist()
    types = Counter(r["mutation_type"] for r in hall)
    assert types == {"Rule Contradiction": 1440, "State Distortion": 1380, "Pseudoscientific Entanglement": 1080}
    assert Counter(r["mutation_type"] for r in hall if r["domain"] == "Code") == {"State Distortion": 300}
    assert sum(res.counts.values()) == 4820


def test_rejections_were_regenerated_and_recorded(env, built):
    res, _ = built
    _, srv = env
    reasks = [r for r in srv.requests if len(r["json"]["messages"]) == 3]
    assert reasks and all("could not be used" in r["json"]["messages"][-1]["content"] for r in reasks)
    assert "rejected: generator_output" not in res.qc  # every non-JSON reply was fixed by its re-ask
    assert res.qc["premises generated"] > res.qc["accepted"]
    assert res.qc.get("rejected: leakage", 0) > 0  # leaking samples were caught ...
    assert res.qc.get("rejected: judge", 0) > 0  # ... and so were the judge's rejections ...
    assert res.qc["accepted"] == 460 + 3900  # ... and their slots regenerated
    manifest = json.loads((res.out / "manifest.json").read_text())
    assert any(r["check"] == "leakage" for r in manifest["rejections"])
    hall = pq.read_table(data_file(res.out, "hallucinated")).to_pylist()
    assert not any(r["answer"] in r["premise"] for r in hall if len(r["answer"]) > 6)
    assert validate_folder(res.out).ok


def test_rebuild_is_exact_from_cache(env, built, tmp_path):
    root, srv = env
    res, calls_first = built
    again = build(
        "paper",
        tmp_path / "again",
        generator="openai:gpt-4o",
        judge="openai:judge-model",
        source_dir=root / "sources",
        progress=False,
    )
    assert srv.count == calls_first  # zero new calls
    for name in ("baseline", "truthful", "hallucinated"):
        assert data_file(res.out, name).read_bytes() == data_file(again.out, name).read_bytes()


def test_short_sources_fail_clearly_and_write_nothing(env, tmp_path):
    root, _ = env
    import shutil

    src = tmp_path / "src"
    shutil.copytree(root / "sources", src)
    (src / "sciq" / "train.json").write_text(json.dumps(json.loads((src / "sciq" / "train.json").read_text())[:10]))
    with pytest.raises(RecipeError, match=r"sciq .*10 of 50"):
        build("paper", tmp_path / "out", generator="openai:gpt-4o", judge="none", source_dir=src, progress=False)
    assert not (tmp_path / "out").exists()

"""The paper recipe at full scale (460 / 460 / 3900 / 4820) on released-format fixtures, with the paper's prompts.

The generator is a deterministic "model" behind the real OpenAI protocol (ProtocolServer's responder), so the
whole LLM path runs: cache, structured output with re-asks, rule checks, regeneration of rejected slots. It
chooses each premise's mutation type (tests/support/paper_fixtures.py: paper_responder).
"""

import json
from collections import Counter

import pyarrow.parquet as pq
import pytest

from phr.bench.folder import data_file
from phr.builders.generate import Prompts
from phr.builders.recipe import RecipeError
from phr.config.ops import BuildPhrbenchConfig
from phr.ops.build_phrbench import build
from phr.validation.folder import validate_folder
from tests.support.paper_fixtures import PAPER_STRATEGIES, build_on_server, paper_responder, write_sources
from tests.support.protocol_server import ProtocolServer

pytestmark = pytest.mark.slow  # paper scale: 4,820 premises through the client and the QC model


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("paper")
    write_sources(root / "sources")
    with ProtocolServer(responder=paper_responder()) as srv:
        mp = pytest.MonkeyPatch()
        mp.setenv("OPENAI_API_KEY", "sk-test-paper-0123456789")
        mp.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        mp.setenv("PHR_CACHE", str(root / "calls.sqlite"))
        yield root, srv
        mp.undo()


@pytest.fixture(scope="module")
def built(env):
    root, srv = env
    res = build_on_server("paper", root / "out", root / "sources", skip_review=True)
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
    named = dict(PAPER_STRATEGIES)
    for r in hall:  # the type is the one the generator named in mutation_strategy
        assert r["mutation_type"] == named[r["mutation_strategy"]], r["id"]
    assert Counter(r["mutation_type"] for r in hall if r["domain"] == "Code") == {"State Distortion": 300}
    science = Counter(r["mutation_type"] for r in hall if r["domain"] != "Code")
    assert sum(science.values()) == 3600 and set(science) == set(filter(None, named.values()))
    # not the v0 cycle (4 / 3 / 3 per question): 3 of the 9 accepted strategies name each type, with noise
    per_question = Counter(
        tuple(sorted(Counter(r["mutation_type"] for r in hall if r["question_id"] == q).items()))
        for q in {r["question_id"] for r in hall if r["domain"] != "Code"}
    )
    assert len(per_question) > 10
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
    assert manifest["prompts"] == "paper"
    prompt_hashes = {k: v for k, v in manifest["prompt_hashes"].items() if k.startswith("prompts/")}
    assert prompt_hashes == Prompts.load("paper").hashes
    assert set(prompt_hashes) == {"prompts/prompt_t.txt", "prompts/prompt_h.txt", "prompts/code_h.txt"}
    reasons = Counter(r["reason"] for r in manifest["rejections"] if r["check"] == "mutation_type")
    assert (
        reasons[
            "mutation_strategy 'swap one relation' names none of the mutation types: expected Rule "
            "Contradiction, State Distortion or Pseudoscientific Entanglement"
        ]
        > 0
    )
    assert (
        reasons[
            "mutation_strategy 'State Distortion or Rule Contradiction' names more than one mutation type "
            "(Rule Contradiction and State Distortion)"
        ]
        > 0
    )
    assert reasons["the generator chose Rule Contradiction; Code questions take only State Distortion"] > 0
    hall = pq.read_table(data_file(res.out, "hallucinated")).to_pylist()
    assert not any(r["answer"] in r["premise"] for r in hall if len(r["answer"]) > 6)
    assert validate_folder(res.out).ok


def test_rebuild_is_exact_from_cache(env, built, tmp_path):
    root, srv = env
    res, calls_first = built
    again = build_on_server("paper", tmp_path / "again", root / "sources", skip_review=True)
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
        build(
            BuildPhrbenchConfig(
                recipe="paper", out=tmp_path / "out", generator="openai:gpt-4o", judge="none", source_dir=src
            ),
            progress=False,
        )
    assert not (tmp_path / "out").exists()


def test_generator_sees_only_the_paper_prompt_and_the_question(env, built):
    """PROMPT_H / PROMPT_T verbatim (§A.2) around the standardized question; no gold answer, no type."""
    _, srv = env
    paper = Prompts.load("paper")
    prompts = [r["json"]["messages"][0]["content"] for r in srv.requests if "<premise>" not in str(r["json"])]
    hall = [p for p in prompts if p.startswith(paper.hallucinated.template.split("$task")[0])]
    truth = [p for p in prompts if p.startswith(paper.truthful.template.split("$task")[0])]
    assert len(hall) + len(truth) == len(prompts) and hall and truth
    code = [p for p in hall if "def " in p]
    assert code and all(p.endswith('set mutation_strategy to "State Distortion".\n') for p in code)
    assert not any("State Distortion only" in p for p in hall if "def " not in p)
    assert not any("do not reveal" in p or "Mutation type:" in p for p in prompts)
    mmlu = next(p for p in truth if "SYNTHETIC college_physics ITEM " in p)
    tail = mmlu.split("Base Question: ")[1]
    assert tail.startswith("Question: SYNTHETIC college_physics ITEM ")
    assert tail.endswith('Output Format:{ "statement": "...", "truth_verification": "..." }\n')

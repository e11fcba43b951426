"""Builds that `validate` must accept and reruns that must be exact (issue 14, items 1, 3 and 4).

- The paper recipe from the real ../shared/data MBPP, SciQ and BBBP files (HumanEval from the offline package,
  the other sources from the paper fixtures), premises from a deterministic model behind the real OpenAI
  protocol: the build validates and pushes to a local hub, also when code premises quote the shown `def` line.
- A model call that fails after all retries fails the build (nothing written, the failed slots and the rerun
  command listed); the rerun on the same cache ends byte-identical to a fault-free build, for a failure at each
  of several positions (first call, a re-ask, a judge call, a regeneration round, the last call).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from phr.bench.folder import data_file
from phr.bench.instance import arrow_schema
from phr.bench.records import question_from_row, question_row
from phr.builders.phrbench import BuildError
from phr.builders.recipe import _rank
from phr.builders.sources import load_source, question_id
from phr.config.ops import BuildPhrbenchConfig, PullConfig, PushConfig
from phr.ops.build_phrbench import build
from phr.validation.folder import validate_folder
from tests.support.paper_fixtures import WORDS, build_on_server, judge_reply, write_sources
from tests.support.protocol_server import ProtocolServer

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PHR_SHARED_DATA") or REPO.parent / "shared" / "data")
PAPER_SEED = 20260101
TINY_SEED = 7
TINY = f"""
name: tiny
seed: {TINY_SEED}
slots:
  science: {{truthful: 1, hallucinated: [Rule Contradiction, State Distortion, Rule Contradiction]}}
  code: {{truthful: 1, hallucinated: [State Distortion, State Distortion]}}
sources:
  - {{source: sciq, domain: Physics, count: 3}}
  - {{source: mbpp, domain: Code, count: 2}}
generation: {{temperature: 0.9, max_tokens: 256, regeneration_rounds: 2}}
"""
ATTEMPTS = 2
FAST = {"max_attempts": ATTEMPTS, "backoff_initial": 0.01, "backoff_max": 0.05, "concurrency": 4}


def _h(*parts: object) -> int:
    return int(hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest(), 16)


def _words(seed: int, k: int) -> str:
    return " ".join(WORDS[(seed >> (8 * i)) % len(WORDS)] + WORDS[(seed >> (8 * i + 4)) % len(WORDS)] for i in range(k))


def make_responder(recipe_seed: int, *, quote_def: bool = False):
    """A deterministic "model": the reply is a function of the prompt and the sample index (seed - recipe seed +
    k), so a rerun that makes a call again gets the same reply. Some first asks are not JSON (fixed by the
    re-ask), some hallucinated samples leak the answer (rejected by the rule checks, regenerated), the judge
    rejects some hallucinated premises. ``quote_def``: truthful code premises quote the task's `def` line."""

    def responder(model, messages, k, seed=None):
        prompt = messages[0][1]
        index = k if seed is None else seed - recipe_seed + k
        if "<premise>" in prompt:  # the judge (temperature 0, no seed)
            return judge_reply(prompt, lambda premise: _h("judge", premise) % 4 == 0)
        if len(messages) == 1 and _h("json", prompt, index) % 7 == 0:
            return "Sorry, here is my premise without JSON."
        statement = f"The toy system obeys the {_words(_h(prompt, index), 6)} relation."
        if "Mutation type:" not in prompt:
            defs = re.findall(r"^(def \w+\(.*\).*:)\s*$", prompt, re.M)
            if quote_def and defs:
                statement = f"The task's function is declared as {defs[0]} and obeys the {_words(_h(prompt), 2)} rule."
            return json.dumps({"statement": statement, "truth_verification": "It follows from the toy rules."})
        if index % 4 == 1 and _h("leak", prompt) % 3 == 0 and len(messages) == 1:
            answer = re.search(r"do not reveal it\): (.*)", prompt).group(1)
            statement = f"The toy system says the answer is {answer}."
        return "Here you go: " + json.dumps(
            {"mutation_strategy": "swap", "mutation_logic": "It swaps one relation.", "statement": statement}
        )

    return responder


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def llm_env(monkeypatch):
    """Point the OpenAI client at a server; returns a function (server, cache file) -> None."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-faults-0123456789")

    def use(srv: ProtocolServer, cache: Path) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        monkeypatch.setenv("PHR_CACHE", str(cache))

    return use


# ---- item 1 + acceptance: the paper recipe from the real files validates and pushes -----------------------------


def shared(name: str) -> Path:
    path = SHARED / name
    if not path.is_dir():
        pytest.skip(f"shared benchmark data {path} not present (set PHR_SHARED_DATA)")
    return path


def test_question_rows_round_trip_every_field():
    """What a question is, as written by the builder and read back by `validate`: every field, every source."""
    assert set(question_row(load_source("humaneval")[0])) <= set(arrow_schema().names)
    qs = [
        *load_source("humaneval")[:3],
        *load_source("mbpp", shared("mbpp"))[:3],
        *load_source("sciq", shared("sciq"))[:3],
    ]
    for q in qs:
        row = question_row(q)
        assert row["question_id"] == q.id and row["code_signature"] == q.code_signature
        assert question_from_row(json.loads(json.dumps(row))) == q
    mbpp_q = qs[3]
    assert mbpp_q.code_signature.startswith(f"def {mbpp_q.entry_point}(") and "def " not in mbpp_q.question


@pytest.fixture(scope="module")
def real_paper(tmp_path_factory):
    src = tmp_path_factory.mktemp("real") / "sources"
    write_sources(src)
    for name in ("mbpp", "sciq", "bbbp"):
        shutil.rmtree(src / name)
        shutil.copytree(shared(name), src / name)
    mp = pytest.MonkeyPatch()
    with ProtocolServer(responder=make_responder(PAPER_SEED, quote_def=True)) as srv:
        mp.setenv("OPENAI_API_KEY", "sk-test-real-0123456789")
        mp.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        mp.setenv("PHR_CACHE", str(src.parent / "calls.sqlite"))
        try:
            cfg = BuildPhrbenchConfig(
                recipe="paper", out=src.parent / "out", generator="openai:gpt-4o", judge="none", source_dir=src,
                prompts="v0",
            )  # fmt: skip
            res = build(cfg, progress=False)
        finally:
            mp.undo()
    return res


@pytest.mark.slow  # paper scale: 4,820 premises through the client and the QC model
def test_paper_build_from_real_files_validates(real_paper):
    out = real_paper.out
    assert real_paper.counts == {"baseline": 460, "truthful": 460, "hallucinated": 3900}
    base = pq.read_table(data_file(out, "baseline")).to_pylist()
    assert Counter(r["source"] for r in base if r["source"] in ("mbpp", "sciq", "bbbp", "humaneval")) == {
        "mbpp": 50,
        "sciq": 50,
        "bbbp": 50,
        "humaneval": 50,
    }
    truthful = pq.read_table(data_file(out, "truthful")).to_pylist()
    quoting = [r for r in truthful if r["source"] == "mbpp" and f"def {r['entry_point']}(" in r["premise"]]
    assert len(quoting) == 50  # every MBPP truthful premise quotes the `def` line the model is shown ...
    assert all(r["code_signature"].startswith(f"def {r['entry_point']}(") for r in base if r["source"] == "mbpp")
    report = validate_folder(out)
    assert report.ok, report.render()  # ... and `validate` agrees with the build that it leaks nothing


@pytest.mark.slow  # paper scale: 4,820 premises through the client and the QC model
def test_paper_build_from_real_files_pushes_to_a_local_hub(real_paper, tmp_path):
    from datasets import load_dataset

    from phr.hub import pull, push
    from phr.hub.card import usage_for_repo
    from phr.hub.errors import ValidationFailedError

    hub = tmp_path / "hub"
    # a paper build needs every premise reviewed before a push (paper §A.2) ...
    with pytest.raises(ValidationFailedError, match="4360 of 4360 premises have no manual review decision"):
        push(PushConfig(folder=real_paper.out, repo="org/phrbench-real", tag="v1.0.0", hub=hub))
    # ... unless allowed (`phr-publish push --allow-unreviewed`)
    cfg = PushConfig(folder=real_paper.out, repo="org/phrbench-real", tag="v1.0.0", hub=hub, allow_unreviewed=True)
    res = push(cfg)
    assert res.changed and res.created and res.tag_created
    got = pull(PullConfig(repo="org/phrbench-real", revision="v1.0.0", hub=hub, out=tmp_path / "pulled"))
    # byte for byte, but for the card's usage block, which the push rewrites to name the repo
    pushed, built = folder_bytes(got), folder_bytes(real_paper.out)
    card = built.pop("README.md").decode()
    assert pushed.pop("README.md").decode() == usage_for_repo(card, "org/phrbench-real")
    assert pushed == built
    assert len(load_dataset(str(got), "all")["test"]) == 4820


# ---- item 4: a 1-option SciQ row is rejected by the loader, so the build agrees with validate --------------------


def test_build_skips_one_option_sciq_rows_and_validates(tmp_path, llm_env):
    src = write_sources(tmp_path / "src", n=6)
    rows = json.loads((src / "sciq" / "train.json").read_text())[:3]
    # the 1-option row goes where the recipe's seeded ranking picks first, so a loader that keeps it builds it
    first = min(range(4), key=lambda i: _rank(TINY_SEED, question_id("sciq", f"train/{i}")))
    rows.insert(
        first,
        {
            **rows[0],
            "question": "What gas is it?",
            "correct_answer": "oxygen",
            "distractor1": "oxygen",
            "distractor2": "oxygen",
            "distractor3": "oxygen",
        },
    )
    (src / "sciq" / "train.json").write_text(json.dumps(rows, indent=16))
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(TINY)
    with ProtocolServer(responder=make_responder(TINY_SEED)) as srv:
        llm_env(srv, tmp_path / "calls.sqlite")
        cfg = BuildPhrbenchConfig(
            recipe=str(recipe),
            out=tmp_path / "out",
            generator="openai:gpt-4o",
            judge="none",
            source_dir=src,
            prompts="v0",  # make_responder answers the v0 prompts (gold answer shown, type per slot)
        )
        res = build(cfg, progress=False, llm_options=FAST)
    base = pq.read_table(data_file(res.out, "baseline")).to_pylist()
    assert sorted(r["source_row_id"] for r in base if r["source"] == "sciq") == sorted(
        f"train/{i}" for i in range(4) if i != first
    )
    assert all(len(set(r["options"])) == len(r["options"]) >= 2 for r in base if r["task_type"] == "multiple_choice")
    report = validate_folder(res.out)
    assert report.ok, report.render()
    manifest = json.loads((res.out / "manifest.json").read_text())
    assert manifest["source_rejections"] == [
        f"{src / 'sciq' / 'train.json'}: row {first + 1} (index {first}): fewer than two distinct options "
        "(answer 'oxygen', options after removing duplicates: ['oxygen'])"
    ]


# ---- item 3: a failed call fails the build; the rerun is exact ----------------------------------------------------


def build_tiny(recipe: Path, out: Path, src: Path):
    """The tiny build as the tests here run it: the v0 prompts (make_responder answers them: gold answer shown,
    type per slot), and the judge during generation (``skip_review``: the fast path, where these faults are placed)."""
    return build_on_server(recipe, out, src, prompts="v0", llm_options=FAST, skip_review=True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny recipe, its sources, and a fault-free build with the request log of its calls."""
    root = tmp_path_factory.mktemp("tiny")
    src = write_sources(root / "src", n=8)
    recipe = root / "tiny.yaml"
    recipe.write_text(TINY)
    mp = pytest.MonkeyPatch()
    with ProtocolServer(responder=make_responder(TINY_SEED)) as srv:
        mp.setenv("OPENAI_API_KEY", "sk-test-faults-0123456789")
        mp.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        mp.setenv("PHR_CACHE", str(root / "clean.sqlite"))
        try:
            res = build_tiny(recipe, root / "clean", src)
        finally:
            mp.undo()
        calls = [r["json"] for r in srv.requests]
    return root, src, recipe, res, calls


def _positions(calls: list[dict]) -> dict[str, dict]:
    """Calls of the fault-free build to fail: first, a re-ask, a judge call, a regeneration round, the last one."""
    gen = [c for c in calls if c["model"] == "gpt-4o"]
    out = {
        "first generator call": gen[0],
        "a re-ask": next(c for c in gen if len(c["messages"]) == 3),
        "a judge call": [c for c in calls if c["model"] == "judge-model"][5],
        "a regeneration round": next(
            c
            for c in gen
            if len(c["messages"]) == 1
            and c["seed"] - TINY_SEED >= 2
            and "Mutation type: Rule Contradiction" in c["messages"][0]["content"]
        ),
        "the last call": calls[-1],
    }
    assert len({json.dumps(c, sort_keys=True) for c in out.values()}) == len(out)
    return out


def test_fault_free_build_exercised_every_path(tiny):
    _, _, _, res, calls = tiny
    assert res.counts == {"baseline": 5, "truthful": 5, "hallucinated": 13}
    assert res.qc.get("rejected: leakage", 0) > 0 and res.qc.get("rejected: judge", 0) > 0
    assert any(len(c["messages"]) == 3 for c in calls)  # re-asks happened
    assert validate_folder(res.out).ok
    _positions(calls)


def test_failed_call_fails_the_build_and_the_rerun_is_byte_identical(tiny, tmp_path, llm_env):
    root, src, recipe, clean, calls = tiny
    expected = folder_bytes(clean.out)
    known = {json.dumps(c, sort_keys=True) for c in calls}
    for name, target in _positions(calls).items():
        cache, out = tmp_path / f"{len(os.listdir(tmp_path))}.sqlite", tmp_path / f"out-{name.replace(' ', '-')}"
        with ProtocolServer(responder=make_responder(TINY_SEED)) as srv:
            llm_env(srv, cache)
            srv.script("/v1/chat/completions", [("status", 500)] * ATTEMPTS, match=lambda b, t=target: b == t)
            with pytest.raises(BuildError) as err:
                build_tiny(recipe, out, src)
            faulted = [r for r in srv.requests if r["fault"] is not None]
        msg = str(err.value)
        assert len(faulted) == ATTEMPTS and all(r["json"] == target for r in faulted), name  # retried, then failed
        assert "premise slot(s) of 1 question(s) were not completed: a model call failed after all retries" in msg
        assert "server_error after 2 attempt(s)" in msg and "(nothing was written)" in msg, msg
        assert (
            f"phr-publish --cache {cache} build phrbench --recipe {recipe} --out {out} --generator openai:gpt-4o "
            f"--judge openai:judge-model --source-dir {src}"
        ) in msg, msg
        assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(f".{out.name}")], name

        with ProtocolServer(responder=make_responder(TINY_SEED)) as srv:  # the fault is gone: same command
            llm_env(srv, cache)
            again = build_tiny(recipe, out, src)
            made = [json.dumps(r["json"], sort_keys=True) for r in srv.requests]
        assert json.dumps(target, sort_keys=True) in made and set(made) <= known, name  # only missing calls
        assert folder_bytes(again.out) == expected, name

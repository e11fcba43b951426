"""The evaluation runner: selection, limit, shards, merge, cache resume, failures (a protocol-server model), run
through the operation's plan (``phr.api.plan`` of an ``EvalPhrbenchConfig``, ``score: false``)."""

import json
from dataclasses import replace

import pytest

from phr import api
from phr.config.ops import EvalPhrbenchConfig
from phr.eval.dataset import DatasetError, check_conditions, load_eval_dataset
from phr.eval.runner import (
    GENERATIONS_FILE,
    RESPONSES_FILE,
    RunError,
    load_run,
    merge_runs,
    parse_shard,
    select_instances,
)
from phr.eval.submission import SubmissionMeta, validate_submission
from phr.llm.preflight import PreflightError


def model(model, messages, k):
    """A deterministic model: always candidate 1, with a sample-dependent preamble."""
    return f"Step one. Wait, sample {k}.\nAnswer: 1"


@pytest.fixture
def fake(fake_openai):
    """The protocol server answering as ``model`` (``fake.server``) and LLMs on it (``fake.llm()``)."""
    return fake_openai(model)


@pytest.fixture
def llm(fake):
    return lambda: fake.llm(max_attempts=2)


def planned(ds, **settings):
    """The plan of a generation-only run of the fake model on ``ds`` with ``settings``."""
    return api.plan(
        EvalPhrbenchConfig(model="openai:gpt-4o", dataset=str(ds.path), scorer="none", score=False, **settings)
    )


def generate(ds, llm, **settings):
    """Run ``planned(ds, **settings)`` with ``llm`` (fast retries) as the model's client: the run folder."""
    return api.run(replace(planned(ds, **settings), llm=llm)).run


@pytest.fixture(scope="module")
def ds(mini_folder):
    return load_eval_dataset(mini_folder)


def test_dataset_loads_mini_with_hashes(ds, mini_folder):
    assert len(ds.instances) == 170
    assert [sum(i.condition == c for i in ds.instances) for c in ("B", "B+T", "B+H")] == [34, 34, 102]
    assert ds.id == "local/phrbench" and ds.revision.startswith("sha256:") and len(ds.files) == 3
    assert load_eval_dataset(mini_folder).revision == ds.revision  # stable


def test_dataset_errors(tmp_path):
    with pytest.raises(DatasetError, match="not a built PHRBench folder"):
        load_eval_dataset(tmp_path)
    with pytest.raises(DatasetError, match="neither a folder nor a repo id"):
        load_eval_dataset(str(tmp_path / "missing" / "x" / "y"))
    with pytest.raises(DatasetError, match="unknown condition"):
        check_conditions("B,X")
    assert check_conditions("hallucinated,b") == ("B", "B+H")


def test_limit_keeps_whole_questions(ds):
    sel = select_instances(ds, ("B", "B+T", "B+H"), limit=2)
    qids = list(dict.fromkeys(i.question_id for i in ds.instances))[:2]
    assert {i.question_id for i in sel} == set(qids)
    assert len(sel) == sum(1 for i in ds.instances if i.question_id in qids)
    assert [i.id for i in sel] == [i.id for i in ds.instances if i.question_id in qids]  # dataset order


def test_shards_are_disjoint_and_cover(ds):
    shards = [select_instances(ds, ("B", "B+H"), shard=(i, 3)) for i in (1, 2, 3)]
    ids = [i.id for s in shards for i in s]
    assert len(ids) == len(set(ids)) == 34 + 102
    for s in shards:  # a question's conditions stay together
        qs = {i.question_id for i in s}
        assert all(i.question_id not in qs for o in shards if o is not s for i in o)
    assert [len({i.question_id for i in s}) for s in shards] == [12, 11, 11]


@pytest.mark.parametrize("text", ["0/2", "3/2", "1/0", "x", "1-2"])
def test_bad_shard(text):
    with pytest.raises(RunError, match="--shard"):
        parse_shard(text)


def test_run_writes_a_valid_submission_and_resumes(ds, llm, fake, tmp_path):
    cfg = {"samples": 2, "max_tokens": 64}
    run = generate(ds, llm(), out=tmp_path / "run", **cfg)
    assert len(run.responses) == 340 and not run.failures
    assert run.responses[(ds.instances[0].id, 1)] == model(None, None, 1)
    sub = validate_submission(run.path / RESPONSES_FILE, ds, SubmissionMeta(model="m", revision="r", samples=2))
    assert len(sub.responses) == 340
    meta = json.loads((run.path / "run.json").read_text())
    assert meta["dataset"]["files"] == ds.files and meta["samples"] == 2 and meta["generation"]["temperature"] == 0.7
    # the paper's sampling settings reach the API
    body = fake.server.requests[0]["json"]
    assert (
        body["temperature"] == 0.7
        and body["n"] == 2
        and body.get("max_completion_tokens", body.get("max_tokens")) == 64
    )
    before = fake.server.count
    again = generate(ds, llm(), out=tmp_path / "run2", **cfg)
    assert fake.server.count == before  # every sample from the cache
    assert (again.path / RESPONSES_FILE).read_bytes() == (run.path / RESPONSES_FILE).read_bytes()
    assert again.meta["run_id"] == run.meta["run_id"]


def test_shards_merge_into_the_unsharded_run(ds, llm, tmp_path):
    base = {"samples": 2, "limit": 7, "max_tokens": 64}
    whole = generate(ds, llm(), out=tmp_path / "whole", **base)
    parts = [generate(ds, llm(), runs=tmp_path / "runs", shard=f"{i}/3", **base) for i in (1, 2, 3)]
    assert [p.path.name for p in parts] == [f"{whole.meta['run_id']}-shard-{i}-of-3" for i in (1, 2, 3)]
    merged = merge_runs([parts[2].path, parts[0].path, parts[1].path], tmp_path / "merged")
    assert (merged.path / RESPONSES_FILE).read_bytes() == (whole.path / RESPONSES_FILE).read_bytes()
    assert merged.instance_ids == whole.instance_ids and load_run(merged.path).meta["shard"] is None

    with pytest.raises(RunError, match=r"missing shard\(s\) 2/3"):
        merge_runs([parts[0].path, parts[2].path], tmp_path / "m2")
    with pytest.raises(RunError, match=r"shard\(s\) 1/3 given twice"):
        merge_runs([parts[0].path, parts[0].path, parts[1].path, parts[2].path], tmp_path / "m3")
    with pytest.raises(RunError, match="not a shard"):
        merge_runs([whole.path, parts[0].path], tmp_path / "m4")
    other = generate(ds, llm(), out=tmp_path / "o", **{**base, "samples": 1, "shard": "2/3"})
    with pytest.raises(RunError, match="not shards of one run"):
        merge_runs([parts[0].path, other.path, parts[2].path], tmp_path / "m5")
    assert not (tmp_path / "m2").exists() and not (tmp_path / "m5").exists()


def test_failed_calls_are_listed_and_retried(ds, llm, fake, tmp_path):
    cfg = {"samples": 1, "limit": 1, "max_tokens": 64, "out": tmp_path / "run"}
    fake.server.script(None, [("status", 400)])  # a bad request is not retried
    run = generate(ds, llm(), **cfg)
    assert len(run.failures) == 1 and run.failures[0]["failure"] == "bad_request"
    assert len(run.responses) == len(run.instance_ids) - 1
    log = [json.loads(x) for x in (run.path / GENERATIONS_FILE).read_text().splitlines()]
    assert sum("failure" in r for r in log) == 1 and len(log) == len(run.instance_ids)
    rerun = generate(ds, llm(), **cfg)
    assert not rerun.failures and len(rerun.responses) == len(run.instance_ids)


def test_nothing_selected(ds, fake, tmp_path):
    p = planned(ds, shard="40/40", out=tmp_path / "r")
    assert p.problems == ["selection: nothing to run: the limit / shard / conditions select no instance"]
    with pytest.raises(PreflightError, match="select no instance"):
        api.run(p)
    assert not (tmp_path / "r").exists()

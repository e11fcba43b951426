"""Batch mode (--batch, docs/scaling.md): the real openai, anthropic and google-genai SDKs against the local
ProtocolServer's batch endpoints, through the operation path (phr.api plan -> run) of a two-step test operation
(tests/support/batch_op.py: answers, then a judge of each answer).

Nothing here depends on time: the server answers a batch on its first poll unless told to hold it, the poll
interval is 0 ($PHR_BATCH_POLL_S), and a kill is simulated where it cannot race (from the poll hook, after the
ledger is written) or made after the command printed its "submitted" line, or while the server holds its request
(released by the test once the command is dead).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from phr import api
from phr.llm import LLM
from phr.llm.batch import BatchSession, BatchSubmitFailed, BatchUnsupported
from phr.llm.cache import CallCache
from phr.llm.preflight import PreflightError
from phr.llm.types import ChatRequest, GenerationParams, Message
from tests.support.batch_op import BatchOpConfig

MODELS = ["openai:gpt-test", "anthropic:claude-test", "google:gemini-test"]
#: the path of each provider's batch creation request
CREATE = {"openai": "/v1/batches", "anthropic": "/v1/messages/batches", "google": ":batchGenerateContent"}
#: the path of each provider's direct call
DIRECT = {"openai": "/chat/completions", "anthropic": "/v1/messages", "google": ":generateContent"}


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch):
    monkeypatch.setenv("PHR_BATCH_POLL_S", "0")


def creates(srv, model: str) -> int:
    return srv.posts(CREATE[model.partition(":")[0]])


def direct(srv, model: str) -> int:
    kind = model.partition(":")[0]
    return sum(
        1
        for r in srv.requests
        if r["method"] == "POST" and r["path"].endswith(DIRECT[kind]) and "batch" not in r["path"].lower()
    )


def go(model: str, out: Path, **kw) -> dict:
    return api.run(api.plan(BatchOpConfig(model=model, out=out, **kw)))


def ledger(tmp_path: Path) -> int:
    cache = CallCache(tmp_path / "calls.sqlite")
    return cache._conn().execute("SELECT COUNT(*) FROM batch_requests").fetchone()[0]


def lines_of(batch: dict) -> str:
    return json.dumps(batch["lines"])


def client_id(model: str, server_id: str) -> str:
    """A batch's id as the client names it (Gemini's SDK: ``batches/<id>``)."""
    return f"batches/{server_id}" if model.startswith("google:") else server_id


def intents(tmp_path: Path) -> int:
    """Batch submissions recorded whose batch id is not known yet."""
    cache = CallCache(tmp_path / "calls.sqlite")
    return cache._conn().execute("SELECT COUNT(*) FROM batch_intents").fetchone()[0]


def is_create(body) -> bool:
    """The body of a request that creates a batch (OpenAI, Anthropic, Gemini)."""
    return isinstance(body, dict) and ("input_file_id" in body or "requests" in body or "batch" in body)


def uploads(srv) -> int:
    return srv.posts("/v1/files")


def answered(result: dict) -> bool:
    return all("missing" not in t for texts in result["answers"].values() for t in texts)


def until(condition, what: str, limit: float = 300.0) -> None:
    """Wait for ``condition()`` (a safety limit only: nothing is decided by how long it takes)."""
    end = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < end, f"still waiting for {what}"
        time.sleep(0.02)


@pytest.mark.parametrize("model", MODELS)
def test_submit_poll_results_then_a_run_without_batch_makes_no_call(api_server, tmp_path, capsys, model):
    result = go(model, tmp_path / "out", batch=True)
    assert all("missing" not in t for texts in result["answers"].values() for t in texts)
    assert len(result["verdicts"]) == 6 and all("missing" not in v for v in result["verdicts"].values())
    assert creates(api_server, model) == 2  # the answers, then (next pass) the judge of each answer
    assert direct(api_server, model) == 0
    assert ledger(tmp_path) == 0
    err = capsys.readouterr().err
    first = [line for line in err.splitlines() if line.startswith("[batch]")][:2]
    assert "submitted" in first[0] and "request(s)" in first[1] and "completed" in first[1] and "failed" in first[1]

    api_server.reset()
    again = go(model, tmp_path / "out", overwrite=True)  # no --batch: everything is in the call cache
    assert again == result
    assert api_server.count == 0


@pytest.mark.parametrize("model", MODELS)
def test_a_request_failing_inside_a_batch_is_a_missing_value_and_the_rerun_resubmits_only_it(
    api_server, tmp_path, model
):
    api_server.batch_fail = lambda body: "question 1" in json.dumps(body)
    result = go(model, tmp_path / "out", batch=True)
    assert result["answers"]["question 1"] == ["missing: bad_request"] * 2
    assert all("missing" not in t for q in ("question 0", "question 2") for t in result["answers"][q])
    assert ledger(tmp_path) == 0  # cleared: the rerun submits it again
    failures = CallCache(tmp_path / "calls.sqlite")._conn().execute("SELECT reason, message FROM failures").fetchall()
    assert {r for r, _ in failures} == {"bad_request"} and all("scripted batch failure" in m for _, m in failures)

    api_server.batch_fail = None
    before = set(api_server.batches)
    result = go(model, tmp_path / "out", batch=True, overwrite=True)
    assert all("missing" not in t for texts in result["answers"].values() for t in texts)
    new = [api_server.batches[b] for b in api_server.batches if b not in before]
    assert len(new) == 2  # question 1's answers, then their judge
    assert "question 1" in lines_of(new[0]) and "question 0" not in lines_of(new[0])
    assert "question 2" not in lines_of(new[0])
    assert direct(api_server, model) == 0


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("end", ["expired", "cancelled"])
def test_an_expired_or_cancelled_batch_is_missing_values_with_the_reason_and_the_rerun_resubmits(
    api_server, tmp_path, model, end
):
    api_server.batch_end = end
    result = go(model, tmp_path / "out", batch=True)
    assert all(t == f"missing: batch_{end}" for texts in result["answers"].values() for t in texts)
    assert result["verdicts"] == {}
    assert ledger(tmp_path) == 0
    api_server.batch_end = None
    result = go(model, tmp_path / "out", batch=True, overwrite=True)
    assert all("missing" not in t for texts in result["answers"].values() for t in texts)


@pytest.mark.parametrize("model", MODELS)
def test_killed_while_waiting_the_rerun_polls_the_same_batch_and_submits_none_again(
    api_server, tmp_path, monkeypatch, capsys, model
):
    api_server.batch_hold = True

    def kill(status):
        raise KeyboardInterrupt  # the command stopped while waiting: the ledger is already written

    monkeypatch.setattr(BatchSession, "on_poll", staticmethod(kill))
    with pytest.raises(KeyboardInterrupt):
        go(model, tmp_path / "out", batch=True)
    assert creates(api_server, model) == 1 and ledger(tmp_path) > 0
    (first,) = api_server.batches

    monkeypatch.setattr(BatchSession, "on_poll", None)
    api_server.batch_hold = False
    capsys.readouterr()
    result = go(model, tmp_path / "out", batch=True, overwrite=True)  # its first pass had written the folder
    assert all("missing" not in t for texts in result["answers"].values() for t in texts)
    assert creates(api_server, model) == 2  # the judge's batch only: the answers' batch was not submitted again
    assert "question" in lines_of(api_server.batches[first])
    assert f"{first} was submitted by an earlier run: polling it (not submitted again)" in capsys.readouterr().err
    assert ledger(tmp_path) == 0 and direct(api_server, model) == 0


_CHILD = """
import sys
from phr import api
from tests.support.batch_op import BatchOpConfig
api.run(api.plan(BatchOpConfig(model=sys.argv[1], out=sys.argv[2], batch=True)))
"""


@pytest.mark.parametrize("model", MODELS)
def test_a_command_killed_after_submitting_resumes_without_resubmitting(api_server, tmp_path, model):
    """A real kill (SIGKILL of a child process) after it printed its "submitted" line: the rerun polls the same
    batch (0 batches submitted again, counted on the server)."""
    api_server.batch_hold = True
    env = {**os.environ, "PHR_BATCH_POLL_S": "0.05", "PYTHONPATH": str(Path(__file__).parent.parent)}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, model, str(tmp_path / "out")], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        for line in child.stderr:  # type: ignore[union-attr]
            if "submitted" in line:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert creates(api_server, model) == 1 and ledger(tmp_path) > 0
    api_server.batch_hold = False
    result = go(model, tmp_path / "out", batch=True, overwrite=True)
    assert all("missing" not in t for texts in result["answers"].values() for t in texts)
    assert creates(api_server, model) == 2  # + the judge's batch; the answers' batch was resumed, not resubmitted


@pytest.mark.parametrize(
    "spec", ["openai-compatible:http://127.0.0.1:9/v1#m", "local:smollm2", "hf:org/never-downloaded"]
)
def test_a_model_without_a_batch_api_is_a_preflight_problem_naming_it(api_server, tmp_path, spec):
    p = api.plan(BatchOpConfig(model=spec, out=tmp_path / "out", batch=True))
    assert any("no batch API" in x and spec.partition("#")[0].split(":")[0] in x for x in p.problems), p.problems
    with pytest.raises(PreflightError):
        api.run(p)
    with pytest.raises(BatchUnsupported, match="no batch API"):
        LLM("openai-compatible:http://127.0.0.1:9/v1#m", batch=True)


def test_the_dry_run_prices_batch_calls_at_the_batch_rate_and_says_so(api_server, tmp_path):
    plain = api.plan(BatchOpConfig(model="openai:gpt-4o", out=tmp_path / "out"))
    batch = api.plan(BatchOpConfig(model="openai:gpt-4o", out=tmp_path / "out", batch=True))
    (plain_line,) = [x for x in plain.lines() if x.startswith("  openai:gpt-4o")]
    (batch_line,) = [x for x in batch.lines() if x.startswith("  openai:gpt-4o")]
    cost = float(plain_line.split("<= $")[-1].split()[0])
    assert f"<= ${cost / 2:,.2f} at the batch rate (50% of the price)" in batch_line
    assert any("batch mode" in x for x in batch.lines()) and not any("batch" in x for x in plain.lines())


def test_an_llm_alone_in_batch_mode_submits_within_the_size_limit_and_waits(api_server, tmp_path, monkeypatch):
    llm = LLM("anthropic:claude-test", batch=True, progress=False, show_summary=False)
    monkeypatch.setattr(llm.provider, "batch_max_requests", 2)
    reqs = [ChatRequest((Message("user", f"q{i}"),), GenerationParams(max_tokens=8)) for i in range(5)]
    out = llm.generate(reqs)
    assert [r.text for r in out] == [f"echo[claude-test] q{i} #0" for i in range(5)]
    assert len(api_server.batches) == 3  # 5 requests, at most 2 per batch
    api_server.reset()
    assert [r.text for r in LLM("anthropic:claude-test", progress=False).generate(reqs)] == [r.text for r in out]
    assert api_server.count == 0


def test_batch_mode_needs_the_call_cache(api_server):
    with pytest.raises(BatchUnsupported, match="call cache"):
        LLM("openai:gpt-test", batch=True, cache_mode="off")


def test_the_batch_setting_reaches_llm_only_when_on():
    from phr.config.ops import EvalHr1Config, EvalPhrbenchConfig

    assert "batch" not in EvalHr1Config().llm_kwargs()
    assert EvalPhrbenchConfig(model="openai:gpt-4o", batch=True).llm_kwargs()["batch"] is True
    assert "batch" not in EvalPhrbenchConfig(model="openai:gpt-4o", batch=True).result_record()


def test_eval_phrbench_with_batch_plans_at_the_batch_rate_answers_through_a_batch_and_caches(
    api_server, mini_folder, tmp_path
):
    """The real command: its dry run prices the calls at the batch rate; the run sends them in one batch (no
    direct call); the same run without --batch then makes 0 calls."""
    from typer.testing import CliRunner

    from phr.cli import app

    def cli(*args):
        return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)

    common = ["eval", "phrbench", "--model", "openai:gpt-4o", "--dataset", mini_folder, "--limit", 2, "--samples", 2]
    common += ["--max-tokens", 32, "--scorer", "none", "--no-plots"]
    plan = cli(*common, "--batch", "--out", tmp_path / "a", "--dry-run")
    assert plan.exit_code == 0, plan.output
    assert "at the batch rate (50% of the price)" in plan.output and api_server.count == 0
    run = cli(*common, "--batch", "--out", tmp_path / "a")
    assert run.exit_code == 0, run.output
    assert creates(api_server, "openai:x") == 1 and direct(api_server, "openai:x") == 0
    api_server.reset()
    again = cli(*common, "--out", tmp_path / "b")
    assert again.exit_code == 0 and api_server.count == 0
    assert (tmp_path / "a" / "responses.jsonl").read_bytes() == (tmp_path / "b" / "responses.jsonl").read_bytes()


def test_a_rescore_with_batch_sends_its_judge_through_the_batch_api(api_server, mini_folder, tmp_path):
    """`eval score --batch`: the resolution judge (made deep in the scorer, with no call settings passed) goes
    through the batch API of its provider; a judge without one is refused, naming it."""
    from typer.testing import CliRunner

    from phr.cli import app

    def cli(*args):
        return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)

    run = tmp_path / "run"
    args = ["eval", "phrbench", "--model", "openai:gpt-4o", "--dataset", mini_folder, "--limit", 2, "--samples", 1]
    assert cli(*args, "--max-tokens", 32, "--scorer", "none", "--no-plots", "--out", run).exit_code == 0
    scored = cli("eval", "score", run, "--judge", "anthropic:claude-test", "--batch", "--no-plots")
    assert scored.exit_code == 0, scored.output
    # not yet on the operation path, the scorer's judge batches each of its generate calls (re-asks included)
    assert creates(api_server, "anthropic:x") >= 1 and direct(api_server, "anthropic:x") == 0
    local = CliRunner().invoke(app, ["eval", "score", str(run), "--judge", "local:smollm2", "--batch", "--no-plots"])
    assert local.exit_code != 0 and "local:smollm2" in str(local.output) + str(local.exception)
    assert "no batch API" in str(local.output) + str(local.exception)


def test_a_command_with_batch_and_a_local_model_is_refused_in_its_plan(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from phr.cli import app

    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["eval", "hr1", "--batch", "--dry-run"])
    assert r.exit_code == 2, r.output
    assert "local:smollm2: no batch API: --batch works for openai:, anthropic: and google: models only" in r.output


def test_the_batch_share_of_a_price_can_be_overridden(tmp_path, monkeypatch):
    from phr.llm.pricing import PriceTable

    table = PriceTable.load()
    assert table.batch_share("anthropic:claude-sonnet-4") == 0.5 and table.batch_share("hf:x") == 1.0
    assert table.cost("openai:gpt-4o", 1_000_000, 0, batch=True) == table.cost("openai:gpt-4o", 1_000_000, 0) / 2
    (tmp_path / "p.toml").write_text('[batch]\n"openai:gpt-4o" = 0.25\n')
    monkeypatch.setenv("PHR_PRICES", str(tmp_path / "p.toml"))
    assert PriceTable.load().batch_share("openai:gpt-4o") == 0.25


# ---- issue 35, item 1: submitting is idempotent (a lost reply, a kill while the batch is being created) ----------


@pytest.mark.parametrize("model", MODELS)
def test_a_lost_reply_to_the_batch_creation_is_found_in_the_providers_list_not_submitted_again(
    api_server, tmp_path, capsys, model
):
    """The provider creates the batch and the reply never arrives: the command finds the batch by the tag it
    recorded before the request (the provider's list), polls it, and creates no second one."""
    api_server.script(None, [("lost",)], match=is_create)
    result = go(model, tmp_path / "out", batch=True)
    assert answered(result) and len(result["verdicts"]) == 6
    lost = [r for r in api_server.requests if r["fault"] == ("lost",)]
    assert len(lost) == 1 and lost[0]["status"] == 200  # the server did create it
    assert len(api_server.batches) == 2  # the answers' batch (adopted), then the judge's
    first = next(iter(api_server.batches))
    assert "question" in lines_of(api_server.batches[first])
    err = capsys.readouterr().err
    assert (
        f"the reply to the batch's creation was lost (connection); batch {client_id(model, first)} was created" in err
    )
    assert ledger(tmp_path) == 0 and intents(tmp_path) == 0
    if model.startswith("openai:"):
        assert uploads(api_server) == 2


@pytest.mark.parametrize("model", MODELS)
def test_killed_while_the_batch_creation_is_in_flight_the_rerun_adopts_the_batch(api_server, tmp_path, capsys, model):
    """SIGKILL while the server holds the create request; the server then creates the batch (its reply goes
    nowhere). The rerun finds the submission in the ledger, the batch in the provider's list, and polls it: the
    provider has one batch of the answers, never two (nor, for OpenAI, a second upload)."""
    release = threading.Event()
    api_server.script(None, [("hold", release)], match=is_create)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, model, str(tmp_path / "out")], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        held = lambda: any(r["fault"] and r["fault"][0] == "hold" for r in api_server.requests)  # noqa: E731
        until(lambda: held() or child.poll() is not None, "the create request to reach the server")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    release.set()
    assert held(), "the command ended before its create request reached the server"
    until(lambda: len(api_server.batches) == 1, "the held batch to be created")
    assert ledger(tmp_path) > 0 and intents(tmp_path) == 1  # recorded before the request
    (first,) = api_server.batches

    capsys.readouterr()
    result = go(model, tmp_path / "out", batch=True, overwrite=True)  # its first pass had written the folder
    assert answered(result) and len(result["verdicts"]) == 6
    assert len(api_server.batches) == 2  # + the judge's batch; the answers' batch was adopted, not made again
    assert "question" in lines_of(api_server.batches[first])
    err = capsys.readouterr().err
    adopted = client_id(model, first)
    assert (
        f"batch {adopted} was created by an earlier run whose reply was lost: polling it (not submitted again)" in err
    )
    assert ledger(tmp_path) == 0 and intents(tmp_path) == 0
    if model.startswith("openai:"):
        assert uploads(api_server) == 2  # the answers' file once, the judge's once


@pytest.mark.parametrize("model", MODELS)
def test_a_create_request_that_never_arrived_is_submitted_by_the_rerun_once(api_server, tmp_path, capsys, model):
    """The connection drops before the server reads the create request: the command says so in one error, the
    submission stays recorded; the rerun finds no batch of it and submits it (OpenAI: from the file already
    uploaded)."""
    api_server.script(None, [("drop",)], match=is_create)
    with pytest.raises(BatchSubmitFailed, match="looks for that batch in the provider's list first"):
        go(model, tmp_path / "out", batch=True)
    assert len(api_server.batches) == 0 and intents(tmp_path) == 1
    capsys.readouterr()
    result = go(model, tmp_path / "out", batch=True, overwrite=True)
    assert answered(result) and len(api_server.batches) == 2
    assert ledger(tmp_path) == 0 and intents(tmp_path) == 0
    if model.startswith("openai:"):
        assert uploads(api_server) == 2
        assert "submitted from the file an earlier run uploaded" in capsys.readouterr().err


# ---- issue 35, items 2 and 3: result lines with another's id, an unknown id, or no JSON ---------------------------


def _cid(protocol: str, answer: dict) -> str:
    return answer["metadata"]["key"] if protocol == "gemini" else answer["custom_id"]


def _relabel(protocol: str, answer: dict, cid: str) -> dict:
    answer = json.loads(json.dumps(answer))
    if protocol == "gemini":
        answer["metadata"]["key"] = cid
    else:
        answer["custom_id"] = cid
    return answer


def _first(answers: list, text: str) -> int:
    return next(i for i, a in enumerate(answers) if text in json.dumps(a))


@pytest.mark.parametrize("model", MODELS)
def test_a_duplicated_or_unknown_result_id_is_a_failure_never_another_requests_answer(
    api_server, tmp_path, capsys, model
):
    def edit(protocol, answers):
        if "judge:" in json.dumps(answers):
            return answers  # the judge's batch: as it is
        q0, q1 = _first(answers, "question 0"), _first(answers, "question 1")
        answers[q1] = _relabel(protocol, answers[q1], _cid(protocol, answers[q0]))  # question 1's answer, 0's id
        return [*answers, _relabel(protocol, answers[-1], "never-asked")]

    api_server.batch_edit = edit
    result = go(model, tmp_path / "out", batch=True)
    assert not any("question 1" in t for t in result["answers"]["question 0"])
    assert result["answers"]["question 0"][0] == "missing: batch_duplicate_id"
    assert result["answers"]["question 1"][0] == "missing: batch_no_answer"
    assert all("missing" not in t for t in result["answers"]["question 2"])
    failures = CallCache(tmp_path / "calls.sqlite")._conn().execute("SELECT reason, message FROM failures").fetchall()
    assert any(r == "batch_duplicate_id" and "more than one result line" in m for r, m in failures)
    err = capsys.readouterr().err
    assert "result line(s) name no request of this batch (ignored, nothing stored for them): never-asked" in err
    assert "'batch_duplicate_id': " in err
    assert ledger(tmp_path) == 0


@pytest.mark.parametrize("model", ["openai:gpt-test", "anthropic:claude-test"])
def test_an_output_line_that_is_not_json_fails_its_request_only(api_server, tmp_path, capsys, model):
    def edit(protocol, answers):
        if "judge:" in json.dumps(answers):
            return answers
        q1 = _first(answers, "question 1")
        answers[q1] = json.dumps(answers[q1])[:150]  # cut: still shows its custom_id
        return [*answers, "this line is not JSON"]

    api_server.batch_edit = edit
    result = go(model, tmp_path / "out", batch=True)
    assert result["answers"]["question 1"][0] == "missing: malformed"
    assert all("missing" not in t for q in ("question 0", "question 2") for t in result["answers"][q])
    assert "question 0#0" in result["verdicts"]  # the next pass ran on the answers stored
    err = capsys.readouterr().err
    assert "not JSON" in err and "name no request of this batch" in err
    assert ledger(tmp_path) == 0
    api_server.batch_edit = None
    again = go(model, tmp_path / "out", batch=True, overwrite=True)  # the rerun submits the failed request only
    assert answered(again)


# ---- issue 35, items 4 and 5: the CLI of a batch run --------------------------------------------------------------


def _cli(*args):
    from typer.testing import CliRunner

    from phr.cli import app

    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def _eval(mini_folder, out: Path, *extra) -> list:
    return ["eval", "phrbench", "--model", "openai:gpt-4o", "--dataset", mini_folder, "--limit", 2, "--samples", 2,
            "--max-tokens", 32, "--scorer", "none", "--no-plots", "--out", out, *extra]  # fmt: skip


def _kill_on_first_poll(monkeypatch, api_server) -> None:
    api_server.batch_hold = True

    def kill(status):
        raise KeyboardInterrupt  # the command stopped while waiting: the ledger is written

    monkeypatch.setattr(BatchSession, "on_poll", staticmethod(kill))


GARBLE = {
    "position": "UPDATE batch_requests SET position = -3 WHERE rowid = (SELECT MIN(rowid) FROM batch_requests)",
    "batch id": "UPDATE batch_requests SET batch_id = 'made-up batch'",
    "request": "UPDATE batch_requests SET request = request || ' ' WHERE rowid = (SELECT MAX(rowid) FROM batch_requests)",
}


@pytest.mark.parametrize("garble", GARBLE)
def test_garbled_ledger_rows_are_one_error_line_naming_the_cache_and_the_batch_with_a_way_out(
    api_server, mini_folder, tmp_path, monkeypatch, garble
):
    cache = tmp_path / "calls.sqlite"
    _kill_on_first_poll(monkeypatch, api_server)
    assert _cli(*_eval(mini_folder, tmp_path / "run", "--batch")).exit_code == 130
    (bid,) = api_server.batches
    monkeypatch.setattr(BatchSession, "on_poll", None)
    api_server.batch_hold = False
    con = sqlite3.connect(cache)
    con.execute(GARBLE[garble])
    con.commit()
    con.close()
    shown = "made-up batch" if garble == "batch id" else bid

    before = api_server.count
    r = _cli(*_eval(mini_folder, tmp_path / "run", "--batch"))
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    (line,) = [x for x in r.output.splitlines() if x.startswith("error:")]
    assert str(cache) in line and repr(shown) in line and "docs/scaling.md" in line
    assert not any("batches" in q["path"] for q in api_server.requests[before:])  # nothing polled or submitted

    way_out = line.split("`")[1]  # the command the line gives, run as given
    assert way_out.startswith("python -m phr.llm.cache forget-batch ")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    done = subprocess.run([sys.executable, *shlex.split(way_out)[1:]], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "forgot 20 sample(s)" in done.stdout, done.stderr
    assert ledger(tmp_path) == 0
    again = _cli(*_eval(mini_folder, tmp_path / "run", "--batch"))
    assert again.exit_code == 0, again.output
    assert len(api_server.batches) == 2  # the forgotten samples, submitted again


def test_the_call_table_of_a_batch_run_counts_the_batch_once_after_the_batches(api_server, mini_folder, tmp_path):
    r = _cli(*_eval(mini_folder, tmp_path / "run", "--batch"))
    assert r.exit_code == 0, r.output
    out = r.output.splitlines()
    tables = [i for i, x in enumerate(out) if x.startswith("LLM calls")]
    stored = [i for i, x in enumerate(out) if "answer(s) stored in the call cache" in x]
    assert len(tables) == 1 and stored and tables[0] > stored[-1], r.output
    (row,) = [x for x in out[tables[0] :] if x.startswith("│ openai:gpt-4o")]
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[1:4] == ["20", "1 batches", "0"], row  # responses, calls / batches, cache hits
    assert cells[-1] != "$0.0000" and float(cells[-1].lstrip("$")) > 0

    again = _cli(*_eval(mini_folder, tmp_path / "again", "--batch"))  # all in the cache now: hits, no batch
    (row,) = [x for x in again.output.splitlines() if x.startswith("│ openai:gpt-4o")]
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[1:4] == ["0", "0", "20"] and cells[-1] == "$0.0000", row


# ---- issue 35, item 9: a stored answer without a checksum is damage -----------------------------------------------


def test_a_stored_answer_whose_checksum_is_null_is_damage_asked_again(api_server, tmp_path):
    reqs = [ChatRequest((Message("user", f"q{i}"),), GenerationParams(max_tokens=8)) for i in range(2)]
    LLM("openai:gpt-test", batch=True, progress=False, show_summary=False).generate(reqs)
    con = sqlite3.connect(tmp_path / "calls.sqlite")
    assert con.execute("UPDATE calls SET checksum = NULL WHERE text LIKE '% q0 %'").rowcount == 1
    con.commit()

    api_server.reset()
    plain = LLM("openai:gpt-test", progress=False, show_summary=False)
    out = plain.generate(reqs)
    assert [r.text for r in out] == ["echo[gpt-test] q0 #0", "echo[gpt-test] q1 #0"]
    assert direct(api_server, "openai:x") == 1  # q0 asked again; q1 from the cache
    stats = plain.last_summary.models["openai:gpt-test"]
    assert stats.cache_corrupt == 1 and stats.cache_hits == 1
    (checksum,) = con.execute("SELECT checksum FROM calls WHERE text LIKE '% q0 %'").fetchone()
    assert checksum is not None  # the fresh answer replaced the damaged row
    api_server.reset()
    assert [r.text for r in LLM("openai:gpt-test", progress=False).generate(reqs)] == [r.text for r in out]
    assert api_server.count == 0

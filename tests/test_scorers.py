"""Scorers as a protocol, the public scoring interface of in-process models, the weight-reuse rule and the
LLM-judge helper (real OpenAI SDK against the protocol server, real call cache)."""

import asyncio
import hashlib
import json
from typing import Literal

import pytest
from pydantic import BaseModel

from phr.config.ops import Scoring
from phr.core.errors import ModelNotInstalledError
from phr.eval.scorers import (
    AccuracyScorer,
    ResolutionScorer,
    ScoreItem,
    Scorer,
    ScoringRun,
    TrajectoryMetricsScorer,
    build_scorers,
    cache_identity,
    trajectory_engine,
)
from phr.eval.scoring import score_responses
from phr.eval.trajectory import TrajectoryScorer, load_cues
from phr.llm import LLM
from phr.llm.judge import JudgeItem, JudgeTemplate, LLMJudge, run_sync
from phr.llm.providers.base import CannotScoreError, ScoringProvider
from phr.llm.providers.hf_local import HFProvider, local_provider
from phr.llm.types import Message
from tests.support.protocol_server import ProtocolServer
from tests.support.rows import instance

REASK = "Your previous reply could not be used"


@pytest.fixture(scope="module")
def unloaded():
    """local:smollm2 not loaded: its fingerprint and configs need no weights."""
    try:
        return local_provider("smollm2")
    except ModelNotInstalledError as e:
        pytest.skip(str(e))


def inst(n, task="multiple_choice", condition="B", **kw):
    """A multiple-choice instance (red / green / blue; gold: green) unless ``task`` or ``kw`` say otherwise."""
    mc = dict(task_type=task, options=("red", "green", "blue"), answer_index=1, answer="green")
    return instance(n, condition, **(mc | kw))


# ---- the protocol ---------------------------------------------------------------------------------------


def test_each_scorer_implements_the_protocol(unloaded):
    acc = AccuracyScorer(code_timeout_s=5.0, code_memory_mb=256)
    traj = TrajectoryMetricsScorer(TrajectoryScorer(unloaded, tau=0.2))
    res = ResolutionScorer("openai:gpt-4o", max_reasks=3)
    for s, name in ((acc, "accuracy"), (traj, "trajectory"), (res, "resolution")):
        assert isinstance(s, Scorer) and s.name == name and len(cache_identity(s)) == 64
    assert acc.config.model_dump() == {
        "code_timeout_s": 5.0,
        "code_memory_mb": 256,
        "rel_tol": 0.01,
        "grader": None,
        "grader_prompt_sha256": None,
    }
    assert traj.config.model_dump() == {
        "model": f"local:smollm2@{unloaded.revision}",
        "tau": 0.2,
        "clip": 1e-12,
        "cues": load_cues(),
        "kl_direction": "earlier_reference",
        "step_rule": "paper",
        "bc_counting": "every_occurrence",
    }
    from phr.eval.resolution import prompt_hash

    assert res.config.model_dump() == {
        "judge": "openai:gpt-4o",
        "prompt_sha256": prompt_hash(),
        "max_reasks": 3,
        "max_tokens": 256,
        "conditions": ("B+H",),
    }
    asked = Scoring(scorer="local:smollm2", judge="openai:gpt-4o")
    built = build_scorers(ScoringRun(asked, generator=unloaded), progress=False)  # its weights, not loaded
    assert [s.name for s in built] == ["accuracy", "trajectory", "resolution"]
    assert [s.name for s in build_scorers(Scoring(scorer="none"), progress=False)] == ["accuracy"]
    assert unloaded._model is None  # nothing above loaded the weights


def test_config_change_changes_cache_identity(unloaded, tmp_path):
    assert cache_identity(AccuracyScorer()) == cache_identity(AccuracyScorer(10.0, 512))
    assert cache_identity(AccuracyScorer()) != cache_identity(AccuracyScorer(code_timeout_s=3.0))
    same = TrajectoryMetricsScorer(TrajectoryScorer(unloaded))
    assert cache_identity(same) == cache_identity(TrajectoryMetricsScorer(TrajectoryScorer(unloaded, batch_size=7)))
    for other in (
        TrajectoryScorer(unloaded, tau=0.5),
        TrajectoryScorer(unloaded, clip=1e-9),
        TrajectoryScorer(unloaded, cues=["wait"]),
    ):
        assert cache_identity(TrajectoryMetricsScorer(other)) != cache_identity(same)
    (tmp_path / "config.json").write_text("{}")
    folder = HFProvider(str(tmp_path))
    assert folder.fingerprint.startswith(f"hf:{tmp_path.resolve()}#")
    assert cache_identity(TrajectoryMetricsScorer(TrajectoryScorer(folder))) != cache_identity(same)
    (tmp_path / "config.json").write_text('{"changed": 1}')  # other files: another fingerprint, another identity
    changed = HFProvider(str(tmp_path))
    assert changed.fingerprint != folder.fingerprint
    assert cache_identity(ResolutionScorer("openai:gpt-4o")) != cache_identity(ResolutionScorer("openai:gpt-4.1"))
    assert cache_identity(ResolutionScorer("openai:x")) != cache_identity(ResolutionScorer("openai:x", max_reasks=0))
    assert cache_identity(ResolutionScorer("openai:x")) != cache_identity(AccuracyScorer())


def test_accuracy_scorer_batch():
    code = inst(3, task="code", entry_point="add", code_tests="assert add(1, 2) == 3", question="Write add.")
    batch = [
        ScoreItem(inst(1), "Answer: 2"),
        ScoreItem(inst(2), "(3)"),
        ScoreItem(inst(4, task="open_ended", answer="9.8"), "So g is about...\nAnswer: 9.81"),
        ScoreItem(code, "```python\ndef add(a, b):\n    return a + b\n```"),
        ScoreItem(code, "```python\ndef add(a, b):\n    return a - b\n```"),
    ]
    out = AccuracyScorer(progress=False).score(batch)
    assert out[:3] == [
        {"correct": True, "extracted": "2", "grader": "choice"},
        {"correct": False, "extracted": "3", "grader": "choice"},
        {"correct": True, "extracted": "9.81", "grader": "numeric"},
    ]
    assert out[3]["correct"] is True and out[4]["correct"] is False and out[4]["extracted"] != out[3]["extracted"]


class Echo:
    """A scorer that sees what earlier scorers set."""

    name = "echo"

    def __init__(self, field="extracted"):
        self.field = field

    @property
    def config(self):
        return BaseModel()

    def score(self, batch):
        return [{self.field: f"{it.sample}:{it.scored.get('correct')}"} for it in batch]


def test_score_responses_runs_a_list_of_scorers():
    a, b = inst(1), inst(2)
    resp = {(a.id, 0): "Answer: 2", (a.id, 1): "Answer: 1", (b.id, 1): "Answer: 2"}
    rows = score_responses([a, b], resp, samples=2, progress=False, scorers=[AccuracyScorer(progress=False), Echo()])
    assert [(r.instance_id, r.sample, r.missing, r.correct, r.extracted) for r in rows] == [
        ("q1-B", 0, False, True, "0:True"),
        ("q1-B", 1, False, False, "1:False"),
        ("q2-B", 0, True, False, None),
        ("q2-B", 1, False, True, "1:True"),
    ]
    with pytest.raises(ValueError, match="scorer 'echo' set unknown field.*nonsense"):
        score_responses([a], resp, samples=1, scorers=[Echo("nonsense")], progress=False)
    with pytest.raises(ValueError, match="scorer 'echo' set unknown field.*instance_id"):
        score_responses([a], resp, samples=1, scorers=[Echo("instance_id")], progress=False)


# ---- weight reuse and the public scoring interface ------------------------------------------------------


def test_weight_reuse_rule(unloaded, monkeypatch, tmp_path):
    same = LLM("local:smollm2", provider=unloaded, cache=tmp_path / "c.sqlite", progress=False)
    assert trajectory_engine("local:smollm2", same).provider is unloaded
    assert trajectory_engine("local:smollm2", unloaded).provider is unloaded  # a provider works too
    assert trajectory_engine("local:smollm2").provider is not unloaded
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    gen = HFProvider(str(tmp_path / "m"))
    assert trajectory_engine(f"hf:{tmp_path}/m/.", gen).provider is gen  # another spec, the same fingerprint
    assert trajectory_engine("local:smollm2", gen).provider is not gen
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    api = LLM("openai:gpt-4o", cache=tmp_path / "c.sqlite", progress=False)
    assert not isinstance(api.provider, ScoringProvider) and isinstance(unloaded, ScoringProvider)
    assert trajectory_engine("local:smollm2", api).provider.spec == "local:smollm2"
    with pytest.raises(CannotScoreError, match="openai:gpt-4o cannot score"):
        trajectory_engine("openai:gpt-4o", api)
    with pytest.raises(CannotScoreError, match="openai:gpt-4o cannot score"):
        build_scorers(Scoring(scorer="openai:gpt-4o"))
    assert unloaded._model is None


FRANCE = (Message("user", "What is the capital of France?"),)
PARIS = "The capital of France is Paris."


@pytest.mark.slow
def test_public_scoring_interface_same_logprobs(smollm2):
    torch = pytest.importorskip("torch")
    tok, model = smollm2.tokenizer, smollm2.hf_model
    text = tok.apply_chat_template(
        [{"role": "user", "content": FRANCE[0].content}], tokenize=False, add_generation_prompt=True
    )
    prompt = smollm2.prompt_token_ids(FRANCE)
    assert prompt == tok(text, add_special_tokens=False)["input_ids"] == smollm2.prompt_token_ids(FRANCE[0].content)
    enc = smollm2.encode(PARIS)
    assert tok.decode(enc.ids) == PARIS and [PARIS[a:b] for a, b in enc.offsets][-1] == "."
    # the raw transformers forward, as the scoring code did before the interface
    with torch.inference_mode():
        raw = model(input_ids=torch.tensor([prompt + enc.ids])).logits[0].float()
    raw_lp = torch.log_softmax(raw[len(prompt) - 1 : -1], -1).gather(-1, torch.tensor(enc.ids)[:, None]).squeeze(-1)
    out = smollm2.forward([prompt + enc.ids])
    assert out.lengths == (len(prompt) + len(enc.ids),) and out.hidden is None
    assert torch.allclose(out.logits[0].float(), raw, atol=1e-4)
    scores = smollm2.score(FRANCE, PARIS)
    assert torch.allclose(torch.tensor(scores.logprobs), raw_lp, atol=1e-4)
    # values of the code before this change (the same fp32 forward on CPU)
    assert scores.total == pytest.approx(-2.579071, abs=2e-3)
    assert scores.logprobs[:3] == pytest.approx([-1.8827, -0.01966, -0.01146], abs=2e-3)

    # hidden states of a chosen layer, the output head, padding
    n = smollm2.num_layers()
    with torch.inference_mode():
        states = model(input_ids=torch.tensor([prompt + enc.ids]), output_hidden_states=True).hidden_states
    both = smollm2.forward([prompt + enc.ids, prompt], hidden_layer=5)
    assert both.layer == 5 and both.lengths == (len(prompt) + len(enc.ids), len(prompt))
    assert torch.allclose(both.hidden[0], states[5], atol=1e-4)
    assert torch.allclose(both.hidden[1, : len(prompt)], states[5][0, : len(prompt)], atol=1e-4)  # right padding
    last = smollm2.forward([prompt + enc.ids], logits=False, hidden_layer=-1)
    assert last.logits is None and last.layer == n and torch.allclose(last.hidden[0], states[n][0], atol=1e-4)
    head = smollm2.output_head()
    assert head is not None and torch.allclose((last.hidden[0] @ head.weight.T).float(), raw, atol=1e-3)
    with pytest.raises(ValueError, match=f"hidden_layer {n + 1} out of range"):
        smollm2.forward([prompt], hidden_layer=n + 1)
    with pytest.raises(ValueError, match="no empty row"):
        smollm2.forward([prompt, []])


# ---- the LLM-judge helper ------------------------------------------------------------------------------------

# A verbatim-style prompt (Hallucination-R1 B.3 shape): literal JSON braces next to {fields}.
B3 = """# header: a test judge, version 1
Score the response against the reference. Output only: {"think": "your reasoning process", "result": 0/1/2}

Reference Answer: {ground_truth}
Model Response: {response}
"""


class Verdict(BaseModel):
    think: str
    result: Literal[0, 1, 2]


def scripted(model, messages, k):
    """Valid JSON, except: BAD_ONCE is malformed until re-asked; ALWAYS_BAD never holds JSON."""
    response = messages[0][1].split("Model Response: ", 1)[1]
    reask = messages[-1][1].startswith(REASK)
    if "ALWAYS_BAD" in response:
        return "I refuse to answer in JSON."
    if "BAD_ONCE" in response and not reask:
        return '{"think": "hmm", "result": 7}'
    return 'Sure: {"think": "same entity", "result": 0}'


@pytest.fixture
def judge_env(monkeypatch, tmp_path):
    with ProtocolServer(responder=scripted) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        path = tmp_path / "b3.txt"
        path.write_text(B3)
        cache = tmp_path / "calls.sqlite"
        yield (
            srv,
            path,
            lambda: LLM(
                "openai:gpt-4o", cache=cache, progress=False, timeout=30, backoff_initial=0.01, backoff_max=0.05
            ),
        )


def test_judge_reasks_then_unjudged(judge_env):
    srv, path, make = judge_env
    template = JudgeTemplate(path, syntax="fields", comment="#")
    assert template.version == hashlib.sha256(B3.encode()).hexdigest()
    judge = LLMJudge(Verdict, template, max_tokens=64, max_reasks=2)
    items = [
        JudgeItem({"ground_truth": "Paris", "response": r}, tag=f"i{n}")
        for n, r in enumerate(["Paris", "BAD_ONCE Paris", "ALWAYS_BAD"])
    ]
    prompt = judge.prompt(items[0])
    assert prompt.startswith("Score the response") and '{"think": "your reasoning process", "result": 0/1/2}' in prompt
    assert prompt.endswith("Reference Answer: Paris\nModel Response: Paris")

    out = judge.judge(make(), items)
    assert [j.tag for j in out] == ["i0", "i1", "i2"]
    assert out[0].verdict == Verdict(think="same entity", result=0) and len(out[0].raw_texts) == 1
    assert out[1].verdict == Verdict(think="same entity", result=0) and len(out[1].raw_texts) == 2
    assert "result" in out[1].errors[0]  # the schema error was shown to the judge
    assert out[2].unjudged and out[2].verdict is None
    assert out[2].raw_texts == ("I refuse to answer in JSON.",) * 3 and len(out[2].errors) == 3  # 1 + 2 re-asks
    bodies = [r["json"] for r in srv.requests]
    assert len(bodies) == 3 + 1 + 2 and all(b["temperature"] == 0 and b.get("n", 1) == 1 for b in bodies)
    assert sum(b["messages"][-1]["content"].startswith(REASK) for b in bodies) == 3

    calls = srv.count
    again = judge.judge(make(), items)  # the call cache answers everything
    assert srv.count == calls and [j.verdict for j in again] == [j.verdict for j in out]
    none = judge.judge(make(), items[2:], max_reasks=0)
    assert none[0].unjudged and len(none[0].raw_texts) == 1 and srv.count == calls


def test_judge_template_syntaxes_and_errors(tmp_path):
    (tmp_path / "f.txt").write_text("Q: {question} as {{json}}\n\n")
    (tmp_path / "d.txt").write_text("Q: $question {kept}\n")
    (tmp_path / "v.txt").write_text('Q: {question} {"a": 1}\n')
    assert JudgeTemplate(tmp_path / "f.txt").render({"question": "x"}) == "Q: x as {json}"
    assert JudgeTemplate(tmp_path / "d.txt", syntax="dollar").render({"question": "x"}) == "Q: x {kept}"
    assert JudgeTemplate(tmp_path / "v.txt", syntax="fields").render({"question": "{x}"}) == 'Q: {x} {"a": 1}'
    for name, syntax in (("f.txt", "format"), ("d.txt", "dollar"), ("v.txt", "fields")):
        with pytest.raises(KeyError, match=f"{name}: no value for field 'question'"):
            JudgeTemplate(tmp_path / name, syntax=syntax).render({})
    with pytest.raises(ValueError, match="no prompt and the judge has no template"):
        LLMJudge(Verdict).prompt(JudgeItem(tag="t"))


async def test_run_sync_inside_a_running_loop():
    async def seven():
        await asyncio.sleep(0)
        return 7

    assert run_sync(seven()) == 7  # a fresh loop in a thread

    async def boom():
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        run_sync(boom())


def test_resolution_scorer_sets_insightful_from_accuracy(judge_env, monkeypatch):
    """The resolution scorer judges B+H items only and reads `correct` from the accuracy scorer before it."""
    srv, _, make = judge_env

    def resolution_judge(model, messages, k):
        return json.dumps({"uses_premise": False, "corrects_premise": True, "rationale": "rejects it"})

    srv.responder = resolution_judge
    h = inst(
        1,
        condition="B+H",
        task="open_ended",
        answer="9.8",
        premise="g is 12 m/s^2.",
        prompt="Premise: g is 12 m/s^2.\n\nQuestion 1?",
        mutation_type="State Distortion",
    )
    batch = [
        ScoreItem(h, "The premise is false.\nAnswer: 9.8", 0, {"correct": True}),
        ScoreItem(h, "The premise is false.\nAnswer: 12", 1, {"correct": False}),
        ScoreItem(inst(2), "Answer: 2", 0, {"correct": True}),
    ]
    out = ResolutionScorer(make()).score(batch)
    assert [o.get("insightful") for o in out] == [True, False, None] and out[2] == {}
    assert out[0]["resolution"] == "Heuristic Correction" and out[0]["judge_rationale"] == "rejects it"
    assert srv.count == 2

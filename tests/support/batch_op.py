"""A two-step operation on the operation path (config -> plan -> run) for the batch tests: it asks a model some
questions, then asks the same model to judge each answer (the second step's prompts need the first step's
answers, as a build's judge does), and writes ``answers.json``. Like a real build it refuses an existing output
folder unless ``overwrite``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from phr.config.base import setting
from phr.config.ops import Calls
from phr.llm import LLM
from phr.llm.preflight import Preflight
from phr.llm.types import ChatRequest, GenerationParams, Message, Sample
from phr.ops.plan import Plan


class BatchOpConfig(Calls):
    """A test operation: questions, then a judge of each answer."""

    operation: ClassVar[str] = "tests.support.batch_op"
    command = ("test-batch-op",)

    model: str = setting("openai:gpt-test", "The model.")
    questions: int = setting(3, "How many questions.", ge=1)
    samples: int = setting(2, "Samples per question.", ge=1)
    judge: bool = setting(True, "Judge each answer (a second step).")
    out: Path = setting(Path("out"), "Output folder.")
    overwrite: bool = setting(False, "Replace an existing output folder.")


@dataclass
class BatchOpPlan(Plan):
    requests: list[ChatRequest] = field(default_factory=list)


def _llm(cfg: BatchOpConfig) -> LLM:
    return LLM(cfg.model, progress=False, show_summary=False, **cfg.llm_kwargs())


def plan(cfg: BatchOpConfig) -> BatchOpPlan:
    pf = Preflight()
    params = GenerationParams(temperature=0.7, max_tokens=32, seed=7)
    requests = [
        ChatRequest((Message("system", "be brief"), Message("user", f"question {i}")), params, n=cfg.samples)
        for i in range(cfg.questions)
    ]
    if cfg.out.exists() and not cfg.overwrite:
        pf.problem(f"{cfg.out}: exists (use --overwrite)")
    if pf.model("model", cfg.model):
        llm = pf.check(cfg.model, lambda: _llm(cfg))
        if llm is not None:
            pf.calls(cfg.model, requests, provider=llm.provider)
    return BatchOpPlan(cfg, pf, requests)


def run(p: BatchOpPlan) -> dict:
    cfg: BatchOpConfig = p.config
    if cfg.out.exists() and not cfg.overwrite:
        raise FileExistsError(cfg.out)
    llm = _llm(cfg)
    answers = llm.generate(p.requests)
    out: dict[str, list] = {}
    judged: list[tuple[str, int, str]] = []
    for req, res in zip(p.requests, answers):
        q = req.messages[-1].content
        out[q] = [s.text if isinstance(s, Sample) else f"missing: {s.reason}" for s in res.samples]
        judged += [(q, k, s.text) for k, s in enumerate(res.samples) if isinstance(s, Sample)]
    verdicts = {}
    if cfg.judge and judged:
        judge_params = GenerationParams(temperature=0.0, max_tokens=16)
        reqs = [ChatRequest((Message("user", f"judge: {text}"),), judge_params) for _, _, text in judged]
        for (q, k, _), res in zip(judged, llm.generate(reqs)):
            s = res.samples[0]
            verdicts[f"{q}#{k}"] = s.text if isinstance(s, Sample) else f"missing: {s.reason}"
    cfg.out.mkdir(parents=True, exist_ok=True)
    result = {"answers": out, "verdicts": verdicts}
    (cfg.out / "answers.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return result

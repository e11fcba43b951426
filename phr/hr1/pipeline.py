"""The Hallucination-R1 steps as plain functions over typed rows (paper §3.1, App. B, Algorithm 1):
paraphrase x -> y (Listing B.1), judge consistency (B.2), answer with the QA model (B.4), grade the answer
(B.3 judge, or PopQA exact match). The corpus builders, ``eval hr1`` and the GRPO rewards all call these,
so the same inputs hit the same cache entries of the LLM layer (cached, resumable, retried, summarised).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel

from phr.config.defaults import JUDGE_MAX_TOKENS, is_no_model
from phr.config.ops import HR1_K, HR1Decoding
from phr.core.aio import run_sync
from phr.core.secrets import redact
from phr.llm.client import LLM
from phr.llm.judge import Judged, JudgeItem, LLMJudge
from phr.llm.summary import RunSummary
from phr.llm.types import CallFailure, ChatRequest, Message, Sample

from .parse import parse_answer, parse_paraphrase
from .prompts import template
from .records import (
    ConsistencyVerdict,
    Correctness,
    FactualVerdict,
    HQuestion,
    Paraphrase,
    ParaphraseResult,
    QAAnswer,
    QuestionResult,
)
from .settings import Decoding, Grading, QADecoding


def paraphrase_prompt(question: str) -> str:
    """Listing B.1 with the question filled in (the single user message)."""
    return template("paraphrase").render({"question": question})


def qa_messages(question: str) -> tuple[Message, ...]:
    """Listing B.4 as the system message, the question as the user message (docs/hr1.md, "QA prompt")."""
    return (Message("system", template("qa").render({})), Message("user", question))


def paraphrase_requests(
    questions: Sequence[HQuestion], k: int, decoding: Decoding | None = None, *, seed: int | None = 0
) -> list[ChatRequest]:
    """The paraphraser's requests: Listing B.1 per question, ``k`` samples each (A.3 decoding)."""
    params = (decoding or Decoding()).params(seed)
    return [ChatRequest((Message("user", paraphrase_prompt(q.question)),), params, n=k, tag=q.id) for q in questions]


def generate_paraphrases(
    llm: LLM, questions: Sequence[HQuestion], k: int, decoding: Decoding | None = None, *, seed: int | None = 0
) -> dict[str, list[Paraphrase]]:
    """K samples of Listing B.1 per question (one request with n = k, A.3 decoding), parsed; a sample that failed
    or holds no usable ``<paraphrase>`` is kept with ``text=None`` and the reason."""
    decoding = decoding or Decoding()
    reqs = paraphrase_requests(questions, k, decoding, seed=seed)
    out: dict[str, list[Paraphrase]] = {}
    for q, res in zip(questions, llm.generate(reqs, desc="paraphrasing"), strict=True):
        rows = []
        for s in res.samples:
            if isinstance(s, CallFailure):
                rows.append(
                    Paraphrase(
                        question_id=q.id,
                        k=s.index,
                        raw="",
                        text=None,
                        parse_error=f"call failed ({s.reason}): {s.message}",
                        failed=failure_text(s),
                    )
                )
                continue
            text, why = parse_paraphrase(s.text)
            if why and s.finish_reason == "length":
                why += f" (the reply hit max_tokens = {decoding.max_tokens})"
            rows.append(
                Paraphrase(
                    question_id=q.id, k=s.index, raw=s.text, text=text, parse_error=why, finish_reason=s.finish_reason
                )
            )
        out[q.id] = rows
    return out


def failure_text(failure: CallFailure) -> str:
    """A failed call's reason as recorded on the row (``"<reason>: <message>"``, secrets redacted)."""
    return redact(f"{failure.reason}: {failure.message}")


@dataclass(frozen=True)
class Judges:
    """The two LLM judges (Listings B.2 and B.3) through the shared judge helper; ``max_tokens`` caps each reply."""

    max_tokens: int = JUDGE_MAX_TOKENS
    max_reasks: int = 2
    consistency: LLMJudge = field(init=False)
    factual: LLMJudge = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "consistency", self._judge(ConsistencyVerdict, "consistency_judge", "judging consistency")
        )
        object.__setattr__(self, "factual", self._judge(FactualVerdict, "factual_judge", "judging answers"))

    def _judge(self, verdict: type[BaseModel], prompt: str, desc: str) -> LLMJudge:
        """The judge of ``verdict`` under the prompt template ``prompt``, with this pair's limits."""
        return LLMJudge(verdict, template(prompt), max_tokens=self.max_tokens, max_reasks=self.max_reasks, desc=desc)


def consistency_items(pairs: Sequence[tuple[str, str, str]]) -> list[JudgeItem]:
    """The B.2 judge items of (tag, original question, paraphrase) triples (the tag is not part of the cache key)."""
    return [JudgeItem({"question": q, "paraphrase": p}, tag=tag) for tag, q, p in pairs]


def judge_consistency(
    llm: LLM, pairs: Sequence[tuple[str, str, str]], judges: Judges | None = None
) -> list[Judged[ConsistencyVerdict]]:
    """B.2 verdicts for (tag, original question, paraphrase) triples, in order."""
    judges = judges or Judges()
    return judges.consistency.judge(llm, consistency_items(pairs))


async def ajudge_consistency(
    llm: LLM,
    pairs: Sequence[tuple[str, str, str]],
    judges: Judges | None = None,
    summary: RunSummary | None = None,
) -> list[Judged[ConsistencyVerdict]]:
    """:func:`judge_consistency` in a running event loop (the same requests, so the same cache entries); the
    calls' accounting is added to ``summary``."""
    judges = judges or Judges()
    items = consistency_items(pairs)
    if not items:
        return []
    out = await judges.consistency.ajudge(llm, items)
    if summary is not None:  # read before any other await: the judge's summary of exactly this call
        summary.merge(llm.last_summary)
    return out


def qa_requests(items: Sequence[tuple[str, str]], decoding: QADecoding | None = None) -> list[ChatRequest]:
    """The QA model's deterministic requests (Listing B.4) for (tag, question text) pairs."""
    decoding = decoding or QADecoding()
    return [ChatRequest(qa_messages(text), decoding.params(), n=1, tag=tag) for tag, text in items]


def qa_answer(sample: Sample | CallFailure) -> QAAnswer:
    """One QA reply, ``<answer>`` parsed with a recorded fallback; a failed call gives no answer: ``failed`` holds
    the reason (a missing value, never graded)."""
    if isinstance(sample, CallFailure):
        return QAAnswer(text="", raw="", extraction="empty", failed=failure_text(sample))
    text, how = parse_answer(sample.text)
    return QAAnswer(text=text, raw=sample.text, extraction=how, finish_reason=sample.finish_reason)  # type: ignore[arg-type]


def answer(llm: LLM, items: Sequence[tuple[str, str]], decoding: QADecoding | None = None) -> list[QAAnswer]:
    """The QA model's deterministic answers to (tag, question text) pairs, ``<answer>`` parsed with a recorded
    fallback; a failed call gives an answer with ``failed`` set (see :func:`qa_answer`)."""
    return [qa_answer(res.samples[0]) for res in llm.generate(qa_requests(items, decoding), desc="answering")]


_PUNCT = re.compile(r"[^\w\s]")


def normalize_answer(text: str) -> str:
    """Lower-case, NFKC, punctuation removed, whitespace collapsed (PopQA exact match)."""
    return " ".join(_PUNCT.sub(" ", unicodedata.normalize("NFKC", text).lower()).split())


def exact_match(response: str, answers: Sequence[str]) -> bool:
    """The PopQA protocol (Mallen et al. 2023): correct when a normalised gold alias occurs in the normalised
    response (as whole words)."""
    r = f" {normalize_answer(response)} "
    return any((a := normalize_answer(g)) and f" {a} " in r for g in answers)


SCORE_TO_CORRECTNESS: dict[int, Correctness] = {0: "correct", 1: "fuzzy", 2: "wrong"}


@dataclass(frozen=True)
class Grade:
    correctness: Correctness
    factual_score: int | None = None  # B.3 score (None for exact match or unjudged)
    think: str | None = None
    failed: str | None = None  # correctness "failed": the step and reason of the failed call (QA or grading)


def grade(
    judge_llm: LLM | None,
    items: Sequence[tuple[str, HQuestion, QAAnswer]],
    grading: Grading | None = None,
    judges: Judges | None = None,
) -> list[Grade]:
    """Grade (tag, question, answer) triples: exact match for ``grading.exact_match_sources`` (PopQA), the B.3
    judge (reference = ``question.answer``) otherwise; an unparseable verdict is ``unjudged``; an answer whose QA
    call failed, or a verdict whose judge call failed, is ``failed`` (a missing value, never wrong)."""
    return run_sync(agrade(judge_llm, items, grading, judges))


async def agrade(
    judge_llm: LLM | None,
    items: Sequence[tuple[str, HQuestion, QAAnswer]],
    grading: Grading | None = None,
    judges: Judges | None = None,
    summary: RunSummary | None = None,
) -> list[Grade]:
    """:func:`grade` in a running event loop (the same requests); the judge calls' accounting is added to
    ``summary``."""
    grading = grading or Grading()
    judges = judges or Judges()
    out: list[Grade | None] = [None] * len(items)
    to_judge: list[int] = []
    for i, (_tag, q, a) in enumerate(items):
        if a.failed:
            out[i] = Grade("failed", failed=f"qa: {a.failed}")
        elif q.source in grading.exact_match_sources:
            out[i] = Grade("correct" if exact_match(a.text, q.answers) else "wrong")
        elif not a.text:
            out[i] = Grade("wrong", 2, "empty answer")
        else:
            to_judge.append(i)
    if to_judge:
        if judge_llm is None:
            raise ValueError("grading needs a judge model (--judge) for sources other than PopQA")
        verdicts = await judges.factual.ajudge(
            judge_llm,
            [
                JudgeItem({"ground_truth": items[i][1].answer, "response": items[i][2].text}, tag=items[i][0])
                for i in to_judge
            ],
        )
        if summary is not None:  # read before any other await: the judge's summary of exactly this call
            summary.merge(judge_llm.last_summary)
        for i, v in zip(to_judge, verdicts, strict=True):
            if v.failure is not None:
                out[i] = Grade("failed", failed=f"grading: {failure_text(v.failure)}")
            elif v.verdict is None:
                out[i] = Grade("unjudged")
            else:
                out[i] = Grade(SCORE_TO_CORRECTNESS[v.verdict.result], v.verdict.result, v.verdict.think)
    return out  # type: ignore[return-value]


def counts_as_correct(correctness: Correctness | None, grading: Grading | None = None) -> bool:
    """Whether a grade counts as correct: ``fuzzy`` per ``grading.fuzzy`` (default wrong, as Eq. 10's
    R_halluc != 0); ``unjudged`` and None are not correct."""
    grading = grading or Grading()
    return correctness == "correct" or (correctness == "fuzzy" and grading.fuzzy == "correct")


# ---- the whole run ---------------------------------------------------------------------------------------

QAScope = Literal["originally_correct", "all"]
DiversityFn = Callable[[list[tuple[str, list[tuple[str | None, bool]]]]], list[list]]  # phr.hr1.diversity.score_groups


@dataclass(frozen=True)
class RunPlan:
    """What one run does, resolved by the operation's ``plan`` (``phr.ops``): ``k`` paraphrases per
    question; ``decoding``: the config's decoding group (``HR1Decoding``: every role's max_tokens, read from the
    config itself, never copied); ``grading``; ``qa_scope``: whose consistent paraphrases the QA model answers:
    ``originally_correct`` (Algorithm 1: only True samples can fail) or ``all`` (Table 4, the SFT corpus)."""

    k: int = HR1_K
    decoding: HR1Decoding = field(default_factory=HR1Decoding)
    grading: Grading = field(default_factory=Grading)
    qa_scope: QAScope = "originally_correct"
    answer_originals: bool = True
    seed: int | None = 0

    @property
    def paraphrase_decoding(self) -> Decoding:
        """The paraphraser's sampling (Listing A.1) at the config's ``max_tokens``."""
        return Decoding(max_tokens=self.decoding.max_tokens)

    @property
    def qa_decoding(self) -> QADecoding:
        return QADecoding(max_tokens=self.decoding.qa_max_tokens)

    @cached_property
    def judges(self) -> Judges:
        return Judges(max_tokens=self.decoding.judge_max_tokens)

    def as_dict(self) -> dict:
        """The plan as recorded in manifests and results."""
        return {
            "k": self.k,
            "decoding": asdict(self.paraphrase_decoding),
            "qa_decoding": asdict(self.qa_decoding),
            "grading": self.grading.as_dict(),
            "judge_max_tokens": self.decoding.judge_max_tokens,
            "qa_scope": self.qa_scope,
            "seed": self.seed,
        }


LOCAL_BATCH = 32  # generations per forward loop of a local: model (8 by default): ~30% faster on 2 CPU cores


class Models:
    """One LLM per distinct spec, made on first use with the same options (a local model serving several roles
    is loaded once; its generations are batched ``LOCAL_BATCH`` at a time). ``none`` / None is no model."""

    def __init__(self, **options: Any) -> None:
        self.options = options
        self._made: dict[str, LLM] = {}

    def caches(self) -> list:
        """The call cache files of the models made so far (for the rerun hint)."""
        return list(dict.fromkeys(llm.cache.path for llm in self._made.values()))

    def get(self, spec: str | None) -> LLM | None:
        if spec is None or is_no_model(spec):
            return None
        if spec not in self._made:
            local = {"batch_size": LOCAL_BATCH} if spec.startswith("local:") and "provider" not in self.options else {}
            self._made[spec] = LLM(spec, **{"show_summary": False, **local, **self.options})
        return self._made[spec]


def run_questions(
    questions: Sequence[HQuestion],
    *,
    paraphraser: LLM | None,
    qa: LLM | None,
    judge: LLM | None,
    plan: RunPlan | None = None,
    diversity: DiversityFn | None = None,
    summary: RunSummary | None = None,
    paraphrases: Mapping[str, Sequence[ParaphraseResult]] | None = None,
) -> list[QuestionResult]:
    """Algorithm 1 over ``questions``, keeping everything: the original question's answer and grade, K
    paraphrases (text or parse error), their B.2 verdicts, diversity scores (``diversity``: see
    ``phr.hr1.diversity.score_groups``), and the QA answers and grades of the consistent paraphrases in
    ``plan.qa_scope``. A model left as None skips its steps (e.g. ``qa=None``: no answers). ``summary``
    accumulates the LLM calls of every step (calls, cache hits, failures, cost). ``paraphrases``: given
    paraphrases with their consistency labels per question id (H-R1-mini's curated ones): steps 2-3 (the
    paraphraser and the B.2 judge) are not run."""
    plan = plan or RunPlan()
    tally = _Tally(summary if summary is not None else RunSummary())
    results = {q.id: QuestionResult(question=q) for q in questions}
    if qa is not None and plan.answer_originals:  # 1. the original questions
        items = [(q.id, q, q.question) for q in questions]
        for q, (a, g) in zip(questions, _answer_and_grade(qa, judge, items, plan, tally), strict=True):
            _record(results[q.id], a, g)
    if paraphrases is not None:  # given with their labels: no paraphraser, no B.2 judge
        for q in questions:
            results[q.id].paraphrases = [p.model_copy() for p in paraphrases[q.id]]
    elif paraphraser is None:
        return list(results.values())
    else:  # 2. paraphrases and 3. their consistency
        for qid, rows in _generated(paraphraser, questions, plan, tally).items():
            results[qid].paraphrases = rows
        if judge is not None:
            todo = [(q, p) for q in questions for p in results[q.id].paraphrases if p.text is not None]
            _judge(judge, todo, plan, tally)
    if diversity is not None:  # App. A.1: groups of (original, [(paraphrase, consistent)])
        _score_diversity(diversity, [(q.question, results[q.id].paraphrases) for q in questions])
    if qa is not None:  # 4. QA on consistent paraphrases, graded
        asked = [
            (q, p)
            for q in questions
            if plan.qa_scope == "all" or results[q.id].originally_correct
            for p in results[q.id].paraphrases
            if p.consistent
        ]
        if asked:
            items = [(f"{q.id}/p{p.k}", q, p.text or "") for q, p in asked]
            for (_q, p), (a, g) in zip(asked, _answer_and_grade(qa, judge, items, plan, tally), strict=True):
                _record(p, a, g)
    return list(results.values())


class _Tally:
    """Adds each call's summary to ``summary`` once (one LLM may serve several roles)."""

    def __init__(self, summary: RunSummary) -> None:
        self.summary = summary
        self.merged: set[int] = set()

    def __call__(self, *llms: LLM | None) -> None:
        for llm in llms:
            if llm is not None and id(llm.last_summary) not in self.merged:
                self.merged.add(id(llm.last_summary))
                self.summary.merge(llm.last_summary)


def _answer_and_grade(
    qa: LLM, judge: LLM | None, items: list[tuple[str, HQuestion, str]], plan: RunPlan, tally: _Tally
) -> list[tuple[QAAnswer, Grade]]:
    """The QA model's answers to (tag, question, text asked) triples, and their grades."""
    answers = answer(qa, [(tag, text) for tag, _q, text in items], plan.qa_decoding)
    tally(qa)
    graded = [(tag, q, a) for (tag, q, _t), a in zip(items, answers, strict=True)]
    grades = grade(judge, graded, plan.grading, plan.judges)
    tally(judge)
    return list(zip(answers, grades, strict=True))


def _record(row: QuestionResult | ParaphraseResult, a: QAAnswer, g: Grade) -> None:
    """Set a question's or paraphrase's answer and grade."""
    row.qa_answer, row.qa_extraction, row.correctness, row.factual_score, row.failed = (
        a.text,
        a.extraction,
        g.correctness,
        g.factual_score,
        g.failed,
    )


def _generated(
    paraphraser: LLM, questions: Sequence[HQuestion], plan: RunPlan, tally: _Tally
) -> dict[str, list[ParaphraseResult]]:
    """The K paraphrases of each question (Listing B.1), in order of k, by question id."""
    paras = generate_paraphrases(paraphraser, questions, plan.k, plan.paraphrase_decoding, seed=plan.seed)
    tally(paraphraser)
    return {
        q.id: [
            ParaphraseResult(
                k=p.k, text=p.text, parse_error=p.parse_error, failed=p.failed and f"paraphrase: {p.failed}"
            )
            for p in sorted(paras[q.id], key=lambda p: p.k)
        ]
        for q in questions
    }


def _judge(judge: LLM, todo: list[tuple[HQuestion, ParaphraseResult]], plan: RunPlan, tally: _Tally) -> None:
    """The B.2 verdicts of (question, paraphrase with text) pairs, set on the paraphrases."""
    if not todo:
        return
    pairs = [(f"{q.id}/p{p.k}", q.question, p.text or "") for q, p in todo]  # each with a text
    verdicts = judge_consistency(judge, pairs, plan.judges)
    tally(judge)
    for (_q, p), v in zip(todo, verdicts, strict=True):
        if v.failure is not None:
            p.consistent, p.failed = None, f"consistency judge: {failure_text(v.failure)}"
        elif v.verdict is None:
            p.consistent, p.consistency_think = None, "unjudged: " + "; ".join(v.errors[-1:])
        else:
            p.consistent, p.consistency_think = v.verdict.result == 1, v.verdict.think


def _score_diversity(diversity: DiversityFn, groups: list[tuple[str, list[ParaphraseResult]]]) -> None:
    """App. A.1's scores of each question's paraphrases, set on them."""
    scored = diversity([(original, [(p.text, bool(p.consistent)) for p in ps]) for original, ps in groups])
    for (_original, ps), scores in zip(groups, scored, strict=True):
        for p, sc in zip(ps, scores, strict=True):
            for key in ("s_selfbleu", "s_embed", "r_div", "mean_div"):
                setattr(p, key, getattr(sc, key))

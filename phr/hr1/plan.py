"""What a Hallucination-R1 run will call, for the preflight's plan (``--dry-run``): per model, the requests, how
many are cached, estimated tokens and cost (``phr.llm.preflight``).

Exact where the prompt is known before the run: Listing B.1 for every question, Listing B.4 for the original
questions. Estimated where the run writes it: the judges and the QA model on paraphrases not yet made (each
paraphrase stood in by its question). Upper bounds: every paraphrase counted as parsed and consistent, every
answer as asked, every completion at its max_tokens, no re-ask.

Requests that depend on earlier answers are counted as a bound and marked with their condition
(``Preflight.calls(when=...)``): the QA model's answers to the paraphrases of questions it first answered
correctly (Algorithm 1), the B.2 judge of paraphrases that parse, the B.3 grades of those answers. Their expected
number takes ``EXPECTED_FIRST_CORRECT`` of the questions as first answered correctly (a nominal share: the QA
model's accuracy is known only once it has answered) and every paraphrase as parsed and consistent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from phr.config.defaults import is_no_model
from phr.llm.judge import JudgeItem
from phr.llm.preflight import Preflight

from .pipeline import RunPlan, consistency_items, paraphrase_requests, qa_requests
from .records import HQuestion

if TYPE_CHECKING:  # pragma: no cover - the client is imported where a provider is made
    from phr.llm.providers.base import Provider


#: the share of questions the plan expects the QA model to answer correctly first (nominal, for expected counts)
EXPECTED_FIRST_CORRECT = 0.5
FIRST_CORRECT = "Algorithm 1 asks them only for questions first answered correctly"
PARSED = "only paraphrases that parse"


def _provider(spec: str, llm_options: dict) -> Provider | None:
    """The provider of ``spec`` (for its cache keys), or None when it cannot be made (the preflight says why)."""
    from phr.llm.client import LLM

    try:
        return LLM(spec, progress=False, show_summary=False, **llm_options).provider
    except Exception:  # noqa: BLE001 - the model check reports a spec that does not resolve
        return None


def add_calls(
    pf: Preflight,
    questions: Sequence[HQuestion],
    plan: RunPlan,
    *,
    paraphraser: str | None = None,
    judge: str | None = None,
    qa: str | None = None,
    judged: bool | None = None,
    asked: int = 0,
    grade: bool = True,
    known: Mapping[str, Sequence[str]] | None = None,
    llm_options: dict | None = None,
) -> None:
    """Add one run's calls to ``pf``. ``paraphraser`` writes ``plan.k`` paraphrases per question (Listing B.1);
    ``judge`` judges each of them (B.2; ``judged``, default: when there is a paraphraser) and, with ``grade``,
    each QA answer outside ``plan.grading``'s exact-match sources (B.3); ``qa`` answers each question and
    ``asked`` of its paraphrases (Listing B.4). ``known``: paraphrases already written (curated), by question id:
    the QA model's requests for them are exact (at most ``asked`` each) instead of estimated. A ``none`` model
    adds nothing."""
    opts = llm_options or {}
    qs = list(questions)
    has = {role: not is_no_model(spec) for role, spec in (("paraphraser", paraphraser), ("judge", judge), ("qa", qa))}
    if has["paraphraser"]:
        requests = paraphrase_requests(qs, plan.k, plan.paraphrase_decoding, seed=plan.seed)
        pf.calls(str(paraphraser), requests, provider=_provider(str(paraphraser), opts))
    if has["judge"] and (has["paraphraser"] if judged is None else judged):
        items = consistency_items([(f"{q.id}/p{k}", q.question, q.question) for q in qs for k in range(plan.k)])
        generated = has["paraphraser"]  # curated paraphrases all have a text
        pf.calls(
            str(judge), plan.judges.consistency.requests(items), estimated=True, when=PARSED if generated else None
        )
    if not has["qa"]:
        return
    per = min(asked, plan.k)
    provider = _provider(str(qa), opts)
    pf.calls(str(qa), qa_requests([(q.id, q.question) for q in qs], plan.qa_decoding), provider=provider)
    after = FIRST_CORRECT if plan.qa_scope == "originally_correct" and plan.answer_originals else None
    share = EXPECTED_FIRST_CORRECT if after else 1.0
    if per and known is not None:
        texts = [(f"{q.id}/p{k}", t) for q in qs for k, t in enumerate(list(known.get(q.id, ()))[:per])]
        pf.calls(str(qa), qa_requests(texts, plan.qa_decoding), provider=provider, when=after, share=share)
    elif per:
        stand_ins = [(f"{q.id}/p{k}", q.question) for q in qs for k in range(per)]
        pf.calls(str(qa), qa_requests(stand_ins, plan.qa_decoding), estimated=True, when=after, share=share)
    graded = [q for q in qs if q.source not in plan.grading.exact_match_sources]
    if grade and graded and has["judge"]:
        originals = [JudgeItem({"ground_truth": q.answer, "response": q.answer}, tag=f"{q.id}/0") for q in graded]
        pf.calls(str(judge), plan.judges.factual.requests(originals), estimated=True)
        items = [
            JudgeItem({"ground_truth": q.answer, "response": q.answer}, tag=f"{q.id}/{i}")
            for q in graded
            for i in range(1, 1 + per)
        ]
        pf.calls(str(judge), plan.judges.factual.requests(items), estimated=True, when=after, share=share)

"""What scoring a run or a submission will call, for the preflight's plan (``--dry-run``, phr.llm.preflight).

The responses exist, so the resolution judge's requests are exact (one per present response of a judged
condition, B+H; with the share already in the call cache); the reference scorer reads log-probabilities in
process (no API call); the equivalence grader is asked at most once per present open-ended response (which of
them are free text is known only after the rule grading).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from phr.bench.records import TaskType
from phr.config.defaults import is_no_model
from phr.config.ops import Scoring
from phr.llm.judge import JudgeItem
from phr.llm.preflight import Preflight

from .dataset import Instance
from .resolution import resolution_judge, resolution_prompt
from .scorers import ResolutionScorer


def add_scoring_calls(
    pf: Preflight,
    instances: Sequence[Instance],
    responses: Mapping[tuple[str, int], str],
    samples: int,
    scoring: Scoring,
    *,
    llm_options: Mapping | None = None,
) -> None:
    """Add the calls of scoring ``responses`` (samples 0..samples-1 of each instance) with ``scoring``'s scorer,
    judge and grader to ``pf``."""
    scorer, judge, grader = scoring.scorer, scoring.judge, scoring.grader
    present = [(inst, text) for inst in instances for k in range(samples) if (text := responses.get((inst.id, k)))]
    pf.note(f"{len(present)} responses to score ({len(instances)} instances x {samples} samples, the rest missing)")
    if not is_no_model(scorer):
        pf.note(f"reference scorer {scorer}: log-probabilities of {len(present)} responses, in process (no API call)")
    if not is_no_model(grader):
        open_ended = sum(inst.task_type == TaskType.OPEN_ENDED for inst, _ in present)
        pf.note(f"grader {grader}: at most {open_ended} equivalence verdicts (the free-text open-ended answers)")
    if is_no_model(judge):
        return
    from phr.llm.client import LLM

    resolution = ResolutionScorer(str(judge))
    conditions = resolution.config.conditions
    items = [
        JudgeItem(prompt=resolution_prompt(inst, text), tag=inst.id)
        for inst, text in present
        if inst.condition in conditions
    ]
    requests = resolution_judge(resolution.config.max_tokens, resolution.config.max_reasks).requests(items)
    provider = LLM(str(judge), progress=False, show_summary=False, **dict(llm_options or {})).provider
    pf.calls(str(judge), requests, provider=provider)

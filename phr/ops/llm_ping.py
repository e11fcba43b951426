"""`llm ping`: one prompt to a model, its reply and usage (docs/scaling.md).

    from phr.api import plan, run
    reply = run(plan(LlmPingConfig(spec="local:smollm2")))     # reply.text, reply.usage_line()

Its plan has nothing to print (``lines()`` is empty): the command's output is its result.
"""

from __future__ import annotations

from dataclasses import dataclass

from phr.config.ops import LlmPingConfig
from phr.core.errors import PHRError
from phr.llm.summary import RunSummary
from phr.llm.types import Sample
from phr.ops.plan import QuietPlan


class PingFailed(PHRError):
    """The ping's call failed after its attempts (exit 1; the message is the failure's)."""


@dataclass
class PingResult:
    sample: Sample
    summary: RunSummary

    def usage_line(self) -> str:
        s = self.sample
        batch = f" (whole batch of {s.batch_size})" if s.batch_size > 1 else ""
        return (
            f"model={s.model} finish={s.finish_reason} prompt_tokens={s.prompt_tokens} "
            f"completion_tokens={s.completion_tokens} latency={s.latency_s:.2f}s{batch} cached={s.cached}"
        )


def plan(cfg: LlmPingConfig) -> QuietPlan[LlmPingConfig]:
    return QuietPlan(config=cfg)


def run(p: QuietPlan[LlmPingConfig]) -> PingResult:
    """The reply (``PingFailed`` when the call failed after its attempts)."""
    return _ping(p.config)


def _ping(cfg: LlmPingConfig) -> PingResult:
    from phr.llm import LLM

    llm = LLM(
        cfg.spec,
        cache_mode=cfg.cache_mode,
        timeout=cfg.timeout,
        max_attempts=cfg.attempts,
        max_retry_after=cfg.max_retry_after,
        progress=False,
        show_summary=False,
    )
    result = llm.chat(cfg.prompt, max_tokens=cfg.max_tokens, temperature=cfg.temperature)
    s = result.samples[0]
    if not isinstance(s, Sample):  # a CallFailure: the call failed after its attempts
        raise PingFailed(s.message)
    return PingResult(s, llm.last_summary)

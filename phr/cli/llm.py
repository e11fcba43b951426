"""`phr-publish llm ping` and `phr-publish cache stats|clear`: talk to a model, inspect the call cache
(the operations: phr.ops.llm_ping, cache_stats, cache_clear)."""

from __future__ import annotations

import sys

import typer

from phr.cli.common import execute, new_app
from phr.cli.options import bind
from phr.config.ops import CacheClearConfig, CacheStatsConfig, LlmPingConfig

llm_app = new_app("Talk to a model through the LLM layer (any provider spec).")
cache_app = new_app("Inspect or clear the LLM call cache.")


@llm_app.command("ping")
@bind(LlmPingConfig)
def llm_ping(cfg: LlmPingConfig) -> None:
    """Send one prompt and print the reply and the usage."""
    reply = execute(cfg)
    typer.echo(reply.sample.text)  # raw: model text is not rich markup
    typer.echo(reply.usage_line(), err=True)
    reply.summary.print()


@cache_app.command("stats")
@bind(CacheStatsConfig)
def cache_stats(cfg: CacheStatsConfig) -> None:
    """Entries, failures, size and tokens per model in the call cache."""
    for line in execute(cfg).lines():
        typer.echo(line)


@cache_app.command("clear")
@bind(CacheClearConfig)
def cache_clear(cfg: CacheClearConfig) -> None:
    """Delete cached calls (all, or one model's)."""
    from phr import api
    from phr.ops.cache_clear import ClearPlan

    p = api.plan(cfg)
    assert isinstance(p, ClearPlan)
    if not cfg.yes and sys.stdin.isatty():
        typer.confirm(f"Delete {cfg.model or 'all'} entries in {p.path}?", abort=True)
    n = api.run(p)
    typer.echo(f"deleted {n} entries from {p.path}")

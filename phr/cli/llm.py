"""`phr-publish llm ping` and `phr-publish cache stats|clear`: talk to a model, inspect the call cache."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from phr.cli.common import MaxRetryAfter, Timeout, error, new_app
from phr.config.defaults import MAX_RETRY_AFTER_S

llm_app = new_app("Talk to a model through the LLM layer (any provider spec).")
cache_app = new_app("Inspect or clear the LLM call cache.")


@llm_app.command("ping")
def llm_ping(
    spec: Annotated[
        str, typer.Argument(metavar="SPEC", help="Model spec, e.g. local:smollm2, openai:gpt-4o, anthropic:<model>.")
    ],
    prompt: Annotated[
        str, typer.Option(help="The prompt to send.")
    ] = "What is the capital of France? Answer in one sentence.",
    max_tokens: Annotated[int, typer.Option(help="Maximum new tokens.")] = 64,
    temperature: Annotated[float, typer.Option(help="Sampling temperature (0 = greedy).")] = 0.0,
    cache_mode: Annotated[str, typer.Option(help="use | refresh | off")] = "use",
    timeout: Timeout = 60.0,
    attempts: Annotated[int, typer.Option(help="Attempts before giving up (retries back off exponentially).")] = 3,
    max_retry_after: MaxRetryAfter = MAX_RETRY_AFTER_S,
) -> None:
    """Send one prompt and print the reply and the usage."""
    from phr.llm import LLM

    llm = LLM(
        spec,
        cache_mode=cache_mode,
        timeout=timeout,
        max_attempts=attempts,
        max_retry_after=max_retry_after,
        progress=False,
        show_summary=False,
    )
    result = llm.chat(prompt, max_tokens=max_tokens, temperature=temperature)
    s = result.samples[0]
    if result.failures:
        error(s.message)
        raise typer.Exit(1)
    typer.echo(s.text)  # raw: model text is not rich markup
    batch = f" (whole batch of {s.batch_size})" if s.batch_size > 1 else ""
    typer.echo(
        f"model={s.model} finish={s.finish_reason} prompt_tokens={s.prompt_tokens} "
        f"completion_tokens={s.completion_tokens} latency={s.latency_s:.2f}s{batch} cached={s.cached}",
        err=True,
    )
    llm.last_summary.print()


@cache_app.command("stats")
def cache_stats(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Entries, failures, size and tokens per model in the call cache."""
    from phr.llm.cache import CallCache

    st = CallCache().stats()
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "path": str(st.path),
                    "entries": st.entries,
                    "failures": st.failures,
                    "size_bytes": st.size_bytes,
                    "models": [
                        dict(
                            zip(("provider", "model", "entries", "prompt_tokens", "completion_tokens"), r, strict=True)
                        )
                        for r in st.by_model
                    ],
                },
                indent=2,
            )
        )
        return
    typer.echo(
        f"cache: {st.path}\nentries: {st.entries}\nfailures recorded: {st.failures}\nsize: {st.size_bytes} bytes"
    )
    for provider, model, n, pt, ct in st.by_model:
        typer.echo(f"  {provider}:{model}  {n} entries, {pt or 0} prompt + {ct or 0} completion tokens")


@cache_app.command("clear")
def cache_clear(
    model: Annotated[str | None, typer.Option(help="Only this model's entries.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Delete cached calls (all, or one model's)."""
    from phr.llm.cache import CallCache

    cache = CallCache()
    if not yes and sys.stdin.isatty():
        typer.confirm(f"Delete {model or 'all'} entries in {cache.path}?", abort=True)
    n = cache.clear(model)
    typer.echo(f"deleted {n} entries from {cache.path}")

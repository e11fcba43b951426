"""`phr-publish`: a thin command line over the library."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.text import Text

from phr.core.errors import PHRError
from phr.core.secrets import redact

app = typer.Typer(
    name="phr-publish",
    help="Build, validate, evaluate and publish PHRBench and Hallucination-R1 artifacts.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
llm_app = typer.Typer(help="Talk to a model through the LLM layer (any provider spec).", no_args_is_help=True)
cache_app = typer.Typer(help="Inspect or clear the LLM call cache.", no_args_is_help=True)
app.add_typer(llm_app, name="llm")
app.add_typer(cache_app, name="cache")
build_app = typer.Typer(help="Build datasets (PHRBench).", no_args_is_help=True)
app.add_typer(build_app, name="build")
from phr.cli_review import review_app  # noqa: E402

app.add_typer(review_app, name="review", help="Manual review round trip: export a sheet, import decisions.")
from phr.cli_publish import register as _register_publish  # noqa: E402

_register_publish(app)
from phr.cli_eval import MaxRetryAfter, Timeout  # noqa: E402
from phr.cli_eval import register as _register_eval  # noqa: E402

_register_eval(app)

out = Console()
err = Console(stderr=True)


@app.callback()
def _global(
    cache: Annotated[Optional[Path], typer.Option("--cache", envvar="PHR_CACHE", help="Call cache file (SQLite).")] = None,
    log_level: Annotated[str, typer.Option("--log-level", envvar="PHR_LOG_LEVEL", help="DEBUG, INFO, WARNING, ERROR.")] = "WARNING",
) -> None:
    from phr.core.log import setup_logging

    if log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise typer.BadParameter(f"unknown log level {log_level!r}", param_hint="--log-level")
    setup_logging(log_level)
    if cache is not None:
        os.environ["PHR_CACHE"] = str(cache.expanduser())


@llm_app.command("ping")
def llm_ping(
    spec: Annotated[str, typer.Argument(help="Model spec, e.g. local:smollm2, openai:gpt-4o, anthropic:<model>.")],
    prompt: Annotated[str, typer.Option(help="The prompt to send.")] = "What is the capital of France? Answer in one sentence.",
    max_tokens: Annotated[int, typer.Option(help="Maximum new tokens.")] = 64,
    temperature: Annotated[float, typer.Option(help="Sampling temperature (0 = greedy).")] = 0.0,
    cache_mode: Annotated[str, typer.Option(help="use | refresh | off")] = "use",
    timeout: Timeout = 60.0,
    attempts: Annotated[int, typer.Option(help="Attempts before giving up (retries back off exponentially).")] = 3,
    max_retry_after: MaxRetryAfter = 600.0,
) -> None:
    """Send one prompt and print the reply and the usage."""
    from phr.llm import LLM

    llm = LLM(spec, cache_mode=cache_mode, timeout=timeout, max_attempts=attempts, max_retry_after=max_retry_after,
              progress=False, show_summary=False)
    result = llm.chat(prompt, max_tokens=max_tokens, temperature=temperature)
    s = result.samples[0]
    if result.failures:
        _error(s.message)
        raise typer.Exit(1)
    typer.echo(s.text)  # raw: model text is not rich markup
    err.print(
        f"model={s.model} finish={s.finish_reason} prompt_tokens={s.prompt_tokens} "
        f"completion_tokens={s.completion_tokens} latency={s.latency_s:.2f}s"
        f"{f' (whole batch of {s.batch_size})' if s.batch_size > 1 else ''} cached={s.cached}", style="dim", markup=False, highlight=False
    )
    llm.last_summary.print(err)


@cache_app.command("stats")
def cache_stats(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Entries, failures, size and tokens per model in the call cache."""
    from phr.llm.cache import CallCache

    st = CallCache().stats()
    if as_json:
        out.print_json(json.dumps({
            "path": str(st.path), "entries": st.entries, "failures": st.failures, "size_bytes": st.size_bytes,
            "models": [dict(zip(("provider", "model", "entries", "prompt_tokens", "completion_tokens"), r))
                       for r in st.by_model],
        }))
        return
    out.print(f"cache: {st.path}\nentries: {st.entries}\nfailures recorded: {st.failures}\nsize: {st.size_bytes} bytes")
    for provider, model, n, pt, ct in st.by_model:
        out.print(f"  {provider}:{model}  {n} entries, {pt or 0} prompt + {ct or 0} completion tokens")


@cache_app.command("clear")
def cache_clear(
    model: Annotated[Optional[str], typer.Option(help="Only this model's entries.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Delete cached calls (all, or one model's)."""
    from phr.llm.cache import CallCache

    cache = CallCache()
    if not yes and sys.stdin.isatty():
        typer.confirm(f"Delete {'all' if not model else model + ''} entries in {cache.path}?", abort=True)
    n = cache.clear(model)
    out.print(f"deleted {n} entries from {cache.path}")


@build_app.command("phrbench")
def build_phrbench(
    recipe: Annotated[str, typer.Option(help="mini (offline, curated premises), paper, or a recipe YAML file.")] = "mini",
    generator: Annotated[Optional[str], typer.Option(help="Premise generator spec (paper: openai:gpt-4o).")] = None,
    judge: Annotated[Optional[str], typer.Option(help="LLM judge spec for the second validation pass ('none' to skip; paper: google:gemini-3-pro-preview).")] = None,
    source_dir: Annotated[Optional[Path], typer.Option(help="Folder with one sub-folder of released files per source.")] = None,
    online: Annotated[bool, typer.Option("--online", help="Load sources missing locally from the Hub.")] = False,
    out: Annotated[Path, typer.Option("--out", help="Output folder (Hub layout).")] = Path("phrbench"),
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing output folder.")] = False,
    allow_short: Annotated[bool, typer.Option("--allow-short", help="Build even if some questions lack premises.")] = False,
    timeout: Timeout = 120.0,
    max_retry_after: MaxRetryAfter = 600.0,
) -> None:
    """Build PHRBench (default: PHRBench-mini offline) into a validated Hub-layout folder."""
    from phr.builders.phrbench import build

    res = build(recipe, out, generator=generator, judge=judge, source_dir=source_dir, online=online,
                overwrite=overwrite, allow_short=allow_short,
                llm_options={"timeout": timeout, "max_retry_after": max_retry_after})
    total = sum(res.counts.values())
    counts = ", ".join(f"{k} {v}" for k, v in res.counts.items())
    typer.echo(f"built PHRBench ({recipe}) in {res.out}: {counts} = {total} instances")
    for k, v in res.qc.items():
        typer.echo(f"  {k}: {v}")
    typer.echo(f'load it with: load_dataset("{out}", "all")')


@app.command("validate")
def validate(
    folder: Annotated[Path, typer.Argument(help="A built PHRBench folder.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Run every check on a built folder; exit 0 when all pass, 1 otherwise (each failing row listed)."""
    from phr.validation.folder import validate_folder

    report = validate_folder(folder)
    if as_json:
        typer.echo(report.to_json())
    else:
        typer.echo(report.render())
    raise typer.Exit(0 if report.ok else 1)


def _error(message: str) -> None:
    """Print a one-line error, secrets redacted, never interpreted as markup."""
    err.print(Text.assemble(("error: ", "bold red"), redact(message)))


def main() -> None:
    """Entry point: clear one-line errors for PHRError, no tracebacks."""
    try:
        app()
    except PHRError as e:
        _error(str(e))
        logging.getLogger("phr").debug("details", exc_info=True)
        sys.exit(2)

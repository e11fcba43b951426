"""`phr-publish`: a thin command line over the library.

One module per command group (``llm``/``cache``, ``build``/``validate``, ``review``, ``hub``, ``eval``, ``report``, ``train``, ``analyze``), each a
``typer.Typer`` added here with ``add_typer``; one error boundary (``common.Root``): a ``PHRError`` or a fault of the
environment prints one line and exits 2 (usage) or 1 (failed work); SIGINT / SIGTERM print the rerun command.
"""

from __future__ import annotations

import os
import re
from itertools import takewhile
from pathlib import Path
from typing import Annotated

import typer

from phr.cli import analyze, build, eval, hub, llm, report, review, train
from phr.cli.common import Root
from phr.core.log import setup_logging
from phr.core.progress import quiet_third_party_bars

app = typer.Typer(
    name="phr-publish",
    cls=Root,
    help="Build, validate, evaluate and publish PHRBench and Hallucination-R1 artifacts.",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
app.add_typer(llm.llm_app, name="llm")
app.add_typer(llm.cache_app, name="cache")
app.add_typer(build.build_app, name="build")
app.add_typer(build.validate_app)
app.add_typer(review.review_app, name="review")
app.add_typer(hub.hub_app)
app.add_typer(eval.eval_app, name="eval")
app.add_typer(eval.submit_app)
app.add_typer(report.report_app)
app.add_typer(train.train_app, name="train")
app.add_typer(analyze.analyze_app, name="analyze")

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


@app.callback()
def _global(
    cache: Annotated[
        Path | None, typer.Option("--cache", envvar="PHR_CACHE", metavar="FILE", help="Call cache file (SQLite).")
    ] = None,
    log_level: Annotated[
        str, typer.Option("--log-level", envvar="PHR_LOG_LEVEL", metavar="LEVEL", help="DEBUG, INFO, WARNING, ERROR.")
    ] = "WARNING",
) -> None:
    if log_level.upper() not in LOG_LEVELS:
        raise typer.BadParameter(f"unknown log level {log_level!r}", param_hint="--log-level")
    setup_logging(log_level)
    quiet_third_party_bars()  # in a log: our [progress] lines, no \r-joined tqdm bars
    if cache is not None:
        os.environ["PHR_CACHE"] = str(cache.expanduser())


def _command_words(argv: list[str]) -> list[str]:
    """``argv`` from the command's words on (``eval hr1 ...``): the global options and their values left out."""
    while argv and argv[0].split("=")[0] in ("--cache", "--log-level"):
        argv = argv[1:] if "=" in argv[0] else argv[2:]
    return argv


def main() -> None:
    """Entry point (``phr-publish``): SIGINT / SIGTERM stop the work and print how to resume it
    (``phr.core.interrupt``); in a log, a ``[progress]`` line whenever the command was silent for 10 s, from the
    process's start to the command's end (rank 0 of a launch: ``phr.core.progress.command_heartbeat``)."""
    import gc
    import sys

    from phr.core.interrupt import install
    from phr.core.progress import command_heartbeat
    from phr.core.ranks import is_main

    install()
    words = takewhile(lambda arg: re.fullmatch(r"[a-z][a-z0-9-]*", arg), _command_words(sys.argv[1:])[:2])
    stop = command_heartbeat(" ".join(["phr-publish", *words])) if is_main() else lambda: None
    try:
        app()
    finally:
        stop()
        # the interpreter's exit collects every object the run made (torch, a model) once more: 7-38 s of silence
        # after the last line on a busy CPU. The command's garbage is collected now (its files and caches close),
        # the live rest is frozen: left to the process's end (1 s)
        gc.collect()
        gc.freeze()

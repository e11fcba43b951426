"""What the command modules share: the one error boundary, output helpers and the option types used by several
command groups."""

from __future__ import annotations

import errno
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandFunctionType

from phr.cli.fields import config_of, in_flags
from phr.config.defaults import model_or_none
from phr.core.errors import PHRError
from phr.core.secrets import redact

if TYPE_CHECKING:  # pragma: no cover - the commands import the library when they run (--help stays fast)
    from typer._click import Context, HelpFormatter  # the click that typer vendors (its classes are these)

    from phr.config.base import OpConfig


def error(message: str) -> None:
    """Print ``error: MESSAGE`` on stderr, secrets redacted, never read as markup."""
    typer.echo(f"error: {redact(message)}", err=True)


class Group(TyperGroup):
    """A command group whose command list shows each command's whole first sentence, wrapped (click cuts it to
    the width left on one line and appends "...", mid-sentence)."""

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class Root(Group):
    """The root command group: the one error boundary of the CLI. A ``PHRError`` from any command is printed as
    one line (no traceback) and exits with its code: 2 for a usage error, 1 for failed work. A fault of the
    environment (a full disk, a denied path, a damaged cache, a truncated JSON or parquet file, a failed git run:
    ``phr.core.faults``) is one line naming the file and the remedy, exit 1 (2 for an input that is not there or
    does not parse). SIGINT / SIGTERM print the command that resumes the work and exit 130 / 143. Click's own
    usage errors exit 2."""

    argv: list[str] = []

    def main(self, args: Sequence[str] | None = None, *a: Any, **kw: Any) -> Any:
        self.argv = list(sys.argv[1:] if args is None else args)
        return super().main(args, *a, **kw)

    def invoke(self, ctx: Context) -> Any:
        from phr.core.faults import ENVIRONMENT_ERRORS, describe, is_arrow_error
        from phr.core.interrupt import announces, exit_code_of, rerun_args, rerun_line

        try:
            return super().invoke(ctx)
        except PHRError as e:  # a config field the library names (overwrite=True) shown as its flag (--overwrite)
            _fail(in_flags(str(e), config_of(self, ctx, self.argv)), e.exit_code, e)
        except KeyboardInterrupt as e:  # Ctrl-C, or phr.core.interrupt.Interrupted (SIGINT / SIGTERM)
            if announces():  # under a launcher every rank gets the signal: rank 0 says it once
                typer.echo(f"interrupted; rerun to resume: {rerun_line(rerun_args(self.argv, e))}", err=True)
            raise typer.Exit(exit_code_of(e)) from None
        except ENVIRONMENT_ERRORS as e:
            if isinstance(e, OSError) and e.errno == errno.EPIPE:
                raise  # a closed pipe (`| head`): click ends quietly
            _fail(*describe(e))
        except Exception as e:  # a cut or damaged parquet file (pyarrow's errors): one line too
            if not is_arrow_error(e):
                raise
            _fail(*describe(e))


def _fail(message: str, code: int, exc: BaseException | None = None) -> NoReturn:
    """Print the one ``error:`` line (the traceback only at --log-level DEBUG) and exit with ``code``; an empty
    message (``phr.core.ranks.ReplicaStop``: rank 0 prints it) prints nothing. Under a launcher, a stop that
    every rank takes waits for the other ranks after the message (``phr.core.ranks.settle``)."""
    import logging

    from phr.core.ranks import settle

    if message:
        error(message)
    logging.getLogger("phr").debug("details", exc_info=True)
    if exc is not None:
        settle(exc)
    raise typer.Exit(code) from None


_REQUIRED = re.compile(r"^\{(.+)\}((?:\.\.\.)?)$")  # typer's "{name}" / "{name}..." for a required argument
_OPTIONAL = re.compile(r"^\[(.+)\]((?:\.\.\.)?)$")  # typer's "[name]" / "[name]..." for an optional one


class Command(TyperCommand):
    """A command whose usage line names required arguments plainly (``FOLDER``, not typer's ``{FOLDER}``), also
    those of a bound config (``phr.cli.options.bind``): the command takes them as optional, since ``--config`` may
    give them, but the config requires them, so every usage line (``--help``, a usage error) shows them
    required (``ORG/NAME``, not ``[ORG/NAME]``)."""

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        cls = getattr(self.callback, "config_class", None)
        required = {n for n, f in cls.model_fields.items() if f.is_required()} if cls is not None else set()
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            got = param.get_usage_pieces(ctx)
            if param.param_type_name == "argument" and param.name in required:
                got = [_OPTIONAL.sub(lambda m: m[1] + m[2], p) for p in got]
            pieces.extend(got)
        return [_REQUIRED.sub(lambda m: m[1].upper() + m[2], p) for p in pieces]


class App(typer.Typer):
    """``typer.Typer`` whose commands are ``Command``s."""

    def command(self, *args: Any, **kw: Any) -> Callable[[CommandFunctionType], CommandFunctionType]:
        kw.setdefault("cls", Command)
        return super().command(*args, **kw)


def new_app(help: str, **kw: Any) -> App:
    """A command group (or, added without a name, a set of top-level commands) in the CLI's one style: plain help
    (no type placeholders on flags), no pretty tracebacks."""
    kw.setdefault("cls", Group)
    return App(help=help, no_args_is_help=True, rich_markup_mode=None, pretty_exceptions_enable=False, **kw)


def spec_or_none(value: str | None) -> str | None:
    """A model spec, or ``None`` for none / off / empty (the one rule: ``phr.config.defaults.is_no_model``)."""
    return model_or_none(value)


# ---- option types shared by several groups ------------------------------------------------------------------------

Hub = Annotated[
    Path | None,
    typer.Option("--hub", metavar="HUBDIR", help="Local hub folder (default: $PHR_HUB_DIR; unset: the Hub)."),
]
Timeout = Annotated[float, typer.Option("--timeout", min=0.001, help="Per-call timeout in seconds (API models).")]
MaxRetryAfter = Annotated[
    float,
    typer.Option(
        "--max-retry-after",
        min=0,
        help="Longest Retry-After (seconds) a rate-limited call waits; a server asking for more fails the call at once.",
    ),
]


def execute(cfg: OpConfig, *, dry_run: bool = False) -> Any:
    """The one path of a command: ``plan(cfg)``; stop on its problems (exit 2, every problem listed); print the
    plan (a run prints it too, first; its ``warning:`` lines on stderr; under a launcher rank 0 alone); on a dry
    run stop there, else ``run`` exactly that plan and return its result (None on a dry run)."""
    from phr import api
    from phr.core.ranks import decided_alike, is_main

    with decided_alike():  # under a launcher every rank plans alike: rank 0 prints the plan or its problems
        p = api.plan(cfg)
        p.preflight.raise_problems()
    for line in p.lines() if is_main() else ():  # warnings (a weak code sandbox, ...) on stderr: seen when piped
        typer.echo(line, err=line.startswith("warning: "))
    if dry_run:
        if is_main():
            typer.echo("dry run: all checks passed; nothing was called")
        return None
    if cfg.keeps_freed_memory:
        from phr.core.memory import keep_freed_memory

        keep_freed_memory()
    return api.run(p)

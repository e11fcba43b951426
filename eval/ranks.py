"""``eval phrbench`` on several processes: ``accelerate launch`` / ``torchrun`` start the command on N ranks, each
generates one shard of the run, and rank 0 joins the shards into the one run folder and scores it
(docs/scaling.md, "Evaluation on several processes").

This is the shard machinery of several machines (``--shard i/n`` + ``eval merge``) run inside one launch:

1. rank r (0-based) of n runs the same command with ``--shard r+1/n --out STAGE/shard-(r+1)-of-n``: every n-th
   base question, the seeds of each instance the unsharded run's (``eval merge`` checks that shards are of one run);
2. the ranks wait for each other (a gloo barrier; a rank whose shard failed makes every rank stop, with the
   failed rank's message printed once);
3. rank 0 runs ``eval merge STAGE/shard-*-of-n --out RUN`` (scored with the run's own settings, as the one-process
   run scores it); the other ranks end.

``RUN`` is ``--out`` when given, else the one-process run's folder ``RUNS/<model>/<run id>``; the shards stay in
``STAGE``: ``RUN.shards`` with ``--out``, else ``RUNS/<model>/ranks-<hash of the command>``, so a rerun of the same
launch finds them (and the call cache) again.

The commands are run through the CLI itself (``cli(args) -> exit code``, given by the caller), so this module
depends on the command's flags only, not on how the runner is built inside.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
from collections.abc import Callable, Sequence
from contextlib import redirect_stdout
from datetime import timedelta
from pathlib import Path

from phr.core.ranks import Ranks, ReplicaStop, agree, barrier, current

#: a rank that finished its shard waits at most this long for the others (generation of a big shard takes hours)
WAIT = timedelta(hours=48)


def launched(shard: str | None, dry_run: bool) -> bool:
    """Whether ``eval phrbench`` goes through ``over_ranks``: under a launcher of several ranks, without
    ``--shard`` of its own. A dry run is rank 0's alone (it plans the whole run): the other ranks end at once."""
    ranks = current()
    return ranks.several and shard is None and not (dry_run and ranks.main)


def join_group() -> None:
    """The process group of the launch (gloo: the ranks only wait for each other and share exit codes)."""
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group(backend="gloo", timeout=WAIT)


def stage_of(argv: Sequence[str], out: Path | None, runs: Path, model: str) -> Path:
    """Where the shards of this launch go (the same on every rank, and on a rerun of the same command)."""
    if out is not None:
        return Path(f"{out}.shards")
    from phr.eval.results import model_slug

    digest = hashlib.sha256(json.dumps(list(argv)).encode()).hexdigest()[:12]
    return runs / model_slug(model) / f"ranks-{digest}"


def shard_args(argv: Sequence[str], ranks: Ranks, stage: Path) -> list[str]:
    """The command line of rank ``ranks.rank``'s shard: the command as given, its shard and shard folder added."""
    i, n = ranks.rank + 1, ranks.world
    return [*argv, "--shard", f"{i}/{n}", "--out", str(stage / f"shard-{i}-of-{n}")]


def merge_args(
    argv: Sequence[str], stage: Path, n: int, final: Path, *, score: bool, plots: bool, hub: Path | None
) -> list[str]:
    """``eval merge`` of the shards into ``final``, with the command's global options (``--cache``, ...)."""
    head = list(argv[: list(argv).index("eval")]) if "eval" in argv else []
    shards = [str(stage / f"shard-{i}-of-{n}") for i in range(1, n + 1)]
    return [
        *head,
        "eval",
        "merge",
        *shards,
        "--out",
        str(final),
        *([] if score else ["--no-score"]),
        *([] if plots else ["--no-plots"]),
        *(["--hub", str(hub)] if hub is not None else []),
    ]


def final_run(stage: Path, n: int, out: Path | None, runs: Path, model: str) -> Path:
    """The merged run's folder: ``--out``, else the one-process run's ``RUNS/<model>/<run id>``."""
    if out is not None:
        return out
    from phr.eval.results import model_slug

    run_id = json.loads((stage / f"shard-1-of-{n}" / "run.json").read_text(encoding="utf-8"))["run_id"]
    return runs / model_slug(model) / run_id


def over_ranks(
    cli: Callable[[list[str]], int],
    *,
    out: Path | None,
    runs: Path,
    model: str,
    score: bool,
    plots: bool,
    hub: Path | None,
    dry_run: bool = False,
    argv: Sequence[str] | None = None,
) -> None:
    """Run this rank's shard, wait for every rank, and on rank 0 merge and score the run. ``cli(args)`` runs
    ``phr-publish ARGS`` in this process and returns its exit code; ``argv``: the command as given (default: this
    process's arguments, ``python -m phr.cli ARGS``)."""
    ranks = current()
    if dry_run:
        return  # rank 0 plans the whole run (``launched``)
    argv = list(sys.argv[1:] if argv is None else argv)
    join_group()
    stage = stage_of(argv, out, runs, model)
    shown = io.StringIO()
    with redirect_stdout(shown):  # the shard's own summary ("shard i/n done; ...") would mislead: the run is one
        code = cli(shard_args(argv, ranks, stage))
    if ranks.main:
        sys.stdout.write("".join(ln for ln in shown.getvalue().splitlines(True) if not ln.startswith("shard ")))
    if code >= 128:  # interrupted (SIGINT / SIGTERM reach every rank): rank 0 printed the rerun line
        raise ReplicaStop(code, wait=False)
    agree(ReplicaStop(code) if code else None)  # a failed shard stops every rank; its rank printed why
    barrier()
    if not ranks.main:
        return
    final = final_run(stage, ranks.world, out, runs, model)
    code = cli(merge_args(argv, stage, ranks.world, final, score=score, plots=plots, hub=hub))
    if code:
        raise ReplicaStop(code, wait=False)  # the merge printed why; the other ranks have ended

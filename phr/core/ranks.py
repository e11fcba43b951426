"""One command on several processes (ranks): ``accelerate launch`` / ``torchrun`` start the same command N times
with ``WORLD_SIZE`` / ``RANK`` / ``LOCAL_RANK`` in the environment (docs/scaling.md).

The rules the commands follow on ranks:

- rank 0 alone reports: it prints the summary, the ``error:`` line of a stop every rank takes, and the rerun line
  of an interrupted run; the other ranks log errors only (``quiet_replicas``) and exit with the same code
  (:class:`ReplicaStop`, printed as nothing);
- a decision that one rank makes (a failed reward batch, a stop on missing rewards) is shared with every rank
  through the process group (``torch.distributed``, gloo on CPU) before anyone acts, so all ranks stop together
  and none waits forever in a collective that the others left.

Nothing here imports torch until a collective is asked for; a process without ``WORLD_SIZE`` (or with 1) is rank 0
of 1 and every collective is a no-op.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from phr.core.errors import PHRError

T = TypeVar("T")


@dataclass(frozen=True)
class Ranks:
    """Where this process stands: ``rank`` of ``world`` (``local`` on its machine)."""

    rank: int = 0
    world: int = 1
    local: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def several(self) -> bool:
        return self.world > 1


def current() -> Ranks:
    """The ranks of this process from the launcher's environment (``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``)."""

    def env(name: str, default: int) -> int:
        try:
            return int(os.environ.get(name, default))
        except ValueError:
            return default

    return Ranks(rank=env("RANK", 0), world=max(1, env("WORLD_SIZE", 1)), local=env("LOCAL_RANK", 0))


def is_main() -> bool:
    """Rank 0 (or a process started without a launcher): the one that writes and reports."""
    return current().main


class ReplicaStop(PHRError):
    """A stop every rank takes and rank 0 reports: the other ranks exit with the same code, printing nothing.
    ``wait``: rank 0 stops too and meets the others in ``settle`` (False: rank 0 alone stops, the others ended)."""

    def __init__(self, exit_code: int = 1, *, wait: bool = True):
        super().__init__("")
        self.exit_code = exit_code
        self.wait = wait


def settle(error: BaseException) -> None:
    """The CLI boundary's last step for a stop that every rank takes (a :class:`ReplicaStop`, or an error with
    ``all_ranks`` true: rank 0's side of it): the ranks wait for each other, rank 0 after printing its message,
    the others before exiting silently. The launcher ends every rank once one exits with an error, so without
    this it could end rank 0 before it said why."""
    if isinstance(error, ReplicaStop) and not error.wait:
        return
    if isinstance(error, ReplicaStop) or getattr(error, "all_ranks", False):
        try:
            barrier()
            end_group()
        except Exception:  # noqa: BLE001  a rank that crashed instead: nothing left to wait for
            pass


@contextmanager
def decided_alike() -> Iterator[None]:
    """Around checks that read only what every rank reads alike (the recipe, its files, the environment), made
    before the process group exists: every rank reaches the same verdict, rank 0 prints it, and the other ranks
    turn their ``PHRError`` into a quiet :class:`ReplicaStop` with the same exit code. (The launcher ends every
    rank of the launch once one exits with an error, so a rank never waits for one that stopped here.)"""
    try:
        yield
    except PHRError as e:
        if current().main or isinstance(e, ReplicaStop):
            raise
        raise ReplicaStop(e.exit_code) from None


def quiet_replicas() -> None:
    """On ranks other than 0: the toolkit's log shows errors only (rank 0 says what every rank would say)."""
    if not is_main():
        logging.getLogger("phr").setLevel(logging.ERROR)


#: a rank that finished its share of a launch's work waits at most this long for the others (a big shard: hours)
WAIT_FOR_RANKS = timedelta(hours=48)


@contextmanager
def process_group() -> Iterator[None]:
    """The launch's process group around a block (gloo: the ranks wait for each other and exchange small objects;
    the models are not distributed), started unless it is up, and ended after the block when started here: a
    rank that exits with the group alive can abort in gloo's threads ("terminate called without an active
    exception") while another rank still works. A no-op on one process."""
    if not current().several:
        yield
        return
    import torch.distributed as dist

    started = not dist.is_initialized()
    if started:
        dist.init_process_group(backend="gloo", timeout=WAIT_FOR_RANKS)
    yield  # a stop every rank takes keeps the group: the CLI's settle() waits in it, then ends it
    if started:
        end_group()


def end_group() -> None:
    """End the launch's process group on this rank (a no-op when there is none)."""
    if _group_ready():
        import torch.distributed as dist

        dist.destroy_process_group()


def _group_ready() -> bool:
    if not current().several:
        return False
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def barrier() -> None:
    """Wait until every rank got here (no-op on one process or before the process group exists)."""
    if _group_ready():
        import torch.distributed as dist

        dist.barrier()


def share(obj: T, *, src: int = 0) -> T:
    """``obj`` of rank ``src``, on every rank (a broadcast; any picklable value)."""
    if not _group_ready():
        return obj
    import torch.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def gather(obj: Any) -> list[Any]:
    """Every rank's ``obj``, in rank order, on every rank."""
    if not _group_ready():
        return [obj]
    import torch.distributed as dist

    out: list = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def agree(error: BaseException | None) -> None:
    """A collective stop point: every rank calls it at the same place with its own error (or None). When any rank
    has one, every rank raises: the lowest rank that failed re-raises its error (its message is the one printed),
    every other rank raises :class:`ReplicaStop` with that error's exit code. With no error anywhere it returns."""
    codes = gather(None if error is None else getattr(error, "exit_code", 1))
    failed = [r for r, c in enumerate(codes) if c is not None]
    if not failed:
        return
    if error is not None and current().rank == failed[0]:
        try:
            error.all_ranks = True  # type: ignore[attr-defined]  # every rank stops: settle() meets the others
        except AttributeError:
            pass
        raise error
    raise ReplicaStop(codes[failed[0]]) from None

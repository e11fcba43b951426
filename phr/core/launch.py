"""The launch a process belongs to: ``torchrun`` / ``accelerate launch`` started N ranks of one command
(docs/scaling.md). A plan states it (processes, the global batch), the rerun line repeats it, and run.json and the
training manifest record it.

The launcher's own command line is read from the process that started this rank (``/proc/<parent>/cmdline``: the
launcher, whose command ends with this rank's arguments). The rerun is that launcher with its options, then
``-m phr.cli`` and the command's arguments, so a run started from a script under the launcher gets the command
that repeats it too. Where the launcher's command cannot be read (another OS, a launcher that rewrites the
arguments) the rerun names ``torchrun --nproc_per_node N`` and says so.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from phr.core.ranks import current

#: launchers known by their entry point: ``python -m MODULE`` or the console script ``NAME``
_LAUNCHERS = {
    "torch.distributed.run": ["torchrun"],
    "torchrun": ["torchrun"],
    "accelerate.commands.launch": ["accelerate", "launch"],
}


@dataclass(frozen=True)
class Launch:
    """A launch of ``processes`` ranks by ``launcher`` (its words and options, e.g. ``torchrun --nproc_per_node
    2``); ``known``: read from the launcher's own command line (else a stand-in of the same size)."""

    processes: int
    launcher: tuple[str, ...]
    known: bool = True

    def command(self, args: Sequence[str]) -> str:
        """The launch of ``phr-publish ARGS`` with this launcher and its options (secrets redacted)."""
        from phr.core.secrets import redact

        line = redact(shlex.join([*self.launcher, "-m", "phr.cli", *args]))
        return line if self.known else line + "  (or the launcher and config you started it with)"

    def describe(self) -> str:
        """``2 processes (torchrun --nproc_per_node 2 ...)``."""
        return f"{self.processes} processes ({shlex.join(self.launcher)})"

    def record(self, args: Sequence[str]) -> dict:
        """What run.json and the training manifest keep of the launch."""
        return {"processes": self.processes, "launcher": self.launcher[0], "command": self.command(args)}


def current_launch() -> Launch | None:
    """This process's launch, None when it runs alone (no launcher, or a launch of one rank)."""
    ranks = current()
    if not ranks.several:
        return None
    found = _launcher_words(sys.argv[1:])
    if found is None:
        return Launch(ranks.world, ("torchrun", "--nproc_per_node", str(ranks.world)), known=False)
    return Launch(ranks.world, tuple(found))


def _launcher_words(args: list[str]) -> list[str] | None:
    """The launcher's words and options from the nearest ancestor whose command line ends with ``args`` and
    starts with a known launcher; None when there is none (or ``/proc`` cannot be read)."""
    pid = os.getppid()
    for _ in range(3):  # the launcher, or a shell / wrapper between it and this rank
        cmdline = _cmdline(pid)
        if cmdline is None:
            return None
        words = _launcher_of(cmdline, args)
        if words is not None:
            return words
        pid = _parent_of(pid)
        if pid <= 1:
            return None
    return None


def _launcher_of(cmdline: list[str], args: list[str]) -> list[str] | None:
    """``[launcher words, *its options]`` when ``cmdline`` is a known launcher's, ending with ``args``."""
    if len(cmdline) < len(args) + 2 or (args and cmdline[-len(args) :] != args):
        return None
    head = cmdline[: len(cmdline) - len(args)] if args else cmdline
    if Path(head[0]).name.startswith("python"):
        head = head[1:]
        if head[:1] == ["-m"]:
            head = head[1:]
    if not head:
        return None
    name = head[0] if head[0] in _LAUNCHERS else Path(head[0]).name
    if name == "accelerate" and head[1:2] == ["launch"]:
        name, head = "accelerate.commands.launch", head[1:]
    if name not in _LAUNCHERS:
        return None
    options = [o for o in head[1:] if o not in ("--no-python", "--no_python")]  # the rerun runs `-m phr.cli`
    target = 2 if len(options) >= 2 and options[-2] == "-m" else 1  # `-m phr.cli` or a script
    return [*_LAUNCHERS[name], *options[: len(options) - target]]


def _cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [w.decode(errors="replace") for w in raw.split(b"\0")[:-1]] or None


def _parent_of(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])

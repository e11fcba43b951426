"""SIGINT (Ctrl-C) and SIGTERM: stop the work, say how to resume.

``install()`` (the ``phr-publish`` entry point calls it) makes both signals raise :class:`Interrupted` in the main
thread and set a stop flag that work in other threads checks: local-model generation stops within one token
(``phr.llm.providers.hf_local``) and raises ``Interrupted`` instead of returning cut answers, so nothing partial is
cached. The CLI's error boundary prints ``interrupted; rerun to resume: COMMAND`` and exits 128 + the signal
number (130 for SIGINT, 143 for SIGTERM).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

_stop = threading.Event()
_signum = [int(signal.SIGINT)]


class Interrupted(KeyboardInterrupt):
    """The process was asked to stop by a signal (``signum``); ``exit_code`` is 128 + its number."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def request_stop(signum: int = signal.SIGINT) -> None:
    """Ask the work to stop as signal ``signum`` does (the flag only; the signal handler also raises)."""
    _signum[0] = int(signum)
    _stop.set()


def clear() -> None:
    """Forget a stop request (a process that goes on after handling one: tests)."""
    _stop.clear()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    request_stop(signum)
    raise Interrupted(signum)


def install() -> None:
    """Handle SIGINT and SIGTERM as above (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, _on_signal)


def stop_requested() -> bool:
    """Whether a signal asked the process to stop (work in threads checks it between steps)."""
    return _stop.is_set()


def check() -> None:
    """Raise :class:`Interrupted` when a signal asked the process to stop."""
    if _stop.is_set():
        raise Interrupted(_signum[0])


def exit_code_of(exc: KeyboardInterrupt) -> int:
    """130 for Ctrl-C (a plain ``KeyboardInterrupt``), 128 + the signal number for an ``Interrupted``."""
    return exc.exit_code if isinstance(exc, Interrupted) else 128 + int(signal.SIGINT)


def announces() -> bool:
    """Whether this process says that it was interrupted: yes, unless it is a rank other than 0 of a launch
    (``accelerate launch`` / ``torchrun`` send the signal to every rank; rank 0 prints the rerun line once)."""
    from phr.core.ranks import is_main

    return is_main()


def resume_with(exc: KeyboardInterrupt, *flags: str) -> None:
    """Note on an interruption the flags that its rerun needs beyond the command as typed (``train``'s
    ``--resume`` once its run folder holds a checkpoint: without it the rerun is refused)."""
    exc.rerun_flags = tuple(flags)  # type: ignore[attr-defined]


def rerun_args(argv: list[str], exc: BaseException) -> list[str]:
    """``argv`` plus the flags :func:`resume_with` noted on ``exc`` that it does not hold yet."""
    return [*argv, *(f for f in getattr(exc, "rerun_flags", ()) if f not in argv)]


def rerun_line(argv: list[str]) -> str:
    """The command that resumes the work (secrets redacted); under a launcher of N ranks, the same launch
    (``torchrun --nproc_per_node 2 -m phr.cli ARGS``: phr.core.launch)."""
    import shlex

    from phr.core.launch import current_launch
    from phr.core.secrets import redact

    launch = current_launch()
    return launch.command(argv) if launch is not None else redact(shlex.join(["phr-publish", *argv]))

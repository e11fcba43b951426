"""Progress of long steps, and the line that says which model is loading and why.

``progress_bar(enabled)`` is a live rich bar on a terminal (stderr). Where stderr is not a terminal (a log file,
a pipe, CI) it prints no bar but one plain line per task at most every ``PHR_PROGRESS_EVERY`` seconds (default
10) while the count moves, and one when a task that took longer ends (a short one prints nothing)::

    [progress] generating: 37/120 (31%), 1m02s elapsed, about 2m07s left

"elapsed" counts from the step's start (its ``add_task``). The estimate of the time left comes from the step's own
rate after a warm-up: measured from the first time the count moved (a model load, a cache lookup or a first batch
before it does not count), and only once the count has moved for ``every`` seconds and by ``WARMUP_SHARE`` of the
work left at that first move; before that a line has no estimate. ``progress_bar()``'s log form also says a step
is still running when its count has not moved for ``every`` seconds (a slow first batch): the same line again, with
the elapsed time.

Both answer the same calls (``add_task``, ``advance``, ``update``, used as a context manager), so a step writes
its progress once. ``loading(what, why)`` prints ``loading local:smollm2 (SmolLM2-135M-Instruct) as the
reference scorer ...`` to stderr before a model loads (a terminal and a log alike: it is one line).
``still_working(what)`` covers a step with no count (a model conversion, a load): a line every ``every`` seconds
in a log while it runs. ``quiet_third_party_bars()`` turns tqdm's bars (transformers, datasets, huggingface_hub,
the trainers) off where stderr is not a terminal: in a log they are ``\r``-joined lines; the ``[progress]``
lines say the same.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

EVERY_ENV = "PHR_PROGRESS_EVERY"
DEFAULT_EVERY_S = 10.0
WARMUP_SHARE = 0.05  # of a step's work done (after its first move) before its rate gives an estimate


def _every() -> float:
    try:
        return max(0.0, float(os.environ.get(EVERY_ENV, DEFAULT_EVERY_S)))
    except ValueError:
        return DEFAULT_EVERY_S


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _count(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}"


@dataclass
class _Task:
    description: str
    total: float | None
    completed: float
    start: float = field(default_factory=time.monotonic)
    printed_at: float = field(default_factory=time.monotonic)
    printed: float = -1.0  # the count last printed
    start_count: float = 0.0  # cached/skipped work at the start does not count towards the rate
    ended: float | None = None  # when the count reached the total
    moved_at: float | None = None  # when the count first moved: the rate is measured from here (the warm-up)
    moved_from: float = 0.0  # the count just after that first move


class LineProgress:
    """The log form of a progress bar: one line per task at most every ``every`` seconds, and one at the end."""

    def __init__(self, stream=None, every: float | None = None, clock=time.monotonic, beat: bool = False):
        self.stream = stream
        self.every = _every() if every is None else every
        self.clock = clock
        self.tasks: dict[int, _Task] = {}
        self._lock = threading.RLock()  # updates come from worker threads, beats from the heartbeat thread
        self._beat = beat
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LineProgress:
        if self._beat:  # ``beat()`` every ``every`` seconds while the display is open
            self._thread = threading.Thread(target=self._beats, daemon=True, name="phr-progress")
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        for tid in list(self.tasks):
            self._emit(tid, final=True)

    def _beats(self) -> None:
        while not self._stop.wait(max(self.every, 0.1)):
            self.beat()

    def beat(self) -> None:
        """A line for each running task whose last line (or start) is ``every`` seconds old, moved or not: a step
        waiting on a slow first batch still says it runs."""
        with self._lock:
            now = self.clock()
            for tid, t in list(self.tasks.items()):
                if t.ended is None and now - t.printed_at >= self.every:
                    self._emit(tid, force=True)

    def add_task(self, description: str, total: float | None = None, completed: float = 0, **_) -> int:
        tid = len(self.tasks)
        now = self.clock()
        self.tasks[tid] = _Task(description, total, completed, start=now, printed_at=now, start_count=completed)
        return tid

    def advance(self, task_id: int, advance: float = 1) -> None:
        self.update(task_id, advance=advance)

    def update(
        self,
        task_id: int,
        *,
        total: float | None = None,
        completed: float | None = None,
        advance: float | None = None,
        description: str | None = None,
        **_,
    ) -> None:
        with self._lock:
            self._update(self.tasks[task_id], task_id, total, completed, advance, description)

    def _update(self, t: _Task, task_id: int, total, completed, advance, description) -> None:
        if total is not None:
            t.total = total
        if completed is not None:
            t.completed = completed
        if advance is not None:
            t.completed += advance
        if description is not None:
            t.description = description
        if t.moved_at is None and t.completed != t.start_count:
            t.moved_at, t.moved_from = self.clock(), t.completed
        if t.ended is None and t.total and t.completed >= t.total:
            t.ended = self.clock()
        if self.clock() - t.printed_at >= self.every:
            self._emit(task_id)

    def line(self, task_id: int) -> str:
        """The task's progress as one line (what is printed)."""
        t = self.tasks[task_id]
        elapsed = (t.ended if t.ended is not None else self.clock()) - t.start
        parts = [f"{t.description}: {_count(t.completed)}"]
        if t.total:
            parts[0] += f"/{_count(t.total)} ({t.completed / t.total:.0%})"
        parts.append(f"{_clock(elapsed)} elapsed")
        left = self.time_left(t)
        if left is not None:
            parts.append(f"about {_clock(left)} left")
        return "[progress] " + ", ".join(parts)

    def time_left(self, t: _Task) -> float | None:
        """Seconds left at the rate since the count first moved, once it has moved for ``every`` seconds (the
        warm-up); None before that, when nothing moved since, and when the task has no total or is done."""
        if not t.total or t.moved_at is None or t.completed >= t.total:
            return None
        working = self.clock() - t.moved_at
        done = t.completed - t.moved_from
        if working < max(self.every, 1e-9) or done <= 0 or done < WARMUP_SHARE * (t.total - t.moved_from):
            return None
        return working / done * (t.total - t.completed)

    def _emit(self, task_id: int, final: bool = False, force: bool = False) -> None:
        t = self.tasks[task_id]
        if t.completed == t.printed and not final and not force:
            return  # nothing moved: no line (``beat`` forces one)
        took = (t.ended if t.ended is not None else self.clock()) - t.start
        if final and (t.printed == t.completed or (t.printed < 0 and took < self.every)):
            return  # a short step says nothing in a log
        t.printed, t.printed_at = t.completed, self.clock()
        stream = self.stream or sys.stderr
        print(self.line(task_id), file=stream, flush=True)


class _Off:
    """No output at all (``progress=False``)."""

    def __enter__(self) -> _Off:
        return self

    def __exit__(self, *exc) -> None:
        pass

    def add_task(self, *a, **k) -> int:
        return 0

    def advance(self, *a, **k) -> None:
        pass

    def update(self, *a, **k) -> None:
        pass


def is_terminal() -> bool:
    """Whether stderr (where bars go) is a terminal."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress_bar(enabled: bool = True, *, stream=None):
    """A progress display: a live rich bar on a terminal, periodic plain lines otherwise, nothing when disabled."""
    if not enabled:
        return _Off()
    if stream is None and is_terminal():
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        return Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
    return LineProgress(stream, beat=True)


def loading(what: str, why: str | None = None, *, stream=None) -> str:
    """Print (stderr) and return the line naming the model that loads now and why (``why``: "as the scorer")."""
    line = f"loading {what}{' ' + why if why else ''} ..."
    print(line, file=stream or sys.stderr, flush=True)
    return line


class Heartbeat:
    """The log form of a step with no count: ``tick()`` prints ``[progress] WHAT: 20s elapsed`` once ``every``
    seconds have passed since the step started or since the last line; ``run(wait)`` ticks until ``wait(every)``
    returns True (the step's end). The clock and the wait are injectable, so a test drives it without sleeping."""

    def __init__(self, description: str, stream=None, every: float | None = None, clock=time.monotonic):
        self.description = description
        self.stream = stream
        self.every = _every() if every is None else every
        self.clock = clock
        self.start = self.printed_at = clock()

    def tick(self) -> str | None:
        now = self.clock()
        if now - self.printed_at < self.every:
            return None
        self.printed_at = now
        line = f"[progress] {self.description}: {_clock(now - self.start)} elapsed"
        print(line, file=self.stream or sys.stderr, flush=True)
        return line

    def run(self, wait: Callable[[float], bool]) -> None:
        while not wait(max(self.every, 0.1)):
            self.tick()


@contextlib.contextmanager
def still_working(description: str, *, stream=None) -> Iterator[None]:
    """Around a step with no count (converting a model, loading one): a spinner on a terminal; in a log a line
    every ``PHR_PROGRESS_EVERY`` seconds (from a daemon thread) while the step runs, none for a short one."""
    stop = start_heartbeat(description, stream=stream)
    try:
        yield
    finally:
        stop()


def start_heartbeat(description: str, *, stream=None) -> Callable[[], None]:
    """``still_working`` for code that cannot wrap the step in a ``with``: starts it and returns its stop
    (idempotent; a CLI command also registers it with ``ctx.call_on_close`` for the error paths)."""
    if stream is None and is_terminal():
        from rich.console import Console

        status = Console(stderr=True).status(description)
        status.start()
        return status.stop
    beat, done = Heartbeat(description, stream), threading.Event()
    thread = threading.Thread(target=beat.run, args=(done.wait,), daemon=True, name="phr-heartbeat")
    thread.start()

    def stop() -> None:
        done.set()
        if thread is not threading.current_thread():
            thread.join()

    return stop


BAR_ENV = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}


def quiet_third_party_bars(terminal: bool | None = None) -> bool:
    """Where stderr is not a terminal (``terminal``: the answer, for tests), turn off tqdm's bars, the ones of
    transformers, datasets, huggingface_hub and the trainers included: in a log each redraw is a ``\\r``-joined
    line. The variables are read when those libraries are imported (tqdm's defaults when tqdm is), so this runs
    before (the CLI calls it first); a user's own setting of them wins. Returns whether it turned them off."""
    if is_terminal() if terminal is None else terminal:
        return False
    for name, value in BAR_ENV.items():
        os.environ.setdefault(name, value)
    # already imported (a library user's process; None: made unimportable): tell them directly
    if sys.modules.get("datasets") is not None:
        sys.modules["datasets"].disable_progress_bars()
    if sys.modules.get("huggingface_hub") is not None:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if sys.modules.get("transformers") is not None:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    return True

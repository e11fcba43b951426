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
in a log while it runs.

A count is whole units of the step's work: a batch's partial share (7.5 samples done) moves the rate and the
estimate, and the line says 7. Displays open at once (a push that embeds texts, a model load within a step) share
one voice (``_Voice``): one periodic line per ``every`` seconds in all, from the innermost step still running;
the steps around it wait until it ends. Each progress or loading line restarts the interval.
``command_heartbeat(what)`` is the command's own display, the outermost: from the process's start to the
command's end it speaks whenever no step did for ``every`` seconds (imports, the gaps between steps, writing).
``quiet_third_party_bars()`` turns tqdm's bars (transformers, datasets, huggingface_hub,
the trainers) off where stderr is not a terminal: in a log they are ``\r``-joined lines; the ``[progress]``
lines say the same.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Protocol

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


def _whole(x: float) -> int:
    """The whole units in a count (7.5 samples done: 7); the tolerance keeps ten tenths one unit."""
    return math.floor(x + 1e-9)


class _Voice:
    """The process's one voice for ``[progress]`` lines in a log. Displays (``LineProgress``, ``Heartbeat``)
    register while open, in the order they nest. ``say`` prints a line and restarts every open display's interval
    (``heard``): nested steps give one periodic line per interval, not one each. When a display's interval is up,
    the ``speaker`` says the line: the innermost display still running (the step inside speaks for the steps
    around it, which speak again once it ended)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.open: list[LineProgress | Heartbeat] = []

    def enter(self, display: LineProgress | Heartbeat) -> None:
        with self.lock:
            self.open.append(display)

    def leave(self, display: LineProgress | Heartbeat) -> None:
        with self.lock:
            self.open = [d for d in self.open if d is not display]

    def speaker(self, display: LineProgress | Heartbeat) -> LineProgress | Heartbeat:
        """The display that speaks for ``display``: the innermost one opened inside it that still runs, else
        ``display`` itself (also when it is not registered)."""
        with self.lock:
            at = next((i for i, d in enumerate(self.open) if d is display), None)
            inner = [] if at is None else [d for d in self.open[at + 1 :] if d.running()]
            return inner[-1] if inner else display

    def say(self, line: str, stream: IO[str] | None = None) -> None:
        with self.lock:
            print(line, file=stream or sys.stderr, flush=True)
            for display in self.open:
                display.heard()


_VOICE = _Voice()


@dataclass
class _Task:
    description: str
    total: float | None
    completed: float
    start: float = field(default_factory=time.monotonic)
    printed_at: float = field(default_factory=time.monotonic)
    printed: int = -1  # the whole count last printed
    start_count: float = 0.0  # cached/skipped work at the start does not count towards the rate
    ended: float | None = None  # when the count reached the total
    moved_at: float | None = None  # when the count first moved: the rate is measured from here (the warm-up)
    moved_from: float = 0.0  # the count just after that first move


class LineProgress:
    """The log form of a progress bar: a line at most every ``every`` seconds (one task speaks: the newest running
    one, and only on the process's turn, ``_Voice``), and one at the end of each task that took that long."""

    def __init__(
        self,
        stream: IO[str] | None = None,
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        beat: bool = False,
    ) -> None:
        self.stream = stream
        self.every = _every() if every is None else every
        self.clock = clock
        self.tasks: dict[int, _Task] = {}
        self._lock = _VOICE.lock  # updates come from worker threads, beats from the threads: one lock for all
        self._beat = beat
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LineProgress:
        _VOICE.enter(self)
        if self._beat:  # ``beat()`` every ``every`` seconds while the display is open
            self._thread = threading.Thread(target=self._beats, daemon=True, name="phr-progress")
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        for tid in list(self.tasks):
            self._emit(tid, final=True)
        _VOICE.leave(self)

    def running(self) -> bool:
        """Whether a task of this display is still running (the displays around it wait for their turn)."""
        return any(t.ended is None for t in list(self.tasks.values()))

    def heard(self) -> None:
        """A line was printed (by any display): every task's interval starts again."""
        now = self.clock()
        for t in list(self.tasks.values()):
            t.printed_at = now

    def _due_in(self) -> float:
        """Seconds until a running task's interval is up (``every`` when none runs)."""
        now = self.clock()
        running = [t.printed_at + self.every - now for t in list(self.tasks.values()) if t.ended is None]
        return min(running, default=self.every)

    def _beats(self) -> None:
        while not self._stop.wait(max(self._due_in(), 0.1)):
            self.beat()

    def beat(self) -> None:
        """Once a running task's interval is up (its last line, or its start, is ``every`` seconds old), a line,
        moved or not: a step waiting on a slow first batch still says it runs. The line is the speaker's
        (``_Voice``): a step opened inside this display's speaks for it."""
        with self._lock:  # decided and said at once: two displays whose interval is up print one line
            if self._due_in() <= 0:
                _VOICE.speaker(self).speak()

    def speak(self) -> None:
        """A line now for the newest running task (a step that nests in another was opened last)."""
        with self._lock:
            running = [tid for tid, t in self.tasks.items() if t.ended is None]
            if running:
                self._emit(running[-1], force=True)

    def add_task(self, description: str, total: float | None = None, completed: float = 0, **_: object) -> int:
        tid = len(self.tasks)
        now = self.clock()
        self.tasks[tid] = t = _Task(description, total, completed, start=now, printed_at=now, start_count=completed)
        if total and completed >= total:  # every unit cached: nothing runs
            t.ended = now
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
        **_: object,
    ) -> None:
        with self._lock:
            self._update(self.tasks[task_id], task_id, total, completed, advance, description)

    def _update(
        self,
        t: _Task,
        task_id: int,
        total: float | None,
        completed: float | None,
        advance: float | None,
        description: str | None,
    ) -> None:
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
        done = _whole(t.completed)
        parts = [f"{t.description}: {done}"]
        if t.total:
            parts[0] += f"/{_whole(t.total)} ({done * 100 // t.total:.0f}%)"
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
        done = _whole(t.completed)
        if not final and (done == t.printed and not force or _VOICE.speaker(self) is not self):
            return  # no whole unit more (``beat`` forces a line), or a step inside this one speaks
        took = (t.ended if t.ended is not None else self.clock()) - t.start
        if final and (t.printed == done or (t.printed < 0 and took < self.every)):
            return  # a short step says nothing in a log
        t.printed = done
        _VOICE.say(self.line(task_id), self.stream)
        self.heard()  # also when this display is not registered (used without ``with``)


class _Off:
    """No output at all (``progress=False``)."""

    def __enter__(self) -> _Off:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def add_task(self, *a: object, **k: object) -> int:
        return 0

    def advance(self, *a: object, **k: object) -> None:
        pass

    def update(self, *a: object, **k: object) -> None:
        pass


class ProgressDisplay(Protocol):
    """What ``progress_bar`` gives: rich's ``Progress``, a ``LineProgress`` or the silent ``_Off``. A task's id is
    what ``add_task`` returned (rich's ``TaskID`` or an int)."""

    def __enter__(self) -> ProgressDisplay: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None, /
    ) -> None: ...

    def add_task(self, description: str, /, *, total: float | None = ..., completed: int = ...) -> Any: ...

    def advance(self, task_id: Any, /, advance: float = ...) -> None: ...

    def update(
        self,
        task_id: Any,
        /,
        *,
        total: float | None = ...,
        completed: float | None = ...,
        advance: float | None = ...,
        description: str | None = ...,
    ) -> None: ...


def is_terminal() -> bool:
    """Whether stderr (where bars go) is a terminal."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress_bar(enabled: bool = True, *, stream: IO[str] | None = None) -> ProgressDisplay:
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


def loading(what: str, why: str | None = None, *, stream: IO[str] | None = None) -> str:
    """Print (stderr) and return the line naming the model that loads now and why (``why``: "as the scorer").
    Under a launcher rank 0 alone prints it (every rank loads its copy)."""
    from phr.core.ranks import is_main

    line = f"loading {what}{' ' + why if why else ''} ..."
    if stream is not None or is_main():
        _VOICE.say(line, stream)
    return line


class Heartbeat:
    """The log form of a step with no count: ``tick()`` prints ``[progress] WHAT: 20s elapsed`` once ``every``
    seconds have passed since the step started or since the last line of any display (``_Voice``: a step inside
    it that still runs says its own line instead); ``run(wait)`` ticks until ``wait(seconds)`` returns True (the
    step's end). Used as a context manager it is registered with the voice. The clock and the wait are injectable,
    so a test drives it without sleeping."""

    def __init__(
        self,
        description: str,
        stream: IO[str] | None = None,
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        start: float | None = None,
    ) -> None:
        self.description = description
        self.stream = stream
        self.every = _every() if every is None else every
        self.clock = clock
        self.start = self.printed_at = clock() if start is None else start  # ``start``: an earlier start

    def __enter__(self) -> Heartbeat:
        _VOICE.enter(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _VOICE.leave(self)

    def running(self) -> bool:
        return True  # while registered: from its start to its stop

    def heard(self) -> None:
        self.printed_at = self.clock()

    def tick(self) -> str | None:
        """This step's line once the interval is up (None when it is not, or when a step inside speaks)."""
        with _VOICE.lock:
            if self.clock() - self.printed_at < self.every:
                return None
            speaker = _VOICE.speaker(self)
            if speaker is not self:
                speaker.speak()
                return None
            return self.speak()

    def speak(self) -> str:
        now = self.clock()
        line = f"[progress] {self.description}: {_clock(now - self.start)} elapsed"
        _VOICE.say(line, self.stream)
        self.printed_at = now
        return line

    def run(self, wait: Callable[[float], bool]) -> None:
        while not wait(max(self.every - (self.clock() - self.printed_at), 0.1)):
            self.tick()


@contextlib.contextmanager
def still_working(description: str, *, stream: IO[str] | None = None) -> Iterator[None]:
    """Around a step with no count (converting a model, loading one): a spinner on a terminal; in a log a line
    every ``PHR_PROGRESS_EVERY`` seconds (from a daemon thread) while the step runs, none for a short one."""
    stop = start_heartbeat(description, stream=stream)
    try:
        yield
    finally:
        stop()


def start_heartbeat(description: str, *, stream: IO[str] | None = None) -> Callable[[], None]:
    """``still_working`` for code that cannot wrap the step in a ``with``: starts it and returns its stop
    (idempotent; a CLI command also registers it with ``ctx.call_on_close`` for the error paths). Under a
    launcher, rank 0 alone shows it (every rank does the same step)."""
    from phr.core.ranks import is_main

    if stream is None and not is_main():
        return lambda: None
    if stream is None and is_terminal():
        from rich.console import Console

        status = Console(stderr=True).status(description)
        status.start()
        return status.stop
    return _on_a_thread(Heartbeat(description, stream))


def _on_a_thread(beat: Heartbeat, stopped: Callable[[], bool] = lambda: False) -> Callable[[], None]:
    """Run ``beat``, registered with the voice, on a daemon thread until the returned stop (idempotent) is called
    or ``stopped()`` says so."""
    beat.__enter__()
    done = threading.Event()
    thread = threading.Thread(
        target=beat.run, args=(lambda s: done.wait(s) or stopped(),), daemon=True, name="phr-heartbeat"
    )
    thread.start()

    def stop() -> None:
        done.set()
        if thread is not threading.current_thread():
            thread.join()
        beat.__exit__()

    return stop


def command_heartbeat(description: str) -> Callable[[], None]:
    """For a whole command (``phr-publish``'s ``main``): in a log, a line whenever nothing was printed for
    ``every`` seconds, counted from the process's start, so no stretch is silent (libraries importing before the
    first line, the gaps between steps, writing the results). It is the outermost display: a step inside that runs
    speaks for it. It ends at ``stop()`` (the command's end) or once a signal asked to stop (the rerun line is the
    last). On a terminal nothing (the steps' bars and spinners show)."""
    if is_terminal():
        return lambda: None
    from phr.core.interrupt import stop_requested

    return _on_a_thread(Heartbeat(description, start=process_start()), stop_requested)


def process_start() -> float:
    """When this process started, on ``time.monotonic``'s clock (Linux's ``/proc``; elsewhere: now)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])  # field 22: starttime
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return time.monotonic()
    return time.monotonic() - max(0.0, age)


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

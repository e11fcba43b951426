"""Run a coroutine to completion from synchronous code, also when an event loop is already running."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``; inside a running loop (a notebook, an async test) it runs in a fresh thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["out"] = asyncio.run(coro)
        except BaseException as e:  # re-raised in the caller's thread
            box["err"] = e

    t = threading.Thread(target=target, name="phr-run-sync")
    t.start()
    t.join()
    if "err" in box:
        raise box["err"]
    return box["out"]


def blocking(afunc: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """The blocking form of the coroutine function ``afunc``: the same parameters, run by :func:`run_sync`."""

    @functools.wraps(afunc)
    def call(*args: P.args, **kwargs: P.kwargs) -> T:
        return run_sync(afunc(*args, **kwargs))

    return call

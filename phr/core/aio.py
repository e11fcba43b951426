"""Run a coroutine to completion from synchronous code, also when an event loop is already running."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


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

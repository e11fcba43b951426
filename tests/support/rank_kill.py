"""A launch of several ranks that kills itself, all of it, once ``checkpoint-N`` is complete (tests only).

    torchrun --nproc_per_node 2 -m tests.support.rank_kill N train grpo ...   (the rest: phr-publish's arguments)

Rank 0, right after it wrote the manifest, curves and card of ``checkpoint-N`` (``ArtifactsCallback``), SIGKILLs
the launcher (its parent, torchrun's agent), every other rank and itself: no process runs a handler or a
``finally``, as when a machine loses power. Deterministic: the kill is made at a point of the run, never by timing.
"""

from __future__ import annotations

import os
import signal
import sys

import psutil

import phr.training.checkpoint as checkpoint_module


def kill_the_launch() -> None:
    """SIGKILL the launcher, then the other ranks, then this process."""
    me = os.getpid()
    launcher = psutil.Process(os.getppid())
    ranks = [p for p in launcher.children(recursive=True) if p.pid != me]
    for p in (launcher, *ranks):
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    os.kill(me, signal.SIGKILL)


def arm(step: int) -> None:
    original = checkpoint_module.ArtifactsCallback.on_save

    def on_save(self, args, state, control, **kwargs):
        out = original(self, args, state, control, **kwargs)
        if state.is_world_process_zero and state.global_step == step:
            kill_the_launch()
        return out

    checkpoint_module.ArtifactsCallback.on_save = on_save


if __name__ == "__main__":
    arm(int(sys.argv[1]))
    sys.argv = ["phr-publish", *sys.argv[2:]]
    from phr.cli import main

    main()

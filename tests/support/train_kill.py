"""A training run that SIGKILLs itself in the middle of saving a checkpoint (tests only).

    python -m tests.support.train_kill METHOD RECIPE_OVERRIDES_JSON MOMENT STEP

``METHOD``: ``sft`` (recipe ``tiny-sft``) or ``grpo`` (``tiny-stage1`` with the deterministic length reward).
The process kills itself (SIGKILL: no cleanup, no ``finally``) while it saves ``checkpoint-STEP``, at ``MOMENT``:

- ``weights``: the model weights are written, the optimizer, scheduler, RNG states and trainer state are not;
- ``state``: everything but ``trainer_state.json``, of which half is written;
- ``card``: TRL's save is complete, our manifest / curves / card (``ArtifactsCallback``) are not written.

Deterministic: the kill is made by the save itself, never by timing.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable

from transformers import Trainer, TrainerState

import phr.training.checkpoint as checkpoint_module
from phr.training.config import load_recipe


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _die_in(owner: object, name: str, when: Callable[..., bool]) -> None:
    """Patch ``owner.name`` (a method or a module's function) to kill the process, before it does anything, on
    a call whose arguments ``when`` accepts."""
    original = getattr(owner, name)

    def patched(*args):
        if when(*args):
            _die()
        return original(*args)

    setattr(owner, name, patched)


def arm(moment: str, step: int) -> None:
    """Patch the save so that it kills the process at ``moment`` of saving ``checkpoint-{step}``."""
    if moment == "weights":
        _die_in(Trainer, "_save_optimizer_and_scheduler", lambda self, output_dir: self.state.global_step == step)
    elif moment == "state":
        original_json = TrainerState.save_to_json

        def save_to_json(self, json_path):
            if self.global_step == step:
                text = json.dumps(self.__dict__, indent=2, sort_keys=True, default=str)
                with open(json_path, "w", encoding="utf-8") as f:
                    f.write(text[: len(text) // 2])
                _die()
            return original_json(self, json_path)

        TrainerState.save_to_json = save_to_json
    elif moment == "card":
        _die_in(checkpoint_module, "write_curves", lambda folder, log_history: folder.name == f"checkpoint-{step}")
    else:
        raise SystemExit(f"unknown moment {moment!r}")


def main(argv: list[str]) -> None:
    method, overrides, moment, step = argv
    arm(moment, int(step))
    if method == "sft":
        from phr.training.sft import train_sft

        train_sft(load_recipe("tiny-sft", **json.loads(overrides)))
    else:
        from phr.training.grpo import train_grpo

        train_grpo(load_recipe("tiny-stage1", **json.loads(overrides)))
    raise SystemExit("the run finished without being killed")


if __name__ == "__main__":
    main(sys.argv[1:])

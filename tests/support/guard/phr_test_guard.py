"""The fast tier's guard: note every language model built and every trainer made while ``$PHR_TEST_MODEL_GUARD``
names a file (the conftest sets it for tests not marked ``slow`` and fails the test that wrote to it).

Installed in the pytest process by tests/conftest.py and in every Python subprocess of a fast test through this
folder's ``sitecustomize.py`` (the conftest puts the folder on ``PYTHONPATH``). It imports nothing heavy: the
hooks are added when transformers' own modules are first imported. What counts: a transformers model that can
generate text (the local smollm2, the tiny Llama, a trained checkpoint) and any ``transformers.Trainer`` (TRL's
trainers included). The sentence-embedding encoder of the QC check (MiniLM) is not a language model: allowed.
"""

from __future__ import annotations

import os
import sys
from importlib.abc import MetaPathFinder

ENV = "PHR_TEST_MODEL_GUARD"


def note(what: str) -> None:
    """Append ``what`` to the guard file, when one is set (never fails the code under test)."""
    path = os.environ.get(ENV)
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{what} (pid {os.getpid()})\n")
    except OSError:
        pass


def _guard_models(module) -> None:
    cls = module.PreTrainedModel
    init = cls.__init__

    def __init__(self, *args, **kwargs):
        if type(self).can_generate():
            note(f"built the language model {type(self).__name__}")
        init(self, *args, **kwargs)

    cls.__init__ = __init__


def _guard_trainers(module) -> None:
    cls = module.Trainer
    init = cls.__init__

    def __init__(self, *args, **kwargs):
        note(f"made the trainer {type(self).__name__}")
        init(self, *args, **kwargs)

    cls.__init__ = __init__


HOOKS = {"transformers.modeling_utils": _guard_models, "transformers.trainer": _guard_trainers}


class _AfterImport(MetaPathFinder):
    """Runs ``HOOKS[name]`` on a module right after it is executed."""

    def find_spec(self, name, path, target=None):
        if name not in HOOKS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                break
        else:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            HOOKS[name](module)

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """Hook the modules already imported now, the others when they are imported (once per process)."""
    if any(isinstance(f, _AfterImport) for f in sys.meta_path):
        return
    for name, hook in HOOKS.items():
        if name in sys.modules:
            hook(sys.modules[name])
    sys.meta_path.insert(0, _AfterImport())

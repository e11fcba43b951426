"""phr.core.memory: glibc's malloc kept from handing freed memory back to the kernel (page faults counted)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

from phr.core import memory

# Ten 0.9 MB arrays made and freed twenty times, after one 1 MB block was mapped and freed (glibc's adaptive
# threshold then sends the 0.9 MB blocks to the heap, and trims the heap's top once more than 2 MB of it is free).
# The minor page faults of the loop and the free bytes the heap keeps after it are printed.
PROBE = """
import ctypes, resource, sys
import numpy as np
if sys.argv[1] == "tuned":
    from phr.core.memory import keep_freed_memory
    print(keep_freed_memory(), file=sys.stderr)
class Mallinfo2(ctypes.Structure):
    _fields_ = [(k, ctypes.c_size_t) for k in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = Mallinfo2
a = np.ones(1 << 17); del a
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    arrays = [np.ones(112_500) for _ in range(10)]
    del arrays
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, mallinfo2().fordblks)
"""


def _probe(mode: str, env: dict[str, str]) -> tuple[int, int]:
    """The loop's minor page faults and the free bytes the heap holds after it."""
    res = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, env=env, check=True)
    faults, free = res.stdout.split()
    return int(faults), int(free)


def _glibc() -> bool:
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.gnu_get_libc_version and libc.mallinfo2)  # mallinfo2: glibc 2.33 and newer
    except (OSError, AttributeError):
        return False


@pytest.mark.skipif(not _glibc(), reason="the settings are glibc's (2.33 or newer for the probe)")
def test_freed_memory_is_reused_instead_of_faulted_in_again():
    env = {k: v for k, v in os.environ.items() if k not in memory.GLIBC_VARIABLES}
    (default_faults, default_free), (tuned_faults, tuned_free) = _probe("default", env), _probe("tuned", env)
    # glibc's defaults: the heap's top is trimmed after every round (the 9 MB given back to the kernel) and
    # faulted in again; tuned: the heap keeps them, and only the first round faults its pages in (with 4 KB
    # pages, 2200 faults a round; huge pages would make both counts smaller, the free bytes tell alike)
    assert default_free < 4_000_000 and tuned_free > 9_000_000
    assert tuned_faults * 5 < default_faults


def test_the_users_glibc_variables_decide(monkeypatch):
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1048576")
    assert memory._apply() == "left as configured (MALLOC_TRIM_THRESHOLD_ set)"
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")
    assert memory._apply() == "left as configured (GLIBC_TUNABLES set)"


def test_another_c_library_is_left_alone(monkeypatch):
    for v in memory.GLIBC_VARIABLES:
        monkeypatch.delenv(v, raising=False)

    def no_glibc(*a, **k):
        raise OSError("not glibc")

    monkeypatch.setattr(memory.ctypes, "CDLL", no_glibc)
    assert memory._apply() == "left as it is (the C library is not glibc)"


def test_it_is_applied_once_per_process(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "_DONE", None)
    monkeypatch.setattr(memory, "_apply", lambda: calls.append(1) or "done")
    assert memory.keep_freed_memory() == memory.keep_freed_memory() == "done"
    assert calls == [1]


def test_validate_keeps_freed_memory_and_other_commands_do_not(monkeypatch, mini_folder, tmp_path):
    from typer.testing import CliRunner

    from phr import api
    from phr.cli import app
    from phr.config.ops import PushConfig, ReviewExportConfig, ValidateConfig
    from phr.core.report import ValidationReport

    calls = []
    monkeypatch.setattr(memory, "keep_freed_memory", lambda: calls.append(1) or "tuned")
    run = api.run
    # the checks themselves are tested elsewhere: here validate's run reports nothing, once malloc was set
    monkeypatch.setattr(api, "run", lambda p: ValidationReport() if isinstance(p.config, ValidateConfig) else run(p))
    res = CliRunner().invoke(app, ["validate", str(mini_folder)])
    assert res.exit_code == 0, res.output
    assert calls == [1]
    res = CliRunner().invoke(app, ["review", "export", str(mini_folder), "--out", str(tmp_path / "r.csv")])
    assert res.exit_code == 0, res.output
    assert calls == [1]
    assert ValidateConfig.keeps_freed_memory and PushConfig.keeps_freed_memory
    assert not ReviewExportConfig.keeps_freed_memory

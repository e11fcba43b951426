"""glibc's malloc told to keep freed memory for reuse, for the array-heavy commands (validate, the builds).

With glibc's defaults, large blocks that numpy and Arrow free are handed back to the kernel (an ``munmap``, or a
trim of the heap's top) and the next allocation faults fresh pages in again, each zeroed by the kernel; threads of
one process also queue on its memory map while they fault. Measured on 2 cores (bench/validate.py, 100k rows):
``run_checks`` took 17k page faults per run on one thread and 25k-37k on two, 0.03 s and 0.13 s of system time;
with the settings below, under 1k and about 0.01 s, and the two-thread run 0.52-0.54 s instead of 0.56-0.59 s.

The settings (``mallopt``): blocks up to ``MMAP_THRESHOLD`` come from the heap, not their own mapping, and a heap
keeps up to ``TRIM_THRESHOLD`` of free memory at its top. The cost: a process holds on to up to that much memory
it freed (per malloc arena) until it exits, which a short command can afford. Nothing is changed when the user
set glibc's own variables (``MALLOC_*_``, ``GLIBC_TUNABLES``: theirs decide) or when the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

log = logging.getLogger(__name__)

#: blocks up to this size come from the heap (glibc's own ceiling for its adaptive threshold)
MMAP_THRESHOLD = 32 << 20
#: free memory a heap keeps at its top before it gives it back to the kernel
TRIM_THRESHOLD = 256 << 20
#: glibc's variables that set these itself; any one of them set leaves malloc as the user configured it
GLIBC_VARIABLES = (
    "GLIBC_TUNABLES",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_MAX_",
)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h

_DONE: str | None = None


def keep_freed_memory() -> str:
    """Apply the module's malloc settings once per process; returns what was done (also logged)."""
    global _DONE
    if _DONE is None:
        _DONE = _apply()
        log.info("malloc: %s", _DONE)
    return _DONE


def _apply() -> str:
    given = [v for v in GLIBC_VARIABLES if os.environ.get(v)]
    if given:
        return f"left as configured ({', '.join(given)} set)"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version.restype = ctypes.c_char_p
        version = libc.gnu_get_libc_version().decode()
    except (OSError, AttributeError):
        return "left as it is (the C library is not glibc)"
    if not (mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)):
        return f"left as it is (glibc {version} refused the settings)"
    return f"glibc {version} keeps freed memory for reuse (mmap threshold {MMAP_THRESHOLD >> 20} MiB, trim threshold {TRIM_THRESHOLD >> 20} MiB)"

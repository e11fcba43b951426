"""File modes for outputs made through ``tempfile`` (which creates 0700 folders and 0600 files).

An output written to a temporary sibling and then renamed into place should end with the modes a plain
``mkdir`` / ``open`` would have given it: 0777 / 0666 less the process umask (0755 / 0644 by default).
"""

from __future__ import annotations

import os
from pathlib import Path


def current_umask() -> int:
    """The process umask, read without changing it where Linux exposes it (else set and restored at once)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def honour_umask(path: str | os.PathLike) -> None:
    """Give ``path`` (a folder from ``mkdtemp`` or a file from ``mkstemp``) the modes of a normal new one."""
    base = 0o777 if Path(path).is_dir() else 0o666
    os.chmod(path, base & ~current_umask())

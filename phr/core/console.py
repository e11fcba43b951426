"""The rich console every command prints tables through.

On a terminal it is rich's own (the terminal's width). Anywhere else (a log file, a pipe, CI) rich would assume
80 columns and cut or wrap what does not fit (``local…``, ``0.118 ±`` / ``0.056`` on two lines); there it is
``LOG_WIDTH`` wide, so a table keeps its natural width and a line its one line (a table is only as wide as its
content, never padded to the console's width).
"""

from __future__ import annotations

from typing import IO

from rich.console import Console

LOG_WIDTH = 1000


def console(*, stderr: bool = False, file: IO[str] | None = None) -> Console:
    """A console on stdout (``stderr=True``: stderr; ``file``: that stream) at full width when it is not a terminal."""
    con = Console(stderr=stderr, file=file)
    if not con.is_terminal:
        con = Console(stderr=stderr, file=file, width=LOG_WIDTH)
    return con

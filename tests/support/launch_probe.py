"""Prints what ``phr.core.launch`` makes of the launch this rank belongs to (tests only):

torchrun --nproc_per_node 2 -m tests.support.launch_probe ARGS...
"""

from __future__ import annotations

import json
import os
import sys

from phr.core.launch import current_launch
from phr.core.ranks import current

if __name__ == "__main__":
    launch = current_launch()
    assert launch is not None
    line = json.dumps({"rank": current().rank, **launch.record(sys.argv[1:])}) + "\n"
    # One write of the whole line: the two ranks share the pipe, and print() under PYTHONUNBUFFERED writes the
    # text and its newline apart, so another rank's line could land between them (a pipe write under PIPE_BUF
    # bytes is atomic).
    os.write(1, line.encode())

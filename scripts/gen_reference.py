"""Write docs/reference/<op>.md from the operations' config classes (phr.config.reference); --check: exit 1 when a
committed page is out of date."""

from __future__ import annotations

import sys
from pathlib import Path

from phr.config.reference import stale, write

FOLDER = Path(__file__).resolve().parent.parent / "docs" / "reference"

if __name__ == "__main__":
    if "--check" in sys.argv[1:]:
        bad = stale(FOLDER)
        if bad:
            print(f"out of date in {FOLDER}: {', '.join(bad)} (run python scripts/gen_reference.py)")
            sys.exit(1)
        print("docs/reference is up to date")
    else:
        for p in write(FOLDER):
            print(p)

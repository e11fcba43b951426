"""``run(plan(cfg))`` of `eval phrbench` from a script, as a user would start it under a launcher (tests only):

    torchrun --nproc_per_node 2 -m tests.support.eval_script DATASET OUT

The settings of tests/test_ranks.py's eval launch (SmolLM2, 2 base questions, 1 sample, 24 tokens, no plots).
"""

from __future__ import annotations

import sys

from phr.api import plan, run
from phr.config.ops import EvalPhrbenchConfig


def main() -> None:
    dataset, out = sys.argv[1:3]
    cfg = EvalPhrbenchConfig(
        model="local:smollm2", dataset=dataset, limit=2, samples=1, max_tokens=24, plots=False, out=out
    )
    run(plan(cfg))


if __name__ == "__main__":
    main()

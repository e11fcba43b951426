"""``python -m phr.eval.harness WHAT``: what the harness commands need (docs/harnesses.md).

lm-eval-tasks        the folder for lm_eval --include_path
inspect-task         FILE@phrbench for inspect eval
model-path SPEC      the model folder of local:smollm2 (converted once), for --model_args pretrained= / hf/
"""

from __future__ import annotations

import sys

from phr.eval.harness import inspect_task, lm_eval_tasks

USAGE = "usage: python -m phr.eval.harness {lm-eval-tasks | inspect-task | model-path local:smollm2}"


def main(argv: list[str]) -> int:
    if argv == ["lm-eval-tasks"]:
        print(lm_eval_tasks())
    elif argv == ["inspect-task"]:
        print(inspect_task())
    elif len(argv) == 2 and argv[0] == "model-path":
        if argv[1] != "local:smollm2":
            print(f"error: model-path: only local:smollm2 has a folder here (got {argv[1]!r})", file=sys.stderr)
            return 2
        from phr.llm.providers.hf_local import ensure_smollm2

        print(ensure_smollm2())
    else:
        print(USAGE, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

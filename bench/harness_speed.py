"""Our runner vs lm-evaluation-harness's ``hf`` backend, side by side in one run (issue 34): the same PHRBench-mini
instances, the same model (the offline SmolLM2 on the CPU), the same prompts (the chat template of each instance's
prompt) and the same max tokens, greedy.

Each side runs as the command a user types, in a scratch folder, from a cold start (the model loaded, ours with an
empty call cache):

- ours: ``phr-publish eval phrbench --model local:smollm2 --limit N --samples 1 --temperature 0 --max-tokens M
  --scorer none`` (batches of 8, one torch thread for a model this small: phr.core.threads);
- lm-eval: ``lm_eval --model hf --model_args pretrained=DIR --apply_chat_template --tasks phrbench_greedy
  --include_path ... --gen_kwargs max_gen_toks=M --batch_size B`` for each B of ``--lm-eval-batch-sizes``
  (its default is 1).

Printed: wall time, generated tokens (the responses counted with the model's tokenizer, the same way for every
side) and tokens per second, lm-eval's wall over ours (goal: >= 1.0, ours not slower), whether the responses are
identical and whether Acc B / T / H, H - T and retention are equal.

    python bench/harness_speed.py [--limit 4] [--max-tokens 64] [--lm-eval-batch-sizes 1,8] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
HEADLINE = ("accuracy_b", "accuracy_bt", "accuracy_bh", "delta_accuracy", "retention")
GOAL = 1.0


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return wall


def ours(scratch: Path, dataset: Path, args: argparse.Namespace, env: dict[str, str]) -> tuple[float, dict, dict]:
    out = scratch / "ours"
    cmd = [str(BIN / "phr-publish"), "eval", "phrbench", "--model", "local:smollm2", "--dataset", str(dataset),
           "--limit", str(args.limit), "--samples", "1", "--temperature", "0", "--max-tokens", str(args.max_tokens),
           "--scorer", "none", "--no-plots", "--out", str(out)]  # fmt: skip
    wall = timed(cmd, scratch, env | {"PHR_CACHE": str(scratch / "calls.sqlite")})
    responses = {json.loads(x)["instance_id"]: json.loads(x)["response"] for x in (out / "responses.jsonl").open()}
    metrics = json.loads((out / "scores" / "results.json").read_text())["metrics"]
    return wall, responses, {k: metrics.get(k) for k in HEADLINE}


def lm_eval(scratch: Path, dataset: Path, model_dir: str, batch: int, args, env) -> tuple[float, dict, dict]:
    from phr.eval.harness import lm_eval_tasks

    out = scratch / f"lm-eval-bs{batch}"
    cmd = [str(BIN / "lm_eval"), "--model", "hf", "--model_args", f"pretrained={model_dir},dtype=float32",
           "--apply_chat_template", "--tasks", "phrbench_greedy", "--include_path", str(lm_eval_tasks()),
           "--metadata", json.dumps({"dataset": str(dataset), "limit": args.limit}),
           "--gen_kwargs", f"max_gen_toks={args.max_tokens}", "--device", "cpu", "--batch_size", str(batch),
           "--log_samples", "--output_path", str(out)]  # fmt: skip
    wall = timed(cmd, scratch, env)
    (samples,) = out.rglob("samples_phrbench_greedy_*.jsonl")
    responses = {s["doc"]["id"]: s["filtered_resps"][0][0] for s in map(json.loads, samples.open())}
    (results,) = out.rglob("results_*.json")
    got = {k.split(",")[0]: v for k, v in json.loads(results.read_text())["results"]["phrbench_greedy"].items()}
    return wall, responses, {k: got.get(k) for k in HEADLINE}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=4, help="base questions (5 instances each)")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--lm-eval-batch-sizes", default="1,8", help="comma-separated (lm-eval's default is 1)")
    ap.add_argument("--keep", type=Path, help="keep the scratch folder here")
    args = ap.parse_args()

    from transformers import AutoTokenizer

    from phr.llm.providers.hf_local import ensure_smollm2

    model_dir = str(ensure_smollm2())
    tok = AutoTokenizer.from_pretrained(model_dir)
    scratch = Path(tempfile.mkdtemp(prefix="phr-harness-speed-"))
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"} | {"HF_HUB_OFFLINE": "1"}
    try:
        print("building PHRBench-mini ...", flush=True)
        timed([str(BIN / "phr-publish"), "build", "phrbench", "--out", str(scratch / "phrbench")], scratch, env)
        dataset = scratch / "phrbench"
        print("ours ...", flush=True)
        rows = [("ours (eval phrbench)", *ours(scratch, dataset, args, env))]
        for b in (int(x) for x in args.lm_eval_batch_sizes.split(",")):
            print(f"lm-eval hf, batch size {b} ...", flush=True)
            rows.append((f"lm-eval hf --batch_size {b}", *lm_eval(scratch, dataset, model_dir, b, args, env)))
    finally:
        if args.keep:
            shutil.copytree(scratch, args.keep, dirs_exist_ok=True)
        shutil.rmtree(scratch, ignore_errors=True)

    _, base_wall, base_resp, base_acc = rows[0]
    n = len(base_resp)
    print(f"\n{n} instances ({args.limit} questions x B, B+T, 3 x B+H), greedy, max {args.max_tokens} new tokens, CPU")
    print(f"{'runner':<28} {'wall s':>8} {'tokens':>7} {'tok/s':>7} {'vs ours':>8}  responses identical  Acc equal")
    for name, wall, resp, acc in rows:
        tokens = sum(len(tok(t, add_special_tokens=False)["input_ids"]) for t in resp.values())
        same = sum(resp.get(k) == v for k, v in base_resp.items())
        equal = all(acc[k] == base_acc[k] or abs((acc[k] or 0) - (base_acc[k] or 0)) < 1e-9 for k in HEADLINE)
        print(
            f"{name:<28} {wall:>8.1f} {tokens:>7} {tokens / wall:>7.1f} {wall / base_wall:>7.2f}x  {same:>9}/{n:<9}  {equal}"
        )
    print("\nAcc B / T / H, H - T, retention (ours):", ", ".join(f"{k} {base_acc[k]}" for k in HEADLINE))
    slowest_ratio = min(wall / base_wall for _, wall, _, _ in rows[1:])
    verdict = "met" if slowest_ratio >= GOAL else "NOT met"
    print(f"ours vs the fastest lm-eval setting: {slowest_ratio:.2f}x (goal >= {GOAL}: {verdict})")


if __name__ == "__main__":
    main()

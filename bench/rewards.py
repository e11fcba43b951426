"""GRPO reward benchmark (training/rewards.py): --prompts prompts x --k completions, a judge taking --latency s
per call (the local OpenAI-protocol server, real openai client).

The same ``HR1Reward`` code runs twice over the same completions, each against a cold cache, fed to it in
generation batches of --batch-prompts prompts (one reward call per batch, as TRL does):

- concurrent: the judge ``LLM`` at --concurrency (the calls of one batch run together under its limits);
- sequential: the judge ``LLM`` at concurrency 1 (one request at a time);

then a second epoch of the concurrent reward over the same completions, on its now-warm cache. Both runs must
give the same rewards. Goals: speed-up >= 8x, 0 judge calls in the second epoch. Stage 2 (--stage 2) adds the QA
model and the B.3 judge (same server). Diversity uses a deterministic hash embedding (--minilm: the offline
MiniLM), so the timing is the judge's.

    python bench/rewards.py [--prompts 64] [--k 8] [--latency 0.1] [--concurrency 16] [--batch-prompts 8] [--stage 1]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test doubles live in tests/support

from phr.hr1.pipeline import paraphrase_prompt
from phr.llm import LLM
from phr.training.rewards import HR1Reward, RewardConfig
from tests.support.protocol_server import ProtocolServer

STYLES = [
    "Tell me: which river flows through {t}?",
    "Through {t}, which river flows?",
    "Name the river that runs through {t}.",
    "What river passes through the town of {t}?",
    "Which river and who else live in {t}?",  # inconsistent (adds a question)
    "{t} lies on which river?",
    "Which waterway crosses {t}?",
]


def completions(prompts: int, k: int) -> list[tuple[str, str, str]]:
    """(prompt_id, question, completion) rows: sample j of prompt i; every 8th is malformed (no tag)."""
    rows = []
    for i in range(prompts):
        town = f"Town{i:03d}"
        q = f"Which river flows through {town}?"
        for j in range(k):
            text = STYLES[j % len(STYLES)].format(t=town) + ("" if j < len(STYLES) else f" (take {j})")
            reply = "I will not." if j % 8 == 7 else f"<think>Reorder.</think><paraphrase>{text}</paraphrase>"
            rows.append((f"p{i:03d}", q, reply))
    return rows


def responder(model, messages, k):
    """B.2: inconsistent when the paraphrase adds "who else"; QA: "Rhine" (wrong for "crosses"); B.3: equal."""
    first = messages[0][1]
    if first.startswith("Please help me determine"):
        para = re.search(r"paraphrased question: (.*?)\n", first).group(1)
        return json.dumps({"think": "checked", "result": 0 if "who else" in para else 1})
    if first.startswith("Your task is to evaluate whether"):
        resp = re.search(r"Model Response: (.*?)\n", first).group(1).strip()
        return json.dumps({"think": "compared", "result": 0 if resp == "Rhine" else 2})
    if first.startswith("You are a strict question"):
        return "<answer>" + ("Danube" if "crosses" in messages[-1][1] else "Rhine") + "</answer>"
    raise AssertionError(f"unexpected prompt: {first[:80]!r}")


def hash_embed(texts: list[str]) -> np.ndarray:
    rows = []
    for t in texts:
        v = np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")).normal(size=32)
        rows.append(v / np.linalg.norm(v))
    return np.array(rows)


def epoch(reward: HR1Reward, rows, k: int, batch_prompts: int, step0: int) -> tuple[float, list]:
    """One pass over ``rows`` in generation batches; returns (seconds, rewards)."""
    size = batch_prompts * k
    out: list = []
    t0 = time.perf_counter()
    for b, start in enumerate(range(0, len(rows), size)):
        batch = rows[start : start + size]
        out += asyncio.run(
            reward(
                prompts=[[{"role": "user", "content": paraphrase_prompt(q)}] for _, q, _ in batch],
                completions=[[{"role": "assistant", "content": c}] for _, _, c in batch],
                prompt_id=[p for p, _, _ in batch],
                question=[q for _, q, _ in batch],
                answers=[["Rhine"] for _ in batch],
                trainer_state=argparse.Namespace(global_step=step0 + b),
            )
        )
    return time.perf_counter() - t0, out


def make(stage: int, cache: Path, concurrency: int, k: int, embed) -> HR1Reward:
    llm = LLM("openai:gpt-4o", cache=cache, concurrency=concurrency, progress=False, show_summary=False)
    config = RewardConfig(
        judge="openai:gpt-4o", qa_model="openai:gpt-4o" if stage == 2 else None, stage=stage, group_size=k
    )
    return HR1Reward(config, judge_llm=llm, qa_llm=llm, embed=embed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--batch-prompts", type=int, default=8)
    ap.add_argument("--stage", type=int, choices=(1, 2), default=1)
    ap.add_argument("--minilm", action="store_true", help="rank diversity with the offline MiniLM")
    args = ap.parse_args()
    if args.minilm:
        from phr.llm.embed import embed
    else:
        embed = hash_embed
    rows = completions(args.prompts, args.k)
    with ProtocolServer(latency=args.latency, responder=responder) as srv, tempfile.TemporaryDirectory() as tmp:
        os.environ["OPENAI_API_KEY"] = "sk-bench-not-a-real-key"
        os.environ["OPENAI_BASE_URL"] = srv.url + "/v1"
        par = make(args.stage, Path(tmp, "par.sqlite"), args.concurrency, args.k, embed)
        t_par, r_par = epoch(par, rows, args.k, args.batch_prompts, 0)
        first = dict(par.stats())
        seq = make(args.stage, Path(tmp, "seq.sqlite"), 1, args.k, embed)
        t_seq, r_seq = epoch(seq, rows, args.k, args.batch_prompts, 0)
        t_warm, r_warm = epoch(par, rows, args.k, args.batch_prompts, 1000)
        warm = par.stats()
    assert r_par == r_seq == r_warm, "the runs gave different rewards"
    calls = first["judge_calls"] + first["qa_calls"]
    warm_calls = warm["judge_calls"] + warm["qa_calls"] - calls
    ratio = t_seq / t_par
    print(
        f"stage {args.stage}: {args.prompts} prompts x {args.k} completions, judge latency "
        f"{args.latency * 1000:.0f} ms, batches of {args.batch_prompts} prompts, concurrency {args.concurrency}"
    )
    print(
        f"rewards: {len(r_par)} ({first['malformed']} malformed, {first['inconsistent']} inconsistent, "
        f"{first['missing']} missing), mean {first['mean_reward']:.3f}; {calls} model calls per cold epoch"
    )
    print(f"sequential (concurrency 1): {t_seq:7.2f} s")
    print(f"concurrent:                 {t_par:7.2f} s")
    print(f"speed-up:                   {ratio:7.2f}x  (goal >= 8) {'OK' if ratio >= 8 else 'BELOW GOAL'}")
    print(
        f"second epoch (warm cache):  {t_warm:7.2f} s  {warm_calls} model calls, "
        f"{warm['cache_hits'] - first['cache_hits']} cache hits (goal: 0 calls) {'OK' if warm_calls == 0 else 'BELOW GOAL'}"
    )


if __name__ == "__main__":
    main()

"""Fan-out benchmark: 200 calls through the real OpenAI SDK against the local protocol server.

The server injects 100 ms of latency per request. The same 200 prompts run once sequentially (concurrency 1)
and once at concurrency 16, each against a cold cache, side by side in one process; then the concurrent run
is repeated against its now-warm cache. Goals: speed-up >= 12.8 (0.8 x the concurrency limit), 0 calls warm.

    python bench/llm_fanout.py [--calls 200] [--latency 0.1] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test doubles live in tests/support

from phr.llm import LLM, ChatRequest, GenerationParams, as_messages
from tests.support.protocol_server import ProtocolServer


def run(cache: Path, concurrency: int, calls: int) -> tuple[float, int, int]:
    llm = LLM("openai:gpt-4o", cache=cache, concurrency=concurrency, progress=False)
    reqs = [ChatRequest(as_messages(f"question {i}"), GenerationParams(temperature=0.7)) for i in range(calls)]
    t0 = time.perf_counter()
    results = llm.generate(reqs)
    elapsed = time.perf_counter() - t0
    assert all(r.ok for r in results), "a call failed"
    return elapsed, llm.last_summary.calls, llm.last_summary.cache_hits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()
    with ProtocolServer(latency=args.latency) as srv, tempfile.TemporaryDirectory() as tmp:
        os.environ["OPENAI_API_KEY"] = "sk-bench-not-a-real-key"
        os.environ["OPENAI_BASE_URL"] = srv.url + "/v1"
        seq, seq_calls, _ = run(Path(tmp, "seq.sqlite"), 1, args.calls)
        par, par_calls, _ = run(Path(tmp, "par.sqlite"), args.concurrency, args.calls)
        warm, warm_calls, warm_hits = run(Path(tmp, "par.sqlite"), args.concurrency, args.calls)
    goal = 0.8 * args.concurrency
    print(f"calls: {args.calls}, injected latency: {args.latency * 1000:.0f} ms, concurrency: {args.concurrency}")
    print(f"sequential:        {seq:7.2f} s  ({seq_calls} calls)")
    print(f"concurrent:        {par:7.2f} s  ({par_calls} calls)")
    print(f"speed-up:          {seq / par:7.2f}x  (goal >= {goal:.1f}) {'OK' if seq / par >= goal else 'BELOW GOAL'}")
    print(
        f"warm-cache rerun:  {warm:7.2f} s  {warm_calls} calls, {warm_hits} cache hits (goal: 0 calls) "
        f"{'OK' if warm_calls == 0 else 'BELOW GOAL'}"
    )


if __name__ == "__main__":
    main()

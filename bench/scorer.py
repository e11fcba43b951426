"""Trajectory-scorer benchmark: the one-pass scorer vs a bare forward pass and vs one forward per step prefix.

Model: SmolLM2-135M-Instruct (``local:smollm2``, float32, CPU), the offline default reference scorer: a real
model keeps the ratio of body to output-head work realistic (a tiny random config would be dominated by
its vocabulary-sized head). Responses: ``--responses`` synthetic reasoning traces of ``--steps``
sentence-level steps each (deterministic text with cues, decimals and abbreviations), one batch.

Timings (wall and CPU seconds, best of ``--repeat`` interleaved runs after a warm-up, so other load on
the machine hits both sides alike; the naive method runs once):
  * one-pass  ``TrajectoryScorer.score`` (tokenization, one forward per batch, UI/BUF/BC);
  * bare      ``model(input_ids, attention_mask).logits`` over the very same padded token batches;
  * naive     ``reference_metrics`` per response: one forward per step prefix, full-vocab float64 math.
Goals: one-pass / bare <= 1.25; naive / one-pass >= 5. The one-pass and naive outputs must agree
(OL, steps, BC, BUF exactly; UI and every transition KL within 1e-4), else the exit status is 1.

    HF_HUB_OFFLINE=1 python bench/scorer.py [--responses 4] [--steps 20] [--repeat 5] [--model local:smollm2]
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from phr.eval.trajectory import TrajectoryScorer, reference_metrics
from phr.llm.spec import make_provider

SENTENCES = [
    "We need the total cost of {a} items at {b}.5 dollars each.",
    "First, {a} times {b} is {ab}.",
    "Then {a} times 0.5 is {half}, e.g. half of {a}.",
    "So the total is {ab} plus {half}, which gives {tot}.",
    "Wait, let me check that again.",
    "Actually, {a} times {b}.5 can also be computed as {a} times {b} plus {a} halves.",
    "Hmm, that is the same computation as before.",
    "Alternatively, we can add {b}.5 to itself {a} times.",
    "Doing so step by step gives the same {tot}.",
    "However, we should double-check the units, i.e. dollars.",
    "The price is per item, so the units are right.",
    "Is there a discount for buying {a} items?",
    "The question does not mention one, so we assume none.",
    "On second thought, a tax might apply.",
    "But the question asks only for the cost of the items.",
    "Let me reconsider whether rounding is needed.",
    "The result {tot} is exact, so no rounding is needed.",
    "Another approach is to estimate: about {b} dollars times {a} is {ab}.",
    "Our exact answer {tot} is a bit larger, as expected!",
    "Therefore the final answer is {tot} dollars.",
]


def make_items(n: int, steps: int) -> list[tuple[str, str]]:
    items = []
    for i in range(n):
        a, b = 3 + i, 2 + (i % 5)
        vals = {"a": a, "b": b, "ab": a * b, "half": a / 2, "tot": a * b + a / 2}
        lines = [SENTENCES[(j + i) % len(SENTENCES)].format(**vals) for j in range(steps)]
        # a line break every fourth step, spaces otherwise
        text = "".join(s + ("\n" if (j + 1) % 4 == 0 else " ") for j, s in enumerate(lines)).strip()
        items.append((f"What do {a} items at {b}.5 dollars each cost in total? Think step by step.", text))
    return items


def bare_batches(scorer: TrajectoryScorer, items) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The scorer's padded batches (same order, same tokens), for the bare forward."""
    prepared = [scorer._prepare(m, r) for m, r in items]
    order = sorted(range(len(prepared)), key=lambda i: -(len(prepared[i].prompt) + len(prepared[i].response)))
    pad = scorer.provider.tokenizer.pad_token_id or 0
    out = []
    for j in range(0, len(order), scorer.batch_size):
        batch = [prepared[i] for i in order[j : j + scorer.batch_size]]
        seqs = [b.prompt + b.response for b in batch]
        width = max(map(len, seqs))
        ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for r, s in enumerate(seqs):
            ids[r, : len(s)] = torch.tensor(s)
            mask[r, : len(s)] = 1
        out.append((ids, mask))
    return out


def bare_forward(model, batches) -> None:
    with torch.inference_mode():
        for ids, mask in batches:
            model(input_ids=ids, attention_mask=mask, use_cache=False).logits.sum()


def timed(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="local:smollm2")
    ap.add_argument("--responses", type=int, default=4)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--vocab-chunk", type=int, default=8192)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    provider = make_provider(args.model).load()
    scorer = TrajectoryScorer(provider, batch_size=args.batch_size, vocab_chunk=args.vocab_chunk)
    items = make_items(args.responses, args.steps)
    batches = bare_batches(scorer, items)
    n_tokens = sum(int(mask.sum()) for _, mask in batches)
    print(
        f"model {args.model} ({provider.hf_model.dtype}, {torch.get_num_threads()} threads); "
        f"{len(items)} responses, {args.steps} steps each, {n_tokens} tokens in all (prompts included)"
    )

    scorer.score(items[:1])  # warm-up (first forwards are slow) and the head self-check
    bare_forward(provider.hf_model, batches[:1])

    # Interleaved repeats, best of each: other load on the machine hits both sides alike.
    got: list = []
    runs = {"one-pass": [], "bare": []}
    for _ in range(args.repeat):
        runs["one-pass"].append(timed(lambda: got.__setitem__(slice(None), scorer.score(items))))
        runs["bare"].append(timed(lambda: bare_forward(provider.hf_model, batches)))
    ref: list = []
    naive_wall, naive_cpu = timed(
        lambda: ref.extend(reference_metrics(provider, m, r, cues=scorer.cues) for m, r in items)
    )
    one_pass, one_pass_cpu = min(w for w, _ in runs["one-pass"]), min(c for _, c in runs["one-pass"])
    bare, bare_cpu = min(w for w, _ in runs["bare"]), min(c for _, c in runs["bare"])

    same = True
    worst_ui = worst_kl = 0.0
    for g, r in zip(got, ref):
        same &= (g.ol, g.steps, g.bc, g.buf, g.transitions_above_tau) == (
            r.ol,
            r.steps,
            r.bc,
            r.buf,
            r.transitions_above_tau,
        )
        same &= len(g.kls) == len(r.kls)
        worst_ui = max(worst_ui, abs(g.ui - r.ui))
        worst_kl = max([worst_kl] + [abs(a - b) for a, b in zip(g.kls, r.kls)])
    same &= worst_ui <= 1e-4 and worst_kl <= 1e-4

    steps = [g.steps for g in got]
    kls = sorted(v for g in got for v in g.kls)
    print(f"steps per response {steps}; BUF {[round(g.buf, 3) for g in got]}; UI {[round(g.ui, 3) for g in got]}")
    if kls:
        print(f"transition KLs: min {kls[0]:.3f}, median {kls[len(kls) // 2]:.3f}, max {kls[-1]:.3f} nats")
    print(f"                     wall (best of {args.repeat})   CPU")
    print(f"one-pass scorer  {one_pass:10.3f} s {one_pass_cpu:10.3f} s")
    print(f"bare forward     {bare:10.3f} s {bare_cpu:10.3f} s")
    print(f"naive per prefix {naive_wall:10.3f} s {naive_cpu:10.3f} s   (one run)")
    r1, r2 = one_pass / bare, naive_wall / one_pass
    print(
        f"one-pass / bare   = {r1:6.3f}  (CPU {one_pass_cpu / bare_cpu:6.3f}; goal <= 1.25: "
        f"{'met' if r1 <= 1.25 else 'MISSED'})"
    )
    print(
        f"naive / one-pass  = {r2:6.2f}x (CPU {naive_cpu / one_pass_cpu:6.2f}x; goal >= 5x: "
        f"{'met' if r2 >= 5 else 'MISSED'})"
    )
    print(f"outputs agree: {same} (max |dUI| {worst_ui:.2e}, max |dKL| {worst_kl:.2e})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

"""Validation benchmark: run_checks on 25k, 50k and 100k synthetic augmentation rows.

Generates 100k augmentation rows (1 truthful + 4 hallucinated premises per question, so 20k questions;
MC, numeric open-ended and code questions; ~1% of rows carry each kind of fault) deterministically from a
seed, then times, at each size, a pandera-only pass (the questions and augmentations schemas) and the
full run_checks (schemas + references + single_mutation + distinctness + leakage) over the same rows, on one
thread and on default_workers() threads (the rule checks of different blocks run in parallel; the report is
the same). Goals: time per row flat across sizes (linear), run_checks / pandera-only <= 2.5.
The semantic distinctness check (MiniLM embeddings, validation/semantic.py) is timed on its own, over the
first --semantic-rows rows at two sizes: model load, then one cold pass each (every premise embedded once,
in batches), so its time per row shows whether it is linear. malloc is tuned as `phr-publish validate` tunes it
(phr.core.memory: freed memory kept for reuse) unless --glibc-defaults is given.

    python bench/validate.py [--rows 100000] [--repeat 5] [--seed 0] [--semantic-rows 4000] [--glibc-defaults]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from phr.bench.records import BaseQuestion
from phr.core.memory import keep_freed_memory
from phr.core.threads import cpu_times, host_share
from phr.validation import semantic
from phr.validation.checks import default_workers, run_checks
from phr.validation.schemas import validate_frame

SYLLABLES = "ba be bi bo bu ca ce ci co cu da de di do du fa fe fi fo fu ga ge gi go gu la le li lo lu ma me mi mo mu na ne ni no nu pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo vu xa xe xi zo zu".split()
UNITS = ["m/s", "kJ/mol", "mmol/L", "nm", "K", "Pa", "mg", "Hz", "eV", "mL"]
TEMPLATES = [
    "{A} {verb} {B} through {C} in the {D} {E}",
    "In {D} systems, {A} is {adj} than {B} because {C} {verb} the {E}",
    "The {E} of {A} reaches {num} {unit} when {B} {verb} {C}",
    "{A} cannot {verb} {B} unless the {D} {E} exceeds {num} {unit}",
    "Every {adj} {A} {verb} {C}, which makes the {E} of {B} {adj2}",
    "According to the {D} law, {A} and {B} {verb} {C} at the same {E}",
    "When {A} {verb} {B}, the {adj} {E} shifts toward {C} in {D} conditions",
    "{A} stores its {E} as {C}, so {B} {verb} it only in {adj} {D} media",
]
VERBS = (
    "binds oxidises reduces catalyses absorbs emits inhibits activates transports cleaves stabilises polarises".split()
)
ADJS = ["denser", "faster", "weaker", "stronger", "lighter", "warmer", "colder", "slower", "larger", "smaller"]
NOUNS_E = "energy charge spin mass entropy momentum pressure affinity potential density flux yield".split()
NOUNS_D = "aqueous cellular thermal ionic planetary membrane crystalline viscous acidic optical".split()


def _words(rng: np.random.Generator, k: int) -> list[str]:
    out = set()
    while len(out) < k:
        out.add("".join(rng.choice(SYLLABLES, size=rng.integers(2, 5))))
    return sorted(out)


FAULTS = ["gold", "sentences", "list", "numeric", "label", "paraphrase", "code_type", "logic", "carry", "code_line"]


def _question(q: int, qid: str, kind: str, rng: np.random.Generator, pick) -> tuple[dict, str]:
    """Question row ``qid`` of ``kind`` (a row has BaseQuestion's fields, in order; each kind sets its own values,
    the rest stay None) and, for code, the name of its function's argument."""
    base = dict.fromkeys(BaseQuestion.model_fields) | dict(
        id=qid, source="synth", source_row_id=str(q), license="CC0-1.0", subtype="Synthetic", options=[]
    )
    if kind == "mc":
        options = [" ".join(pick(2)) for _ in range(4)]
        gi = int(rng.integers(0, 4))
        dom = ["Chemistry", "Biomedicine", "Physics"][q % 3]
        return base | dict(
            domain=dom,
            task_type="multiple_choice",
            question=f"Which {' '.join(pick(6))} {VERBS[q % 12]} the {NOUNS_E[q % 12]}?",
            options=options,
            answer=options[gi],
            answer_index=gi,
        ), ""
    if kind == "numeric":
        value = f"{rng.integers(1, 500)}.{rng.integers(1, 99)}"
        return base | dict(
            domain="Physics",
            task_type="open_ended",
            question=f"What is the {NOUNS_E[q % 12]} of {' '.join(pick(5))} at {rng.integers(2, 99)} K?",
            answer=f"{value} {UNITS[q % 10]}",
        ), ""
    fn, var = pick(2)
    sol = (
        f"    total = 0\n    for item in {var}:\n        if item % 2 == 0:\n            total += item * {q % 7 + 2}\n"
        f"    return sorted({var}, key=lambda x: x % {q % 5 + 3})[:total]\n"
    )
    return base | dict(
        license="MIT",
        domain="Code",
        subtype="Python",
        task_type="code",
        question=f'def {fn}({var}):\n    """{" ".join(pick(8))}"""\n',
        answer=sol,
        code_signature=f"def {fn}({var}):\n",
        code_tests="assert True\n",
        entry_point=fn,
        reference_solution=sol,
    ), var


def _premises(kind: str, rng: np.random.Generator, pick, statement) -> tuple[list[str], list[str], list[str]]:
    """A question's five statements (T, then four H), the H's mutation types and their mutation logic."""
    templates = rng.permutation(len(TEMPLATES))[:5].tolist()
    texts = [statement(t) for t in templates]
    types = (
        ["State Distortion"] * 4
        if kind == "code"
        else [
            ["Rule Contradiction", "State Distortion", "Pseudoscientific Entanglement"][int(rng.integers(0, 3))]
            for _ in range(4)
        ]
    )
    logic = [
        f"Changed the {NOUNS_E[int(rng.integers(0, 12))]} of {pick(1)[0]}, contradicting the {NOUNS_D[int(rng.integers(0, 10))]} rule."
        for _ in range(4)
    ]
    return texts, types, logic


def _inject(
    fault: str | None,
    kind: str,
    q: int,
    question: dict,
    var: str,
    texts: list[str],
    types: list[str],
    logic: list[str],
    statement,
) -> None:
    """Put ``fault`` (one of ``FAULTS``, where it fits the question's kind) into the premises, in place."""
    if fault == "gold" and kind == "mc":
        texts[0] = texts[0][:-1] + f" near {question['answer']}."
    elif fault == "sentences":
        texts[1] = texts[1] + " " + statement() + " " + statement()
    elif fault == "list":
        texts[2] = f"Two facts hold: (1) {texts[2][:-1]}; (2) {statement()}"
    elif fault == "numeric" and kind == "numeric":
        texts[3] = texts[3][:-1] + f" of {question['answer'].split()[0]}0 units."
    elif fault == "label" and kind == "mc":
        texts[1] = texts[1][:-1] + f", so the answer is ({question['answer_index'] + 1})."
    elif fault == "paraphrase":
        texts[4] = texts[3].replace(" as seen in ", " as observed in ")
    elif fault == "code_type" and kind == "code":
        types[0] = "Rule Contradiction"
    elif fault == "logic":
        logic[1] = "Introduced two errors: swapped the unit and negated the rule."
    elif fault == "carry":
        texts[0] = texts[0][:-1] + ". " + texts[2]
    elif fault == "code_line" and kind == "code":
        texts[2] = texts[2][:-1] + f" via `return sorted({var}, key=lambda x: x % {q % 5 + 3})[:total]`."


def _augmentation_rows(qid: str, texts: list[str], types: list[str], logic: list[str]) -> list[dict]:
    rows = []
    for k, text in enumerate(texts):
        h = k > 0
        rows.append(
            dict(
                id=f"{qid}-{'H' + str(k) if h else 'T'}",
                question_id=qid,
                kind="hallucinated" if h else "truthful",
                statement=text,
                truth_verification=None if h else "Checked against the source.",
                mutation_type=types[k - 1] if h else None,
                mutation_strategy="substitution" if h else None,
                mutation_logic=logic[k - 1] if h else None,
                generator="synthetic",
            )
        )
    return rows


def synthesize(n_rows: int = 100_000, seed: int = 0, fault_rate: float = 0.01) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(questions, augmentations): n_rows augmentation rows, 5 per question, deterministic for a seed."""
    rng = np.random.default_rng(seed)
    vocab = _words(rng, 4000)
    n_q = (n_rows + 4) // 5
    questions, augs = [], []

    def pick(k: int) -> list[str]:
        return [vocab[i] for i in rng.integers(0, len(vocab), size=k)]

    def statement(t: int | None = None) -> str:
        a, b, c, e = pick(4)
        tpl = TEMPLATES[t if t is not None else int(rng.integers(0, len(TEMPLATES)))]
        text = tpl.format(
            A=a,
            B=b,
            C=c,
            D=NOUNS_D[int(rng.integers(0, len(NOUNS_D)))],
            E=NOUNS_E[int(rng.integers(0, len(NOUNS_E)))],
            verb=VERBS[int(rng.integers(0, len(VERBS)))],
            adj=ADJS[int(rng.integers(0, len(ADJS)))],
            adj2=ADJS[int(rng.integers(0, len(ADJS)))],
            num=f"{rng.integers(2, 900)}.{rng.integers(1, 9)}",
            unit=UNITS[int(rng.integers(0, len(UNITS)))],
        )
        extra = " ".join(pick(int(rng.integers(3, 9))))
        return f"{text[0].upper()}{text[1:]}, as seen in {extra} (e.g. {pick(1)[0]})."

    for q in range(n_q):
        kind = "code" if q % 10 == 9 else "numeric" if q % 10 == 8 else "mc"
        qid = f"synth-{q}"
        fault = FAULTS[int(rng.integers(0, len(FAULTS)))] if rng.random() < fault_rate * len(FAULTS) else None
        question, var = _question(q, qid, kind, rng, pick)
        questions.append(question)
        texts, types, logic = _premises(kind, rng, pick, statement)
        _inject(fault, kind, q, question, var, texts, types, logic, statement)
        augs += _augmentation_rows(qid, texts, types, logic)
    return pd.DataFrame(questions), pd.DataFrame(augs[:n_rows])


def _interleaved(fns: list, repeat: int) -> list[tuple[float, float, object]]:
    """Best wall time, best CPU time (this process, all threads) and last result of each function, the
    functions run in turn `repeat` times, so a slow spell of a shared machine hits all of them alike. CPU time
    counts only the time this process ran: on two threads it shows what the second thread cost."""
    best = [float("inf")] * len(fns)
    best_cpu = [float("inf")] * len(fns)
    out: list[object] = [None] * len(fns)
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            t0, c0 = time.perf_counter(), time.process_time()
            out[k] = fn()
            best[k] = min(best[k], time.perf_counter() - t0)
            best_cpu[k] = min(best_cpu[k], time.process_time() - c0)
    return list(zip(best, best_cpu, out, strict=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--semantic-rows", type=int, default=4000, help="rows for the semantic check (0: skip it)")
    ap.add_argument(
        "--glibc-defaults",
        action="store_true",
        help="leave malloc as glibc starts it (default: tuned as `phr-publish validate` runs, phr.core.memory)",
    )
    args = ap.parse_args()
    print("malloc:", "glibc's defaults (--glibc-defaults)" if args.glibc_defaults else keep_freed_memory())
    t0 = time.perf_counter()
    questions, augs = synthesize(args.rows, args.seed)
    print(f"generated {len(augs)} augmentation rows / {len(questions)} questions in {time.perf_counter() - t0:.1f} s")
    sizes = [s for s in (args.rows // 4, args.rows // 2, args.rows) if s > 0]
    print(f"best of {args.repeat}, interleaved; run_checks includes the same pandera schemas; wall s (CPU s)")
    results = []
    workers = default_workers()
    print(
        f"{'rows':>8} {'pandera':>14} {'run_checks 1 thread':>20} {'ratio':>11} {f'run_checks {workers} threads':>22}"
        f" {'ratio':>11} {'us/row (1 thread)':>18}  rejections"
    )
    cpu_before = cpu_times()
    for n in sizes:
        a = augs.iloc[:n].reset_index(drop=True)
        q = questions[questions["id"].isin(set(a["question_id"]))].reset_index(drop=True)
        (tp, cp, _), (t1, c1, report), (tw, cw, report_w) = _interleaved(
            [
                lambda: validate_frame(q, "questions") + validate_frame(a, "augmentations"),  # noqa: B023
                lambda: run_checks(q, a, workers=1),  # noqa: B023
                lambda: run_checks(q, a, workers=workers),  # noqa: B023
            ],
            args.repeat,
        )
        assert report_w.rejections == report.rejections, "the report depends on the number of threads"
        results.append((n, tp, t1, tw, cp, c1))
        print(
            f"{n:>8} {f'{tp:.3f} ({cp:.3f})':>14} {f'{t1:.3f} ({c1:.3f})':>20} {f'{t1 / tp:.2f} ({c1 / cp:.2f})':>11}"
            f" {f'{tw:.3f} ({cw:.3f})':>22} {f'{tw / tp:.2f}':>11} {t1 / n * 1e6:>18.2f}  {len(report.rejections)}"
        )
    n, tp, t1, tw, cp, c1 = results[-1]
    share = host_share(cpu_before, cpu_times())
    if share is not None:  # with steal (vCPUs waiting for real ones) the wall ratios swing from run to run
        print(f"host during the timings: {share['busy']:.0%} busy, {share['steal']:.0%} steal")
    print(
        "\nsteps of the last run_checks (1 thread) at",
        n,
        "rows (s):",
        ", ".join(f"{k} {v:.3f}" for k, v in report.seconds.items()),
    )
    print("rejections by check:", report.by_check())
    per_row = [t1 / n for n, _, t1, *_ in results]
    print(
        f"run_checks time per row, largest / smallest over the sizes: {max(per_row) / min(per_row):.2f} (flat = linear)"
    )
    print(
        f"ratio to pandera-only at {n} rows (goal <= 2.5): wall {t1 / tp:.2f} on 1 thread, {tw / tp:.2f} on {workers};"
        f" CPU seconds on 1 thread {c1 / cp:.2f}"
    )
    if args.semantic_rows > 0:
        bench_semantic(augs, args.semantic_rows)


def bench_semantic(augs: pd.DataFrame, rows: int) -> None:
    """Time the semantic distinctness check on its own: model load, then a cold pass at two sizes."""
    t0 = time.perf_counter()
    semantic.load_model()
    print(f"\nsemantic distinctness (all-MiniLM-L6-v2, CPU): model load {time.perf_counter() - t0:.1f} s")
    print(f"{'rows':>8} {'premises':>9} {'seconds':>8} {'ms/premise':>11}  rejections")
    for n in (rows // 2, rows):
        a = augs.iloc[:n].reset_index(drop=True)
        k = int(a["kind"].eq("hallucinated").sum())
        semantic.clear_cache()
        t0 = time.perf_counter()
        out = semantic.semantic_distinctness(a)
        dt = time.perf_counter() - t0
        print(f"{n:>8} {k:>9} {dt:>8.2f} {dt / max(k, 1) * 1e3:>11.2f}  {len(out)}")


if __name__ == "__main__":
    main()

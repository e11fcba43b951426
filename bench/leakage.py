"""Split-leakage benchmark (validation/hr1_leakage.py): 10k, 50k and 200k training rows against a 15k-row
evaluation set. Goal: time per training row flat across sizes (largest / smallest <= 1.5: linear).

Texts are synthetic but question-like (SimpleQuestions-style templates over generated entity names),
deterministic from --seed; the training rows carry planted overlaps with the evaluation set (1% exact copies
with case/punctuation changed, 1% near-duplicates with one letter dropped (found by near_duplicate or
one_word_edit; those neither finds, e.g. a letter dropped from a 4-letter word, are reported as missed), 1% paraphrase rows whose source
question id is an evaluation id), and the run checks that every planted overlap is found.

Timed at each size (the evaluation side, the same at every size, is timed once and subtracted): the lexical and provenance checks (normalisation, vectorised MinHash, the MinHashLSH
index over the evaluation set built once and queried once per training row, exact-Jaccard verification),
and the semantic check's matrix part (``nearest_above``: chunked products with all evaluation rows) on
precomputed random unit vectors of MiniLM's dimension (384). Embedding 200k texts with MiniLM on 2 CPU cores
takes far too long for a benchmark, so real MiniLM throughput is measured on a small sample (--embed-sample)
and reported separately, in texts per second: the embedding cost is linear by construction (each distinct text
embedded once, in batches).

With the real files of ../shared/data (--data), it also prints the lexical checks' measurements
(validation/hr1_leakage_probe.py): one-word edits of TruthfulQA and SimpleQuestions questions caught with
``semantic=False`` (goal >= 19 of 20 each; and without the one_word_edit stage, for comparison) and the pairs
flagged among the distinct SimpleQuestions questions (goal: 0 false positives on >= 1,000).

The `reworded` stage (validation/hr1_reworded.py, with --data): recall on the packaged hand-written rewordings
of evaluation questions (validation/data/reworded_questions.jsonl) and on two sets not used to write the stage
(the curated Hallucination-R1-mini paraphrases, the test fixture of 23 paraphrases), hard negatives flagged, and
flags on the real training rows (the even rows of the SimpleQuestions test file against its odd rows, TruthfulQA
and the labelled questions), MiniLM alone vs with the stage (goal: recall >= 90 %, no flag on clean rows).

    python bench/leakage.py [--sizes 10000,50000,200000] [--eval-rows 15000] [--seed 0] [--embed-sample 512] [--repeat 2]
                            [--data ../shared/data] [--reworded-only]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import time
from pathlib import Path

import numpy as np

from phr.validation.hr1_leakage import LeakageConfig, TrainRow, find_leaks, nearest_above, normalize

TEMPLATES = [
    "where did {e} die",
    "what is the place of birth of {e}",
    "what position does {e} play",
    "what was the cause of death of {e}",
    "which film was directed by {e}",
    "what is an album recorded by {e}",
    "who was the architect of the structure {e}",
    "in what county is {e} found",
    "what is the profession of {e}",
    "which nationality is {e}",
    "what genre of music does {e} play",
    "who published the video game {e}",
]
SYL = "ba be bi bo ka ke ki ko la le li lo ma me mi mo na ne ni no ra re ri ro sa se si so ta te ti to va vi zu".split()


def entity(rng: random.Random) -> str:
    word = lambda: "".join(rng.choice(SYL) for _ in range(rng.randint(2, 4)))
    return " ".join(word() for _ in range(rng.randint(2, 3)))


def question(rng: random.Random) -> str:
    return rng.choice(TEMPLATES).format(e=entity(rng))


def make(n_train: int, n_eval: int, seed: int) -> tuple[list[TrainRow], list[tuple[str, str]], dict[str, str]]:
    """Training rows, evaluation (id, text) pairs and the planted overlaps {training row id: check}."""
    rng = random.Random(seed)
    evals = [(f"eval-{j}", question(rng)) for j in range(n_eval)]
    train, planted = [], {}
    for i in range(n_train):
        rid, r = f"train-{i}", rng.random()
        if r < 0.01:
            _, t = evals[rng.randrange(n_eval)]
            train.append(TrainRow(rid, t.upper() + "?", rid))
            planted[rid] = "exact"
        elif r < 0.02:
            _, t = evals[rng.randrange(n_eval)]
            k = max(range(len(t)), key=lambda x: (t[x] != " ", x % 7 == 3))
            train.append(TrainRow(rid, t[:k] + t[k + 1 :], rid))
            planted[rid] = "near_duplicate"
        elif r < 0.03:
            j = rng.randrange(n_eval)
            train.append(TrainRow(f"{rid}-p0", question(rng), evals[j][0]))
            planted[f"{rid}-p0"] = "provenance"
        else:
            train.append(TrainRow(rid, question(rng), rid))
    return train, evals, planted


def ratio(per_row: list[float]) -> float:
    return max(per_row) / min(per_row)


def real_data(data: Path, seed: int) -> None:
    """The lexical checks measured on the real files (printed; the test asserts the same numbers)."""
    from phr.builders.hr1_sources import load_simplequestions, load_truthfulqa
    from phr.validation.hr1_leakage_probe import caught_edits, false_positives

    if not (data / "truthfulqa").is_dir() or not (data / "simplequestions").is_dir():
        print(f"real-data measurements: skipped ({data} has no truthfulqa/ and simplequestions/)")
        return
    sources = {
        "TruthfulQA": [q.question for q in load_truthfulqa(data / "truthfulqa").questions],
        "SimpleQuestions": [q.question for q in load_simplequestions(data / "simplequestions").questions],
    }
    without = LeakageConfig(semantic=False, one_word_edits=False)
    for name, questions in sources.items():
        m, old = caught_edits(questions, 20, seed), caught_edits(questions, 20, seed, without)
        print(
            f"one-word edits of {name} questions caught (semantic=False): {m.caught} of {m.edits} "
            f"(without the one_word_edit stage: {old.caught} of {old.edits}) (goal >= 19)"
        )
    n, leaks = false_positives(sources["SimpleQuestions"])
    print(f"distinct SimpleQuestions questions, even vs odd: {n}; pairs flagged: {len(leaks)}")
    for x in leaks:
        print(f"  {x.check} {x.detail}: {x.text!r} / {x.eval_text!r}")


def _recall(rows: list[TrainRow], leaks, source: dict[str, str]) -> int:
    """Rows flagged against their own source question (``source``: row id -> question text; an evaluation set
    may hold the same question twice, e.g. a curated question is also a SimpleQuestions row)."""
    hit = {(x.row_id, normalize(x.eval_text)) for x in leaks}
    return sum((r.row_id, normalize(source[r.row_id])) in hit for r in rows)


def _held_out(repo: Path) -> tuple[dict, list[TrainRow]]:
    """Paraphrases the stage was not written with: the curated H-R1-mini paraphrases (consistent ones) and the
    test fixture's 23, each against its own question."""
    mini = [json.loads(x) for x in (repo / "builders" / "curated" / "hr1-mini.jsonl").read_text().splitlines() if x]
    fixture = [
        x.split("\t") for x in (repo / "tests" / "fixtures" / "hr1_leakage_paraphrases.tsv").read_text().splitlines()
    ]
    fixture = [x for x in fixture if len(x) == 3 and not x[0].startswith("#")]
    evals = {
        "hr1-mini": [(f"mini-{i}", r["question"]) for i, r in enumerate(mini)],
        "fixture": [(f"fixture-{i}", q) for i, (_, q, _) in enumerate(fixture)],
    }
    # the paraphrases of one question are one training question (one question id, not an evaluation id)
    rows = [TrainRow(f"mini-{i}/p{k}", p["text"], f"held-mini-{i}") for i, r in enumerate(mini)
            for k, p in enumerate(r["paraphrases"]) if p.get("text") and p.get("consistent")]  # fmt: skip
    rows += [TrainRow(f"fixture-{i}/p", p, f"held-fixture-{i}") for i, (_, _, p) in enumerate(fixture)]
    return evals, rows


def reworded(data: Path) -> None:
    """Recall and false flags of the semantic check alone vs with the reworded stage (printed)."""
    sq_file = data / "simplequestions" / "annotated_wd_data_test_answerable.txt"
    if not sq_file.is_file() or not (data / "truthfulqa" / "TruthfulQA.csv").is_file():
        print(f"reworded stage: skipped ({data} has no simplequestions/ and truthfulqa/)")
        return
    from phr.validation.hr1_reworded import labelled_pairs

    groups = labelled_pairs()
    labelled = {normalize(g["question"]) for g in groups}
    with sq_file.open(encoding="utf-8", newline="") as f:
        sq = [(i, " ".join(r[3].split())) for i, r in enumerate(csv.reader(f, delimiter="\t"))]
    with (data / "truthfulqa" / "TruthfulQA.csv").open(encoding="utf-8", newline="") as f:
        tqa = [r["Question"] for r in csv.DictReader(f)]
    evals = {
        "labelled": [(g["id"], g["question"]) for g in groups],
        "sq-test (odd rows)": [(f"sq-{i}", q) for i, q in sq if i % 2 and normalize(q) not in labelled],
        "truthfulqa": [(f"tqa-{i}", q) for i, q in enumerate(tqa) if normalize(q) not in labelled],
    }
    pos = [TrainRow(f"{g['id']}/s{k}", t, f"pos-{g['id']}") for g in groups for k, t in enumerate(g["same"])]
    neg = [TrainRow(f"{g['id']}/d{k}", d["text"], f"neg-{g['id']}-{k}") for g in groups for k, d in enumerate(g["different"])]  # fmt: skip
    clean = [TrainRow(f"sq-{i}", q, f"sq-{i}") for i, q in sq if i % 2 == 0 and normalize(q) not in labelled]
    held_evals, held = _held_out(Path(__file__).resolve().parents[1])
    question = {i: q for rows_ in (evals["labelled"], *held_evals.values()) for i, q in rows_}
    source = {r.row_id: question[r.row_id.split("/")[0]] for r in pos + held}
    rows, evals = pos + neg + clean + held, {**evals, **held_evals}
    timed = {}
    for name, cfg in (("MiniLM alone", LeakageConfig(reworded=False)), ("with the reworded stage", LeakageConfig())):
        t = time.perf_counter()
        timed[name] = (find_leaks(rows, evals, cfg), time.perf_counter() - t)
    before = {x.row_id for x in timed["MiniLM alone"][0]}
    print(f"reworded questions: {len(pos)} labelled rewordings of {len(groups)} questions, {len(neg)} hard negatives, "
          f"{len(clean)} SimpleQuestions even-row training questions, {len(held)} held-out paraphrases")  # fmt: skip
    for name, (leaks, dt) in timed.items():
        flagged = {x.row_id for x in leaks}
        stage = {x.row_id for x in leaks if x.check == "reworded"}
        ok_clean = [r for r in clean if r.row_id not in before]
        mini = [r for r in held if r.row_id.startswith("mini")]
        fix = [r for r in held if r.row_id.startswith("fixture")]
        print(
            f"  {name:<24} recall {_recall(pos, leaks, source)}/{len(pos)} ({_recall(pos, leaks, source) / len(pos):.1%}); "
            f"hard negatives flagged {sum(r.row_id in flagged for r in neg)} (by the stage {sum(r.row_id in stage for r in neg)}); "
            f"clean rows flagged {sum(r.row_id in flagged for r in clean)} of {len(clean)}, "
            f"of the {len(ok_clean)} that MiniLM and the lexical checks pass: {sum(r.row_id in flagged for r in ok_clean)}; "
            f"held out: H-R1-mini {_recall(mini, leaks, source)}/{len(mini)}, fixture {_recall(fix, leaks, source)}/{len(fix)} "
            f"({dt:.1f} s)"
        )  # fmt: skip
    for x in timed["with the reworded stage"][0]:
        if x.check == "reworded" and x.row_id in {r.row_id for r in clean + neg}:
            print(f"    flagged: {x.text!r} ~ {x.eval_text!r} ({x.detail})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,50000,200000")
    ap.add_argument("--eval-rows", type=int, default=15000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--embed-sample", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=2, help="best of N at each size")
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    ap.add_argument("--reworded-only", action="store_true", help="only the reworded stage's measurements")
    args = ap.parse_args()
    reworded(args.data)
    if args.reworded_only:
        return
    real_data(args.data, args.seed)
    sizes = [int(s) for s in args.sizes.split(",")]
    cfg = LeakageConfig(semantic=False)
    print(f"evaluation set: {args.eval_rows} rows; lexical + provenance checks (semantic matrix part below)")
    lex, sem = [], []
    rng = np.random.default_rng(args.seed)
    ev_vecs = rng.standard_normal((args.eval_rows, 384)).astype(np.float32)
    ev_vecs /= np.linalg.norm(ev_vecs, axis=1, keepdims=True)
    _, evals, _ = make(0, args.eval_rows, args.seed)
    find_leaks(make(200, 200, args.seed + 2)[0], {"warm-up": evals[:200]}, cfg)  # imports, first-call costs
    t = time.perf_counter()
    find_leaks([], {"eval": evals}, cfg)
    fixed = time.perf_counter() - t
    print(f"  evaluation side alone (normalise, MinHash, LSH index: built once per check): {fixed:.2f} s")
    for n in sizes:
        train, evals, planted = make(n, args.eval_rows, args.seed)
        dt = float("inf")
        for _ in range(args.repeat):  # best of --repeat (a shared machine's noise only ever adds time)
            t = time.perf_counter()
            leaks = find_leaks(train, {"eval": evals}, cfg)
            dt = min(dt, time.perf_counter() - t)
        found = {(x.row_id, "near_duplicate" if x.check == "one_word_edit" else x.check) for x in leaks}
        missed = [r for r, c in planted.items() if (r, c) not in found]
        lex.append((dt - fixed) / n)
        tv = rng.standard_normal((n, 384)).astype(np.float32)
        tv /= np.linalg.norm(tv, axis=1, keepdims=True)
        ds = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            nearest_above(tv, ev_vecs, LeakageConfig().semantic_threshold, LeakageConfig().chunk_rows)
            ds = min(ds, time.perf_counter() - t)
        sem.append(ds / n)
        print(
            f"  {n:>7} training rows: lexical {dt:7.2f} s (training side {(dt - fixed) / n * 1e6:6.1f} us/row), {len(leaks)} violations, "
            f"planted {len(planted)} missed {len(missed)} | semantic matrix {ds:6.2f} s ({ds / n * 1e6:6.1f} us/row)"
        )
    print(
        f"largest/smallest time per training row: lexical {ratio(lex):.2f}, semantic matrix {ratio(sem):.2f} (goal <= 1.5)"
    )
    from phr.llm.embed import embed, load_model

    load_model()
    sample = [question(random.Random(args.seed + 1)) + f" {i}" for i in range(args.embed_sample)]
    t = time.perf_counter()
    embed(sample)
    dt = time.perf_counter() - t
    print(f"MiniLM embedding (separate, real model): {len(sample) / dt:.0f} texts/s on this machine")


if __name__ == "__main__":
    main()

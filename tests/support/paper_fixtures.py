"""Synthetic source files in each benchmark's released format, sized for the paper recipe (tests only)."""

import csv
import json
from pathlib import Path

WORDS = (
    "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega rho tau phi chi psi nu xi mu eta "
    "iota omicron upsilon"
).split()


def _w(i: int, k: int = 3) -> str:
    return " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] + WORDS[(i + j) % len(WORDS)] for j in range(k))


def write_sources(root: Path, n: int = 60) -> Path:
    """Write bbbp, chembench, gpqa, medmcqa, mmlu, sciq and mbpp folders under ``root``; HumanEval is packaged."""
    (root / "bbbp").mkdir(parents=True)
    with open(root / "bbbp" / "BBBP.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\r\n")
        w.writerow(["num", "name", "p_np", "smiles"])
        for i in range(n):
            w.writerow([i + 1, f"synthmol{_w(i, 1)}", i % 2, "C" * (i % 7 + 1) + "O"])
    for i in range(n):
        d = root / "chembench" / "data" / "organic_chemistry"
        d.mkdir(parents=True, exist_ok=True)
        task = {
            "name": f"synthetic_task_{i}",
            "uuid": f"00000000-0000-4000-8000-{i:012d}",
            "description": "synthetic",
            "keywords": ["requires-knowledge"],
            "metrics": ["multiple_choice_grade"],
            "preferred_score": "multiple_choice_grade",
            "examples": [
                {
                    "input": f"SYNTHETIC ITEM {i}: which group does toy molecule {_w(i)} contain?",
                    "target_scores": {f"group{_w(i, 1)}": 1, f"other{_w(i + 1, 1)}": 0, f"third{_w(i + 2, 1)}": 0},
                }
            ],
        }
        (d / f"synthetic_task_{i}.json").write_text(json.dumps(task))
    (root / "gpqa").mkdir()
    with open(root / "gpqa" / "gpqa_main.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "Pre-Revision Question",
                "Question",
                "Correct Answer",
                "Incorrect Answer 1",
                "Incorrect Answer 2",
                "Incorrect Answer 3",
                "Explanation",
                "Subdomain",
                "Record ID",
                "High-level domain",
            ]
        )
        for dom, sub in (("Chemistry", "Organic Chemistry"), ("Biology", "Genetics"), ("Physics", "Physics (general)")):
            for i in range(25):
                w.writerow(
                    [
                        "(synthetic)",
                        f"SYNTHETIC {dom} ITEM {i}: explain the toy effect {_w(i)}.",
                        f"effect{_w(i, 2)}",
                        "wrong one",
                        "wrong two",
                        "wrong three",
                        "synthetic",
                        sub,
                        f"recSYNTH{dom[:4].upper()}{i:04d}",
                        dom,
                    ]
                )
    (root / "medmcqa").mkdir()
    with open(root / "medmcqa" / "train.json", "w") as f:
        for i in range(2 * n):
            f.write(
                json.dumps(
                    {
                        "question": f"SYNTHETIC ITEM {i}: which toy structure {_w(i)} is meant?",
                        "exp": "",
                        "cop": i % 4 + 1,
                        "opa": f"opa{_w(i, 1)}",
                        "opb": f"opb{_w(i, 1)}",
                        "opc": f"opc{_w(i, 1)}",
                        "opd": f"opd{_w(i, 1)}",
                        "subject_name": "Anatomy",
                        "topic_name": "Toy",
                        "id": f"synthetic-{i:04d}",
                        "choice_type": "single",
                    }
                )
                + "\n"
            )
    t = root / "mmlu" / "data" / "test"
    t.mkdir(parents=True)
    for subject, count in (("college_physics", 20), ("conceptual_physics", 40)):
        with open(t / f"{subject}_test.csv", "w", newline="") as f:
            w = csv.writer(f)
            for i in range(count):
                w.writerow(
                    [
                        f"SYNTHETIC {subject} ITEM {i}: the toy quantity {_w(i)} is",
                        f"a{_w(i, 1)}",
                        f"b{_w(i, 1)}",
                        f"c{_w(i, 1)}",
                        f"d{_w(i, 1)}",
                        "ABCD"[i % 4],
                    ]
                )
    (root / "sciq").mkdir()
    rows = [
        {
            "question": f"SYNTHETIC ITEM {i}: what drives toy process {_w(i)}?",
            "distractor3": f"d3{_w(i, 1)}",
            "distractor1": f"d1{_w(i, 1)}",
            "distractor2": f"d2{_w(i, 1)}",
            "correct_answer": f"right{_w(i, 1)}",
            "support": "",
        }
        for i in range(n)
    ]
    (root / "sciq" / "train.json").write_text(json.dumps(rows, indent=16))
    (root / "mbpp").mkdir()
    with open(root / "mbpp" / "mbpp.jsonl", "w") as f:
        for i in range(n):
            code = f"def synth_{i}(x):\r\n    return x + {i}"
            f.write(
                json.dumps(
                    {
                        "text": f"Write a function that adds {i} to a number.",
                        "code": code,
                        "task_id": 1000 + i,
                        "test_setup_code": "",
                        "test_list": [f"assert synth_{i}(1) == {i + 1}"],
                        "challenge_test_list": [],
                    }
                )
                + "\n"
            )
    return root

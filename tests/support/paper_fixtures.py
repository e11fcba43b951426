"""Synthetic source files in each benchmark's released format, sized for the paper recipe (tests only)."""

import csv
import hashlib
import json
import re
import threading
from collections import Counter
from collections.abc import Callable
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


def _words(seed: str, k: int) -> str:
    h = hashlib.sha256(seed.encode()).digest()
    return " ".join(WORDS[b % len(WORDS)] + WORDS[(b // 7) % len(WORDS)] for b in h[:k])


# Hallucinated claims of the paper responder: one question's premises differ in meaning (semantic
# distinctness is on for paper builds): a different predicate per sample, max pairwise MiniLM cosine 0.61 over
# 15 samples of 150 questions (threshold 0.85).
SUBJ = [
    "The enzyme",
    "Liquid water",
    "A copper wire",
    "The mitochondrion",
    "Sodium chloride",
    "The planet's orbit",
    "A neutron star",
    "The catalyst",
    "Blood plasma",
    "The polymer chain",
    "A photon",
    "The cell membrane",
    "Glucose",
    "The river delta",
    "An electron",
    "The hormone",
    "Quartz",
    "The magnetic field",
    "A virus",
    "The ozone layer",
    "The toy molecule",
    "The glacier",
    "A lithium battery",
    "The compound",
    "The protein",
]
PRED = [
    "doubles its mass when heated",
    "dissolves only in cold ethanol",
    "emits green light under pressure",
    "stops working below freezing",
    "is made mostly of iron atoms",
    "moves faster in a vacuum",
    "becomes acidic after one hour",
    "stores energy as sugar",
    "repels every magnet nearby",
    "grows longer in darkness",
    "loses its charge in sunlight",
    "carries oxygen to the brain",
    "turns into gas at room temperature",
    "conducts sound better than light",
    "splits into three identical parts",
    "absorbs all infrared radiation",
    "needs nitrogen to function",
    "shrinks when placed in salt water",
    "rotates once every second",
    "contains no carbon at all",
    "was first described by Aristotle",
    "weighs less than a hydrogen atom",
    "only forms on Tuesdays",
    "smells of burnt almonds",
    "cannot exist above sea level",
    "is produced by the liver",
    "freezes at ninety degrees Celsius",
    "travels backwards in time",
    "reflects only blue wavelengths",
    "decays into pure gold",
    "is twice as dense as lead",
    "hardens when exposed to music",
    "is found only in Antarctica",
    "doubles every ten minutes",
    "has exactly seven electrons",
    "was banned in the nineteenth century",
    "glows when it is touched",
    "is digested by plants at night",
    "turns red in strong magnetic fields",
    "costs more than platinum",
]


def claim(key: str, nth: int) -> str:
    """Sample ``nth`` of prompt ``key``: "<subject> <predicate>." with a predicate of its own per sample."""
    h = int(hashlib.sha256(key.encode()).hexdigest(), 16)
    return f"{SUBJ[(h // 41 + nth * 7) % len(SUBJ)]} {PRED[(h + nth) % len(PRED)]}."


def build_on_server(recipe: str | Path, out: Path, source_dir: Path | None, judge="openai:judge-model", **kw):
    """A PHRBench build with its generator (``openai:gpt-4o``) and judge on the protocol server, no progress bar;
    ``kw`` as ``build``'s (``skip_review=True``: the fast path, the judge during generation, which the builds these
    tests pin take)."""
    from phr.config.ops import BuildPhrbenchConfig
    from phr.ops.build_phrbench import build

    llm_options = kw.pop("llm_options", None)
    cfg = BuildPhrbenchConfig(
        recipe=str(recipe), out=out, generator="openai:gpt-4o", judge=judge, source_dir=source_dir, **kw
    )
    return build(cfg, progress=False, llm_options=llm_options)


def _judge(prompt: str, every: int = 13) -> str:
    """The judge: rejects ~1 in ``every`` hallucinated premises for type consistency."""
    return judge_reply(prompt, lambda premise: int(hashlib.sha256(premise.encode()).hexdigest(), 16) % every == 0)


def judge_reply(prompt: str, reject: Callable[[str], bool]) -> str:
    """The premise judge's JSON for a judge ``prompt``: every check passes, except that a hallucinated premise
    for which ``reject(premise)`` holds fails type consistency and is rejected."""
    premise = re.search(r"<premise>\n(.*?)\n</premise>", prompt, re.S).group(1)
    hall = "Mutation types:" in prompt
    bad = hall and reject(premise)
    return json.dumps(
        {
            "reason": "checked",
            "factual_validity": True,
            "relevance": True,
            "task_consistent": None if hall else True,
            "type_consistency": not bad if hall else None,
            "mutation_logic_consistent": True if hall else None,
            "plausible": True if hall else None,
            "single_claim": True if hall else None,
            "leaks_answer": False,
            "verdict": "reject" if bad else "accept",
        }
    )


def v0_responder():
    """A deterministic generator for the v0 prompts (they show the gold answer and fix the type): valid
    premises, except that the first answer to some prompts is not JSON (fixed by the re-ask) and the second
    sample of some hallucinated prompts leaks the gold answer (rejected, regenerated next round)."""
    seen: Counter = Counter()
    lock = threading.Lock()

    def respond(model, messages, k):
        prompt = messages[0][1]
        last = messages[-1][1]
        if "<premise>" in prompt:
            return _judge(prompt)
        key = hashlib.sha256(prompt.encode()).hexdigest()
        answer = re.search(r"do not reveal it\): (.*)", prompt).group(1)
        if len(messages) == 1 and k == 0 and int(key, 16) % 11 == 0:
            return "Sorry, here is my premise without JSON."
        with lock:  # the server's k restarts per seed; a counter per prompt keeps every sample distinct
            seen[key] += 1
            nth = seen[key]
        statement = f"The toy system obeys the {_words(key + str(nth), 6)} relation."
        if "Mutation type:" not in prompt:
            return json.dumps({"statement": statement, "truth_verification": "It follows from the toy rules."})
        if k == 1 and int(key, 16) % 5 == 0 and "re-ask" not in last:
            statement = f"The toy system gives {answer} here."
        return "Here you go: " + json.dumps(
            {"mutation_strategy": "swap", "mutation_logic": "It swaps one relation.", "statement": statement}
        )

    return respond


# What the paper-prompt generator writes as mutation_strategy (by a hash of the sample), and the type each
# names; None: malformed (rejected with the reason). Weighted towards RC and SD, like the paper's "emphasis".
PAPER_STRATEGIES = (
    ("Rule Contradiction", "Rule Contradiction"),
    ("rule-contradiction", "Rule Contradiction"),
    ("Rule Contradiction: reverses the governing rule", "Rule Contradiction"),
    ("State Distortion", "State Distortion"),
    ("state_distortion", "State Distortion"),
    ("SD", "State Distortion"),
    ("Pseudoscientific Entanglement", "Pseudoscientific Entanglement"),
    ("Type: Pseudo-scientific entanglement", "Pseudoscientific Entanglement"),
    ("RC", "Rule Contradiction"),
    ("swap one relation", None),
    ("State Distortion or Rule Contradiction", None),
)


def paper_responder(strategies=PAPER_STRATEGIES):
    """A deterministic generator for the paper prompts (base question only; it chooses the type): sample
    number n of a prompt names one of the valid ``strategies`` by a hash; about 1 in 9 first-round samples
    names a malformed one (rejected with the reason); code prompts (they carry the code instruction) get
    State Distortion, except some second samples, which choose Rule Contradiction (rejected). The second
    sample of some multiple-choice prompts names every candidate as the answer (rejected as leakage), and the first answer
    to some prompts is not JSON (fixed by the re-ask)."""
    seen: Counter = Counter()
    lock = threading.Lock()

    def respond(model, messages, k):
        prompt = messages[0][1]
        if "<premise>" in prompt:
            return _judge(prompt, every=29)
        key = hashlib.sha256(prompt.encode()).hexdigest()
        if len(messages) == 1 and k == 0 and int(key, 16) % 11 == 0:
            return "Sorry, here is my premise without JSON."
        with lock:
            seen[key] += 1
            nth = seen[key]
        h = int(hashlib.sha256(f"{key}:{nth}".encode()).hexdigest(), 16)
        statement = f"The toy system obeys the {_words(key + str(nth), 6)} relation."
        if "generate exactly one truthful augmentation" in prompt:
            return json.dumps({"statement": statement, "truth_verification": "It follows from the toy rules."})
        statement = claim(key, nth)
        candidates = re.search(r"Candidates: (.*)", prompt)
        if candidates and nth == 2 and int(key, 16) % 5 == 0:
            options = re.findall(r"\(\d+\) ([^;]*)", candidates.group(1))
            statement = f"The toy system says the answer is {' or the answer is '.join(options)}."
        valid = [name for name, mtype in strategies if mtype]
        if "Code Generation tasks take State Distortion only" in prompt:
            strategy = "Rule Contradiction" if nth == 2 and h % 3 == 0 else "State Distortion"
        elif nth <= 10 and h % 9 == 0:  # malformed, first round only (so that every slot fills)
            strategy = [name for name, mtype in strategies if not mtype][h % 2]
        else:
            strategy = valid[h % len(valid)]
        return json.dumps(
            {"mutation_strategy": strategy, "mutation_logic": "It swaps one relation.", "statement": statement}
        )

    return respond

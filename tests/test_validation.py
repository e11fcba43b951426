"""Rule-based validation (phr.validation): schemas, single mutation, distinctness, leakage, report.

Each rejection case is paired with a near miss that must pass; expected similarity values are worked out
by hand in the comments (word bigrams of the normalised text).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from phr.bench.records import Augmentation, BaseQuestion
from phr.core.report import Rejection, ValidationReport
from phr.validation.checks import (
    distinctness,
    enumeration_markers,
    leakage,
    numeric_value,
    parse_numbers,
    run_checks,
    single_mutation,
    split_sentences,
)
from phr.validation.config import ValidationConfig
from phr.validation.schemas import validate_frame
from phr.validation.textops import (
    Corpus,
    group_pair_similarity,
    lsh_candidates,
    lsh_params,
    normalize,
    oph_signatures,
    oph_similarity,
)
from tests.support.rows import aug, open_ended

# ---- builders -------------------------------------------------------------------------------------------

HEART_OPTIONS = ["the liver", "the lungs", "the kidneys", "the spleen"]


def mc(
    qid: str = "sciq-train-0",
    *,
    question: str | None = None,
    options: list[str] | None = None,
    gold: int = 1,
    domain: str = "Biomedicine",
) -> dict:
    options = options or HEART_OPTIONS
    q = open_ended(qid, question or "Where does blood pick up oxygen in mammals?", options[gold], domain)
    return q | dict(subtype="Physiology", task_type="multiple_choice", options=options, answer_index=gold)


SOLUTION = (
    "    for idx, elem in enumerate(numbers):\n"
    "        for idx2, elem2 in enumerate(numbers):\n"
    "            if idx != idx2:\n"
    "                distance = abs(elem - elem2)\n"
    "                if distance < threshold:\n"
    "                    return True\n"
    "\n"
    "    return False\n"
)
SIGNATURE = (
    "from typing import List\n\n\ndef has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
    '    """ Check if in given list of numbers, are any two numbers closer to each other than given threshold. """\n'
)


def code_question(qid: str = "humaneval-HumanEval-0") -> dict:
    """HumanEval/0: the signature is the question, the reference solution the answer."""
    code = dict(code_signature=SIGNATURE, code_tests="def check(candidate):\n    assert True\n")
    code |= dict(entry_point="has_close_elements", reference_solution=SOLUTION)
    return open_ended(qid, SIGNATURE, SOLUTION, domain="Code") | dict(
        source_row_id="HumanEval/0", license="MIT", subtype="Python", task_type="code", **code
    )


def frames(questions: list[dict], augs: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    return pd.DataFrame(questions), pd.DataFrame(augs)


def reasons(rejections: list[Rejection], row_id: str, check: str | None = None) -> list[str]:
    return [r.reason for r in rejections if r.row_id == row_id and (check is None or r.check == check)]


# ---- text helpers -------------------------------------------------------------------------------------------


def test_normalize_is_word_bounded_and_padded():
    assert normalize("The answer: (B) 9.8 m/s!") == " the answer b 9 8 m s "
    assert normalize("Ångström — “quoted”") == " ångström quoted "
    assert normalize("") == " "


def test_split_sentences_abbreviations_initials_decimals():
    assert split_sentences("Enzymes such as amylase (cf. Fig. 3) work best at pH 7. They denature above 40 °C.") == [
        "Enzymes such as amylase (cf. Fig. 3) work best at pH 7.",
        "They denature above 40 °C.",
    ]
    assert split_sentences("Dr. J. Smith measured 9.8 m/s². The value is approx. 10!") == [
        "Dr. J. Smith measured 9.8 m/s².",
        "The value is approx. 10!",
    ]
    assert len(split_sentences("Water boils. Ice sinks. Steam rises.")) == 3


def test_split_sentences_reads_the_word_before_a_break_as_re_does():
    # the word before a "." is the run of non-space characters up to it; like re's (\S+)$, a single newline
    # right before the "." is skipped ("Fig\n." is still the abbreviation), a space is not
    assert split_sentences("See Fig\n. 3 shows the curve.") == ["See Fig\n. 3 shows the curve."]
    assert split_sentences("See (e.g. Fig. 3) the curve. It rises.") == ["See (e.g. Fig. 3) the curve.", "It rises."]
    assert split_sentences("It is a . The next one.") == ["It is a .", "The next one."]
    assert split_sentences("Units are J. K is a unit.") == ["Units are J. K is a unit."]  # a one-letter initial


def test_enumeration_markers():
    assert enumeration_markers("Two facts hold: (1) water boils; (2) ice sinks") == ["(1)", "(2)"]
    assert enumeration_markers("Facts: 1. Water boils 2. Ice sinks") == ["1.", "2."]
    assert enumeration_markers("- water boils\n- ice sinks") == ["-", "-"]
    assert enumeration_markers("First, water boils. Second, ice sinks.") == ["first", "second"]
    assert enumeration_markers("Reaction (2) proceeds faster than reaction (5).") == []  # not a run 1, 2
    assert enumeration_markers("The yield rose by 5. Then it fell.") == []


def test_parse_numbers_and_numeric_answers():
    got = [n.value for n in parse_numbers("g = 9.80 m/s², CO2, H2O, 40 and 4, 1,000 kg, 3.2 x 10^5 J, 6.02e23, m/s^2")]
    assert got == [9.8, 40.0, 4.0, 1000.0, 320000.0, 6.02e23]
    assert numeric_value("9.8 m/s^2") == 9.8
    assert numeric_value("-40 °C") == -40.0  # the sign is read; leakage compares absolute values
    assert numeric_value("H2O") is None
    assert numeric_value("between 5 and 10") is None


# ---- single mutation: must reject ----------------------------------------------------------------------------


LIVER = "Blood is oxygenated in the liver."
CODE_ID = code_question()["id"]

# (augmentation, the reasons single_mutation gives it); the question is mc() or, for CODE_ID, code_question()
REJECTED = [
    (
        aug("h1", "Blood picks up oxygen in the liver. The liver has alveoli. Oxygen binds there."),
        [
            "hallucinated premise has 3 sentences (max 2): 'Blood picks up oxygen in the liver.' | "
            "'The liver has alveoli.' | 'Oxygen binds there.'"
        ],
    ),
    (
        aug("list", "Two facts hold: (1) blood is oxygenated in the liver (2) the heart has two chambers"),
        ["hallucinated premise is a list (2 enumeration markers: '(1)', '(2)')"],
    ),
    (
        aug("bullets", "- Blood is oxygenated in the liver\n- The heart has two chambers"),
        ["hallucinated premise is a list (2 enumeration markers: '-', '-')"],
    ),
    (
        aug("chain", "Blood is oxygenated in the liver; the heart has two chambers; veins carry oxygenated blood"),
        ["hallucinated premise chains 3 statements with '; ' (max 1 separator)"],
    ),
    (
        aug("additionally", "Blood is oxygenated in the liver. Additionally, the heart has two chambers."),
        ["hallucinated premise joins independent claims with 'additionally'"],
    ),
    # mutation_logic naming two errors, or none
    (
        aug("two", LIVER, logic="Introduced two errors: swapped the organ and the gas."),
        ["mutation_logic names more than one error ('two errors')"],
    ),
    (
        aug("numbered", LIVER, logic="1. Swapped lungs for liver. 2. Changed oxygen to nitrogen."),
        ["mutation_logic names more than one error ('an enumeration 1. / 2.')"],
    ),
    (
        aug("also", LIVER, logic="Swapped lungs for liver and also changed the gas."),
        ["mutation_logic names more than one error ('also changed')"],
    ),
    (aug("none", LIVER, logic=None), ["hallucinated premise has no mutation_logic naming its error"]),
    # the mutation fields: a code premise, an unknown type, none, a truthful premise with one
    (
        aug(
            "code-rc",
            "The function sorts the list before comparing neighbours.",
            qid=CODE_ID,
            mutation_type="Rule Contradiction",
        ),
        ["code question premise has mutation_type 'Rule Contradiction'; Code allows only State Distortion"],
    ),
    (
        aug("bogus", LIVER, mutation_type="Wishful Thinking"),
        [
            "mutation_type 'Wishful Thinking' is not one of Pseudoscientific Entanglement, Rule Contradiction, "
            "State Distortion"
        ],
    ),
    (aug("untyped", LIVER, mutation_type=None), ["hallucinated premise has no mutation_type"]),
    (
        {**aug("t-typed", "Blood is oxygenated in the lungs.", kind="truthful"), "mutation_type": "State Distortion"},
        ["truthful premise has mutation fields set (mutation_type)"],
    ),
]


@pytest.mark.parametrize(("row", "expected"), REJECTED, ids=[row["id"] for row, _ in REJECTED])
def test_single_mutation_rejects(row, expected):
    q, a = frames([mc(), code_question()], [row])
    assert reasons(single_mutation(a, q), row["id"]) == expected


# ---- single mutation: near misses that must pass ----------------------------------------------------------------


def test_single_mutation_near_misses_pass():
    code = code_question()
    q, a = frames(
        [mc(), code],
        [
            # two sentences with max 2; "e.g." and "cf. Fig." are not breaks
            aug(
                "two", "Blood is oxygenated in the liver, e.g. in its sinusoids. The liver (cf. Fig. 2) holds alveoli."
            ),
            # "in addition to" is a preposition, a lone "(2)" is no list, one "; " is allowed
            aug("prep", "In addition to the liver, reaction (2) oxygenates blood; the lungs only filter it."),
            # a single error explained at length
            aug(
                "logic",
                "Blood is oxygenated in the liver.",
                logic="Replaced the lungs with the liver, which contradicts the anatomy of gas exchange.",
            ),
            aug("code-sd", "The function compares only neighbouring numbers after sorting.", qid=code["id"]),
            aug("t", "Blood is oxygenated in the lungs.", kind="truthful"),
        ],
    )
    assert single_mutation(a, q) == []


def test_max_sentences_is_configurable():
    q, a = frames([mc()], [aug("h1", "Blood picks up oxygen in the liver. The liver has alveoli. Oxygen binds there.")])
    assert single_mutation(a, q, ValidationConfig.from_dict({"single_mutation": {"max_sentences": 3}})) == []


# ---- distinctness -------------------------------------------------------------------------------------------------

BASE = "The heart pumps blood through the lungs to collect oxygen before returning it to the body."
# a question none of whose options appears in the BASE sentences
METAL = "sciq-train-5"


def metal_question() -> dict:
    return mc(METAL, question="Which metal binds oxygen in haemoglobin?", options=["copper", "iron", "zinc", "cobalt"])


def test_rejects_near_paraphrases():
    # 16 words -> 15 distinct bigrams; "the body" -> "the whole body" swaps 1 bigram for 2:
    # shared 14, union 15 + 2 = 17, Jaccard 14 / 17 = 0.82 >= 0.8
    _, a = frames(
        [],
        [
            aug("h1", BASE),
            aug("h2", BASE.replace("the body", "the whole body")),
            aug("h3", "The heart has three chambers."),
        ],
    )
    out = distinctness(a)
    assert out == [
        Rejection(
            "h2",
            "distinctness",
            "hallucinated premises h1 and h2 of question sciq-train-0 are near-paraphrases (Jaccard 0.82 >= 0.8 on word 2-grams)",
        )
    ]


def test_same_topic_different_errors_pass():
    # same sentence, different one-word errors: "collect nitrogen" changes 2 bigrams, "the liver" 2 others:
    # shared 15 - 4 = 11, union 15 + 4 = 19, Jaccard 11 / 19 = 0.58 < 0.8
    a1 = BASE.replace("oxygen", "nitrogen")
    a2 = BASE.replace("the lungs", "the liver")
    a3 = "The heart has three chambers and pumps blood directly to the brain."
    _, a = frames([], [aug("h1", a1), aug("h2", a2), aug("h3", a3), aug("other-q", a1, qid="sciq-train-1")])
    assert distinctness(a) == []  # also: the same text under another question is not compared


def test_lsh_finds_pairs_at_threshold_linear_buckets():
    # 400 questions x 2 premises with Jaccard exactly 20 / 28 = 0.714 (pairs far below 0.8 are not needed) and
    # 400 x 2 with 26 / 28 = 0.929 (must all be found)
    rng = np.random.default_rng(0)
    hashes, rows, groups = [], [], []
    for g in range(800):
        common = rng.integers(0, 2**63, 20 if g < 400 else 26, dtype=np.uint64)
        extra = 4 if g < 400 else 1
        for r in range(2):
            s = np.concatenate([common, rng.integers(0, 2**63, extra, dtype=np.uint64)])
            hashes.append(s)
            rows.append(np.full(len(s), 2 * g + r))
            groups += [g]
    from phr.validation.textops import _mix

    h = _mix(np.concatenate(hashes))
    r = np.concatenate(rows)
    sig = oph_signatures(h, r, 1600, 32)
    bands, per = lsh_params(0.8, 32)
    pairs = {tuple(p) for p in lsh_candidates(sig, np.asarray(groups), bands, per).tolist()}
    high = {(2 * g, 2 * g + 1) for g in range(400, 800)}
    assert high <= pairs
    assert all(a // 2 == b // 2 for a, b in pairs)  # only pairs within a group


@pytest.mark.parametrize("grouped", [False, True], ids=["shuffled", "grouped"])
@pytest.mark.parametrize("num_perm", [32, 20])
def test_group_pairs_score_every_pair_in_a_group(grouped, num_perm):
    # groups of 1..5 rows, shuffled or in group order (no sort), signatures of whole words of bins (32) or
    # not (20): every in-group pair once, (i < j) sorted, with the estimate oph_similarity gives; pairs LSH
    # banding finds are among them; a group above max_group -> None
    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(5), np.arange(1, 6))
    groups = groups if grouped else rng.permutation(groups)
    sig = oph_signatures(rng.integers(0, 2**63, 300, dtype=np.uint64), rng.integers(0, 15, 300), 15, num_perm)
    sig[groups == 4] = sig[np.flatnonzero(groups == 4)[0]]  # group 4: five identical rows
    a3, b3 = np.flatnonzero(groups == 3)[:2]
    sig[b3, : num_perm // 2] = sig[a3, : num_perm // 2]  # group 3's first two rows: half of their bins agree
    pairs, est = group_pair_similarity(sig, groups)
    expected = [(i, j) for i in range(15) for j in range(i + 1, 15) if groups[i] == groups[j]]
    assert pairs.tolist() == [list(p) for p in expected]  # 0 + 1 + 3 + 6 + 10 = 20 pairs
    assert len(expected) == 20
    assert np.allclose(est, oph_similarity(sig, pairs[:, 0], pairs[:, 1]))
    assert (est[groups[pairs[:, 0]] == 4] == 1.0).all()
    assert 0.2 < est[expected.index(tuple(sorted((a3, b3))))] < 0.8  # the bins are counted, not all-or-nothing
    lsh = {tuple(p) for p in lsh_candidates(sig, groups, *lsh_params(0.8, num_perm)).tolist()}
    assert lsh <= set(expected)
    assert group_pair_similarity(sig, groups, max_group=4) is None


def test_blocks_are_balanced_over_the_workers():
    from phr.validation.checks import _balanced_block_rows

    assert _balanced_block_rows(100_000, 32768, 2) == 25_000  # 4 x 25k, not 3 x 32768 + 1.7k
    assert _balanced_block_rows(100_000, 32768, 1) == 25_000  # 4 blocks either way
    assert _balanced_block_rows(25_000, 32768, 2) == 12_500  # one block per worker
    assert _balanced_block_rows(25_000, 32768, 1) == 25_000
    assert _balanced_block_rows(5_000, 32768, 2) == 5_000  # blocks under 8192 rows are not worth a thread
    assert _balanced_block_rows(120, 9, 3) == 9  # small blocks asked for stay small
    assert _balanced_block_rows(0, 32768, 2) == 32768


def test_report_is_the_same_on_any_number_of_threads():
    qs = [mc(f"sciq-train-{i}", options=["copper", "iron", "zinc", "cobalt"]) for i in range(40)]
    rows = []
    for i in range(40):
        rows.append(aug(f"q{i}-h0", BASE, qid=f"sciq-train-{i}"))
        rows.append(aug(f"q{i}-h1", BASE.replace("the body", "the whole body"), qid=f"sciq-train-{i}"))
        rows.append(
            aug(f"q{i}-h2", f"Species {i} stores iron in the liver, so the answer is (B).", qid=f"sciq-train-{i}")
        )
    q, a = frames(qs, rows)
    one = run_checks(q, a, block_rows=9, workers=1)
    three = run_checks(q, a, block_rows=9, workers=3)
    assert one.rejections == three.rejections
    assert one.by_check() == {"distinctness": 40, "leakage": 40}


def test_code_premise_quoting_solution_tokens_needs_code_punctuation_or_a_call():
    # the token-run rule applies to code-looking premises only: "f(x" or "=", not prose naming the tokens
    from phr.validation.checks import _CODE_LIKE
    from phr.validation.textops import regex_mask

    texts = [
        "return total + x",
        "calls helper(x) first",
        "uses x = 3",
        "a list [1, 2]",
        "the (first) item",
        "é(",
        "x (",
    ]
    assert regex_mask(pa.array(texts), _CODE_LIKE).tolist() == [False, True, True, True, False, True, False]


# ---- leakage: must reject --------------------------------------------------------------------------------------------


def test_rejects_gold_option_text():
    q, a = frames([mc()], [aug("t1", "Blood returns to the heart after passing through the lungs.", kind="truthful")])
    assert reasons(leakage(q, a), "t1") == ["truthful premise reveals the gold answer text 'the lungs'"]


def test_rejects_gold_label_references():
    q, a = frames(
        [mc(gold=1), mc("sciq-train-1", gold=2)],
        [
            aug("h1", "Since the correct answer is (2), blood is oxygenated in the liver."),
            aug("h2", "Everyone agrees on option C: blood is oxygenated in the liver.", qid="sciq-train-1"),
            aug("h3", "Blood is oxygenated in the liver, so the answer is (4).", qid="sciq-train-1"),
        ],
    )
    out = leakage(q, a)
    assert reasons(out, "h1") == ["premise reveals the gold label '2' ('correct answer is (2)')"]
    assert reasons(out, "h2") == ["premise reveals the gold label 'C' ('option C')"]
    assert reasons(out, "h3") == ["premise refers to answer candidate '4' ('answer is (4)')"]


def test_rejects_numeric_answer_in_other_notation():
    q, a = frames(
        [open_ended("sciq-train-7", "What is the acceleration due to gravity near Earth's surface, in m/s^2?", "9.8")],
        [
            aug(
                "h1",
                "Near the surface every object accelerates at 9.80 m/s² only when dropped in a vacuum.",
                qid="sciq-train-7",
            )
        ],
    )
    assert reasons(leakage(q, a), "h1") == ["premise states the numeric answer '9.8' as '9.80'"]


def test_rejects_code_premise_quoting_the_solution():
    code = code_question()
    q, a = frames(
        [code],
        [
            aug(
                "line", "It computes distance = abs(elem - elem2) for each pair but skips equal values.", qid=code["id"]
            ),
            # no full solution line (>= 20 chars) here, but a run of 10 solution tokens across two lines
            aug("tokens", "It checks `if idx != idx2: distance = abs(elem` only once.", qid=code["id"]),
        ],
    )
    out = leakage(q, a)
    assert reasons(out, "line") == ["premise quotes the reference solution line 'distance = abs(elem - elem2)'"]
    assert reasons(out, "tokens") == [
        "premise quotes 10 consecutive tokens of the reference solution 'if idx ! = idx2 : distance = abs ('"
    ]


def test_rejects_truthful_premise_carrying_a_hallucinated_statement():
    h = "The heart pumps blood through the lungs to collect nitrogen before returning it to the body."
    q, a = frames(
        [metal_question()],
        [
            aug("t1", "Blood returns to the heart through veins. " + h, kind="truthful", qid=METAL),
            aug("h1", h, qid=METAL),
        ],
    )
    # h1 has 15 bigrams, none in the question text, all 15 in t1
    assert leakage(q, a) == [
        Rejection(
            "t1",
            "leakage",
            "truthful premise contains hallucinated premise h1: 15/15 (100%) of its word 2-grams (outside the question) are in the truthful statement",
        )
    ]


# ---- leakage: near misses that must pass ------------------------------------------------------------------------------


def test_leakage_near_misses_pass():
    paris = mc(
        "mmlu-geo-1",
        question="Which city hosts the Louvre museum?",
        options=["Lyon", "Paris", "Nice", "Lille"],
        domain="Physics",
    )
    fours = mc("mmlu-chem-2", question="How many valence electrons does carbon have?", options=["2", "4", "6", "8"])
    shown = open_ended(
        "sciq-train-8", "Water boils at 100 °C at sea level. At what temperature in °C does it boil there?", "100"
    )
    oxygen = mc(
        "sciq-train-9", question="Which gas do plants release?", options=["liquid oxygen", "oxygen", "helium", "argon"]
    )
    code = code_question()
    q, a = frames(
        [mc(), metal_question(), paris, fours, shown, oxygen, code],
        [
            # "Parisian" is not the word "Paris"
            aug("paris", "Parisian architecture was designed by engineers from Lyon's observatory.", qid="mmlu-geo-1"),
            # "4" only inside "40"
            aug("forty", "Carbon atoms hold 40 electrons in their outer shell.", qid="mmlu-chem-2"),
            # the gold number (100) is in the question already
            aug("shown", "At sea level water boils at 100 °C only in copper pots.", qid="sciq-train-8"),
            # "oxygen" inside another candidate ("liquid oxygen")
            aug("liquid", "Plants release liquid oxygen through their roots.", qid="sciq-train-9"),
            # a lone "(2)" that is no answer label, and a description of the code in words
            aug("eq", "Reaction (2) shows that blood is oxygenated in the liver."),
            aug(
                "words",
                "The function returns True as soon as two numbers are closer than the threshold.",
                qid=code["id"],
            ),
            # a truthful premise that one hallucinated premise edits (one word): not carried
            aug("t", BASE, kind="truthful", qid=METAL),
            aug("h", BASE.replace("oxygen", "nitrogen"), qid=METAL),
        ],
    )
    assert leakage(q, a) == []


def test_a_number_the_question_states_within_the_absolute_tolerance_is_no_leak():
    # 1e-13 is within the absolute tolerance (1e-12) of the 0 the question states: the number reveals nothing,
    # though no digit of the question is the answer's first significant digit
    q, a = frames(
        [open_ended("sciq-train-8", "Is the residual 0 after the fit?", "1e-13")],
        [aug("says", "The residual after the fit is 1e-13.", qid="sciq-train-8")],
    )
    assert reasons(leakage(q, a), "says") == []
    q2, _ = frames([open_ended("sciq-train-8", "Is the residual small after the fit?", "1e-13")], [])
    assert reasons(leakage(q2, a), "says") == ["premise states the numeric answer '1e-13' as '1e-13'"]


def test_numeric_tolerance_boundary():
    q, a = frames(
        [open_ended("sciq-train-7", "What is g near Earth's surface, in m/s^2?", "9.8")],
        [
            aug(
                "far", "Objects fall at 9.9 m/s² near the poles.", qid="sciq-train-7"
            ),  # |9.9 - 9.8| / 9.9 = 1.0% > 0.5%
            aug("near", "Objects fall at 9.81 m/s² near the poles.", qid="sciq-train-7"),  # 0.1% <= 0.5%
        ],
    )
    out = leakage(q, a)
    assert reasons(out, "far") == []
    assert reasons(out, "near") == ["premise states the numeric answer '9.8' as '9.81'"]


# ---- schemas ---------------------------------------------------------------------------------------------------------------


def test_schema_rejections_name_rows():
    a = pd.DataFrame(
        [
            aug("a1", "Blood is oxygenated in the lungs.", kind="truthful"),
            {**aug("a2", "Blood is oxygenated in the liver."), "kind": "hallucinate"},
            aug("a1", "Blood is oxygenated in the spleen."),
            {**aug("a4", "   "), "question_id": "sciq train 0"},
            {**aug("a5", "Blood is oxygenated in the kidneys."), "generator": None},
        ]
    )
    out = validate_frame(a, "augmentations")
    assert {(r.row_id, r.reason) for r in out} == {
        ("a1", "column 'id': duplicate value 'a1'"),
        ("a2", "column 'kind': value 'hallucinate' fails isin(['truthful', 'hallucinated'])"),
        ("a4", "column 'statement': empty text"),
        ("a4", "column 'question_id': value 'sciq train 0' does not match the id format ^[a-z0-9][a-z0-9_]*-[^\\s/]+$"),
        ("a5", "column 'generator': missing value (null) in a required field"),
    }
    assert {r.check for r in out} == {"schema:augmentations"}


def instance_row(iid: str, condition: str, **fields) -> dict:
    """An instance row of question sciq-train-0 without a premise, ``fields`` set over it."""
    return (
        dict(
            id=iid,
            question_id="sciq-train-0",
            condition=condition,
            domain="Biomedicine",
            subtype="x",
            task_type="multiple_choice",
            prompt="Question: ...",
            premise=None,
            augmentation_id=None,
            mutation_type=None,
        )
        | fields
    )


def test_schema_questions_and_instances():
    bad_mc = {**mc("sciq-train-1"), "answer": "the liver"}  # options[1] is "the lungs"
    code = {**code_question(), "reference_solution": None}
    out = validate_frame(pd.DataFrame([mc(), bad_mc, code]), "questions")
    assert [(r.row_id, r.reason) for r in out] == [
        ("sciq-train-1", "multiple-choice row needs >= 2 options and options[answer_index] == answer"),
        (
            "humaneval-HumanEval-0",
            "domain Code must go with task_type code, which needs entry_point and reference_solution",
        ),
    ]
    inst = pd.DataFrame(
        [
            instance_row("i-b", "B"),
            instance_row("i-h", "B+H", prompt="Premise: P\n\nQuestion: ...", premise="P", augmentation_id="a2"),
            instance_row("i-x", "B-T"),
        ]
    )
    out = validate_frame(inst, "instances")
    assert (
        "i-h",
        "condition B has no premise/augmentation/mutation_type, B+T has premise and augmentation but no mutation_type, B+H has all three",
    ) in {(r.row_id, r.reason) for r in out}
    assert ("i-x", "column 'condition': value 'B-T' fails isin(['B', 'B+T', 'B+H'])") in {
        (r.row_id, r.reason) for r in out
    }
    assert not [r for r in out if r.row_id == "i-b"]
    assert Rejection("<instances>", "schema:instances", "missing column 'prompt'") in validate_frame(
        inst.drop(columns=["prompt"]), "instances"
    )


def test_records_round_trip_through_the_schemas():
    q = BaseQuestion(**mc())
    a = Augmentation(**aug("sciq-train-0-H1", "Blood is oxygenated in the liver."))
    report = run_checks([q], [a])
    assert report.ok, report.render()


# ---- composition and report ------------------------------------------------------------------------------------------------


def test_run_checks_composes_and_reports():
    q, a = frames(
        [mc()],
        [
            aug("t1", "Blood is oxygenated in the lungs.", kind="truthful"),
            aug("h1", "Blood is oxygenated in the liver. It has alveoli. They bind oxygen."),
            aug("h2", "Blood is oxygenated in the kidneys.", qid="sciq-train-404"),
            {**aug("h3", "Blood is oxygenated in the spleen."), "kind": "maybe"},
        ],
    )
    report = run_checks(q, a)
    assert not report.ok
    assert report.by_check() == {"leakage": 1, "single_mutation": 1, "schema:augmentations": 1, "reference": 1}
    assert report.rejected_ids() == {"t1", "h1", "h2", "h3"}
    assert report.rejected_ids("schema") == {"h3"}
    text = report.render()
    assert text.splitlines()[0] == "validation FAILED: 4 rejection(s) on 4 row(s) (1 questions, 4 augmentations)"
    assert "h2\n    [reference] question_id 'sciq-train-404' names no question" in text
    data = json.loads(report.to_json())
    assert data["ok"] is False and len(data["rejections"]) == 4
    assert ValidationReport.from_json(report.to_json()).rejections == report.rejections


def test_blocks_give_the_same_result_as_one_pass():
    # premises of one question spread over the frame: blocks regroup them
    qs = [mc(f"sciq-train-{i}", options=["copper", "iron", "zinc", "cobalt"]) for i in range(30)]
    rows = []
    for k in range(3):
        for i in range(30):
            text = BASE if k < 2 else f"Blood of species {i} is oxygenated in the liver."
            rows.append(
                aug(f"q{i}-h{k}", text.replace("the body", "the whole body") if k == 1 else text, qid=f"sciq-train-{i}")
            )
    q, a = frames(qs, rows)
    one = run_checks(q, a, block_rows=10**6)
    many = run_checks(q, a, block_rows=7)
    assert sorted(one.rejections, key=repr) == sorted(many.rejections, key=repr)
    assert one.by_check() == {"distinctness": 30}


def test_config_from_dict_rejects_unknown_keys():
    with pytest.raises(ValueError, match="unknown leakage setting"):
        ValidationConfig.from_dict({"leakage": {"no_such_thing": 1}})
    with pytest.raises(ValueError, match="unknown validation section"):
        ValidationConfig.from_dict({"lekage": {}})
    cfg = ValidationConfig.from_dict(
        {"distinctness": {"threshold": 0.5}, "single_mutation": {"additive_connectives": ["also"]}}
    )
    assert cfg.distinctness.threshold == 0.5 and cfg.single_mutation.additive_connectives == ("also",)


def test_corpus_words_hash_equal_words_equally():
    c = Corpus(["Mitochondria produce ATP", "ATP is made by mitochondria", "", None, "photosynthesis photosynthetic"])
    h, rows = c.words
    words = " ".join(c.norm).split()
    assert len(words) == len(h)
    by_word: dict[str, set[int]] = {}
    for w, x in zip(words, h.tolist(), strict=True):
        by_word.setdefault(w, set()).add(x)
    assert all(len(v) == 1 for v in by_word.values())
    assert len({next(iter(v)) for v in by_word.values()}) == len(by_word)
    assert rows.tolist() == [0, 0, 0, 1, 1, 1, 1, 1, 4, 4]


@pytest.mark.parametrize(
    "texts",
    [
        ["Blood: (B) 9.8 m/s!", "", "ATP\x00synthase  binds", "  x  ", "Fe2+ ions"],  # ASCII, a NUL, an empty row
        ["", ""],
        ["one"],
        ["Caf\u00e9 \u2014 na\u00efve", "plain"],  # non-ASCII: the texts' path
        ["a", None, "b"],  # a null: the texts' path
    ],
)
def test_corpus_from_arrow_alone_is_the_corpus_of_its_texts(texts):
    import pyarrow as pa

    want = Corpus(texts)
    for arr in (
        pa.array(texts, pa.string()),
        pa.array(texts, pa.large_string()),
        pa.chunked_array([pa.array(texts[:1], pa.string()), pa.array(texts[1:], pa.string())]),
        pa.array(["zzz", *texts], pa.string()).slice(1),  # an offset into the buffers
    ):
        got = Corpus(arrow=arr)
        fast = all(t is not None and t.isascii() for t in texts)
        assert (got._arrow_translated() is not None) == fast  # ASCII without nulls: straight from the buffers
        assert got.norm_bytes[0].tobytes() == want.norm_bytes[0].tobytes()
        assert got.norm_joined[0] == want.norm_joined[0] and got.norm_joined[1].tolist() == want.norm_joined[1].tolist()
        assert [x.tolist() for x in got.words] == [x.tolist() for x in want.words]
        assert got.texts_of(np.arange(got.n)[::-1]) == [t or "" for t in texts][::-1]
        assert got.texts == [t or "" for t in texts]


def test_corpus_longest_words_are_the_first_longest_of_each_row():
    texts = ["Mitochondria produce ATP", "", "ab cd ef", None, "a bb cc d", "x", "Oxidative phosphorylation"]
    c = Corpus(texts)
    h, rows = c.longest_words()
    expected = {r: max(n.split(), key=len) for r, n in enumerate(c.norm) if n.split()}
    assert rows.tolist() == sorted(expected) == [0, 2, 4, 5, 6]
    assert h.tolist() == Corpus([expected[r] for r in rows.tolist()]).words[0].tolist()  # hashed as `words` does
    assert expected[2] == "ab" and expected[4] == "bb"  # the first of equal length


def test_robust_to_object_columns_missing_columns_and_empty_frames():
    q, a = frames(
        [mc()],
        [
            aug("t1", "Blood is oxygenated in the alveoli.", kind="truthful"),
            aug("h1", "Blood is oxygenated in the liver. It has alveoli. They bind oxygen."),
        ],
    )
    expected = run_checks(q, a).rejections
    assert run_checks(q.astype(object), a.astype(object)).rejections == expected
    slim = a.drop(columns=["truth_verification", "mutation_strategy"])
    assert run_checks(q, slim).rejections == expected
    empty = run_checks(q.iloc[:0], a.iloc[:0])
    assert empty.ok
    no_ids = a.assign(id=[None, None])
    out = run_checks(q, no_ids, schemas=False)
    assert [r.row_id for r in out] == ["<augmentations>[1]"]
    for dtype in ("string", "str"):  # string columns are read through Arrow: a null id is no id there either
        out = run_checks(q, a.assign(id=pd.Series(["t1", None], dtype=dtype)), schemas=False)
        assert [r.row_id for r in out] == ["<augmentations>[1]"]


def test_statement_none_and_nan_do_not_crash():
    q, a = frames([mc()], [aug("h1", "Blood is oxygenated in the liver."), {**aug("h2", "x"), "statement": None}])
    report = run_checks(q, a)
    assert report.rejected_ids("schema") == {"h2"}


def test_char_shingles_option():
    cfg = ValidationConfig.from_dict({"distinctness": {"shingle": "char", "shingle_size": 5}})
    _, a = frames(
        [],
        [aug("h1", BASE), aug("h2", BASE.replace("the body", "the body!")), aug("h3", "The heart has three chambers.")],
    )
    out = distinctness(a, cfg)
    assert [(r.row_id, r.reason.split(" (")[0]) for r in out] == [
        ("h2", "hallucinated premises h1 and h2 of question sciq-train-0 are near-paraphrases")
    ]
    assert "Jaccard 1.00 >= 0.8 on char 5-grams" in out[0].reason


def test_the_label_and_list_pre_filters_never_hide_what_the_python_patterns_find():
    """The RE2 superset of the label pattern (no lookahead; any text beyond printable ASCII passes) and the
    substring guards of enumeration_markers: on texts built from label phrases, markers, Unicode look-alikes
    ("ſ", "ı", Arabic digits) and odd whitespace, every text the Python label pattern matches passes the RE2
    pass, and the guarded enumeration_markers gives what its patterns alone give."""
    import random

    from phr.validation import checks as C
    from phr.validation.textops import regex_mask

    rng = random.Random(3)
    pieces = ["the answer is", "correct option", "choice", "answers:", "best candidate #", "(B)", "B", "b", "(3)", "3",
              "3.5", "B,2", "is the correct", "(c) is the answer", "was", "no.", "=", ":", "ſ", "optıon", "İ", "٣",
              "\x1c", "\x0b", "\u00a0", "\t", "\n", " ", "  ", ".", ",", "x", "first,", "Second,", "(1)", "(2)", "1.",
              "2.", "\u2022", "ii)", "café", "Answer", "OPTION", "ſecond,", "laſtly,"]  # fmt: skip
    texts = [
        "".join(rng.choice(pieces) + rng.choice(["", " "]) for _ in range(rng.randint(1, 10))) for _ in range(20_000)
    ]
    mask = regex_mask(pa.array(texts), C._LABEL_RE2)
    found = [bool(list(C._LABEL.finditer(t))) for t in texts]
    assert sum(found) > 3_000  # the pieces make many labels
    assert not [t for t, f, m in zip(texts, found, mask, strict=True) if f and not m]
    assert sum(mask) < len(texts)  # and the pre-filter does filter

    def markers_unguarded(text):
        lines = [m.group(0).strip()[:-1].strip() for m in C._LINE_MARKER.finditer(text)]
        if len(lines) >= 2:
            return lines
        paren = C._consecutive_run([(m.group(1), m.group(0).strip()) for m in C._INLINE_PAREN.finditer(text)])
        dot = C._consecutive_run([(m.group(1), m.group(0).strip()) for m in C._INLINE_DOT.finditer(text)])
        ordinals = list(dict.fromkeys(m.group(1).lower() for m in C._ORDINAL.finditer(text)))
        bullets = [m.group(1) for m in C._INLINE_BULLET.finditer(text)]
        best = max((paren, dot, ordinals, bullets, lines), key=len)
        return best if len(best) >= 2 else (lines if lines else [])

    listed = [t for t in texts if markers_unguarded(t)]
    assert len(listed) > 1_000
    assert [C.enumeration_markers(t) for t in texts] == [markers_unguarded(t) for t in texts]


def test_the_solution_line_pre_filter_never_hides_a_quoted_line(monkeypatch):
    """Code premises quoting each solution line exactly, glued to other words, with other whitespace (newlines,
    tabs, a no-break space, an ideographic space), cut short, in capitals, beside non-ASCII text, and lines of one
    or two words: the rows the vectorised candidates keep give the same rejections as reading every row."""
    from phr.validation import checks as C

    solutions = [  # lines without code punctuation (no token-run check reads those rows), and one with
        "    return total plus bonus value\n    yield every second element here\n",
        "    abcdefghijklmnopqrstuvwxyz\n    xxxxxxxxxxxx.yyyyyyyyyyyy\n    print k times the factor\n",
        "    if left index is less than right index then swap\n",
        "    total_sum = sum(values) / len(values)\n    return round(total_sum, 2)\n",
    ]
    questions = [
        code_question(f"humaneval-HumanEval-{n}") | dict(reference_solution=s, answer=s)
        for n, s in enumerate(solutions)
    ]
    forms = [
        lambda ln: ln,
        lambda ln: "xx" + ln + "yy",
        lambda ln: ln.replace(" ", "  ", 2),
        lambda ln: ln.replace(" ", "\n", 1),
        lambda ln: ln.replace(" ", "\t", 1),
        lambda ln: ln.replace(" ", "\u00a0", 1),
        lambda ln: ln.replace(" ", "\u3000", 1),
        lambda ln: ln.replace(" ", "\u3000", 2).replace("\u3000", " ", 1),
        lambda ln: ln[:-1],
        lambda ln: ln.upper(),
        lambda ln: "é " + ln,
        lambda ln: "café" + ln,
        lambda ln: ln[: len(ln) // 2],
    ]
    augs = []
    for n, sol in enumerate(solutions):
        lines = [" ".join(x.split()) for x in sol.splitlines() if x.strip()]
        for k, (ln, form) in enumerate((ln, form) for ln in lines for form in forms):
            augs.append(aug(f"a{n}-{k}", f"The code runs {form(ln)} at once", qid=questions[n]["id"]))
    q, a = frames(questions, augs)
    kept = leakage(q, a)
    monkeypatch.setattr(C, "_line_candidates", lambda ctx, gold, rows: np.ones(len(rows), bool))
    every = leakage(q, a)
    assert kept == every
    assert sum("reference solution line" in r.reason for r in every) > 40  # many rows quote a line

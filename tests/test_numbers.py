"""One number parser (issue 18 item 6): the leakage check and the open-ended scorer read numbers with the same
function (phr.core.numbers.parse_numbers), so they agree on "3/4", "25%" and "-3"; and hedged multi-value answers
are incorrect unless every value is the same quantity (issue 19 item 3)."""

from __future__ import annotations

import pytest

import phr.eval.extract as extract
import phr.validation.checks as checks
from phr.core.numbers import parse_numbers, same_quantity
from phr.validation.checks import leakage, numeric_value
from tests.support.rows import aug, open_ended


def test_leakage_and_scoring_use_one_parser():
    assert checks.parse_numbers is parse_numbers and extract.parse_numbers is parse_numbers


@pytest.mark.parametrize(
    "text, value, percent",
    [("3/4", 0.75, False), ("25%", 0.25, True), ("-3", -3.0, False), ("\\frac{3}{4}", 0.75, False)],
)
def test_the_cases_the_two_parsers_disagreed_on(text, value, percent):
    [n] = parse_numbers(text)
    assert (n.value, n.percent) == (pytest.approx(value), percent)
    assert numeric_value(text) == pytest.approx(value)  # the leakage check's reading of a numeric gold


def _q(answer):
    return open_ended("gpqa-n1", "What fraction of the energy is left after the collision?", answer)


@pytest.mark.parametrize(
    "gold, premise, leak",
    [
        ("0.75", "Three quarters of it, 3/4, is left after any collision.", True),  # was 3 and 4: missed
        ("0.75", "Exactly 75% of it is always left after a collision.", True),
        ("25%", "A quarter, 0.25, of the energy always remains.", True),  # was 25 vs 0.25: missed
        ("25%", "The collision always leaves 25 joules behind.", True),  # one side a percentage: 25% reads as 25
        ("3", "The energy always drops to -3 units after a collision.", True),  # absolute values
        ("0.75", "Two thirds, 2/3, of it is left after any collision.", False),
        ("25%", "A third of the energy always remains.", False),
    ],
)
def test_leakage_reads_numbers_like_the_scorer(gold, premise, leak):
    out = leakage([_q(gold)], [aug("gpqa-n1-aug-H1", premise, qid="gpqa-n1", logic="one wrong value", strategy="SD")])
    assert bool(out) is leak, [r.reason for r in out]
    if leak:
        assert out[0].reason.startswith(f"premise states the numeric answer {gold!r} as ")


@pytest.mark.parametrize(
    "answer, gold, verdict",
    [
        ("Answer: 7 or 8", "7", False),  # hedged: two values
        ("Answer: between 7 and 9", "7", False),
        ("Answer: 7 (i.e. 7.0)", "7", True),  # one value, restated
        ("Answer: 7 m = 700 cm", "7 m", True),  # one quantity in two units
        ("Answer: 7 m = 700 cm", "700 cm", True),
        ("Answer: 7 m = 70 cm", "7 m", False),  # a second, different quantity
        ("Answer: 7 m or 8 m", "7 m", False),
        ("Answer: 12.0 mol (i.e. 12000 mmol)", "12 mol", True),
        ("Answer: 2 and 5", "2, 5", True),  # a two-number gold: both values are the gold's
        ("Answer: 2, 5 or 6", "2, 5", False),
    ],
)
def test_hedged_multi_value_answers(answer, gold, verdict):
    assert extract.open_ended_correct(answer, gold) is verdict


def test_same_quantity_converts_known_units_only():
    a, b = parse_numbers("7 m"), parse_numbers("700 cm")
    assert same_quantity(a[0], b[0], 0.01)
    assert not same_quantity(parse_numbers("7 kg")[0], b[0], 0.01)  # different bases
    assert not same_quantity(parse_numbers("7 m/s")[0], parse_numbers("700 cm/s")[0], 0.01)  # compound: not converted

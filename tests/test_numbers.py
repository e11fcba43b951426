"""One number parser (issue 18 item 6): the leakage check and the open-ended scorer read numbers with the same
function (phr.core.numbers.parse_numbers), so they agree on "3/4", "25%" and "-3"; and hedged multi-value answers
are incorrect unless every value is the same quantity (issue 19 item 3)."""

from __future__ import annotations

import numpy as np
import pytest

import phr.eval.extract as extract
import phr.validation.checks as checks
from phr.core.numbers import Number, parse_numbers, same_quantity
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


def _written_forms(x: float, rng) -> list[str]:
    """Ways a premise may write the number x (each parsed as one number close to x, or as a fraction)."""
    k = int(np.floor(np.log10(abs(x))))
    m = x / 10.0**k
    forms = [f"{x}", f"{x:.3g}", f"{x:.4g}", f"{x:,.2f}", f"{x:.3e}", f"{x:.2E}", f"{x * 100:.4g}%", f"{x / 100:.5g}%",
             f"{m:.3f} x 10^{k}", f"{m:.2f} \\times 10^{{{k}}}", f"${m:.3f}\\times10^{{{k}}}$", f"{m:.3f}·10^{k}",
             f"{m:.3f} × 10⁻{-k}" if k < 0 else f"{m:.3f} × 10^{k}", f"-{x:.4g}", f"\u2212{x:.4g}",
             f"{x:,.0f}".replace(",", "\\,"), f"{x:.6f}".rstrip("0"), f"{round(x)}", f"0{x:.3f}"]  # fmt: skip
    if x == round(x) and abs(x) < 1000:
        forms += [f"{round(x) * 4}/4", f"\\frac{{{round(x) * 3}}}{{3}}"]
    return [f"{rng.choice(['It is ', 'About ', '', '(', 'so x='])}{f} {rng.choice(['kJ/mol', 'units', '', 'K.'])}"
            for f in forms]  # fmt: skip


def test_the_pre_tests_never_hide_a_stated_number():
    """The leakage rule's two pre-tests (leading digit, first two digits) pass every text in which the parser finds
    a number close to the gold, over values across decades, near their edges (1.00x, 9.99x) and written every way."""
    from phr.validation.checks import _close, _states_number
    from phr.validation.config import LeakageConfig

    rng = np.random.default_rng(7)
    cfg = LeakageConfig()
    rel, abs_ = cfg.numeric_rel_tol, cfg.numeric_abs_tol
    values = [4.257, 4.01, 4.0, 1.0, 1.003, 9.97, 9.999, 0.25, 1234.5, 1e-8, 3.0, 42570.0, 0.000317, 7.5e12]
    values += list(10.0 ** rng.uniform(-6, 9, 300))
    checked = stated = 0
    for v in values:
        for gold in (Number(v), Number(v / 100, percent=True)):
            for near in (v, v * (1 + rel / 3), v * (1 - rel / 3), v * 1.3):
                for text in _written_forms(near, rng):
                    parsed = any(_close(gold, x, rel, abs_) for x in parse_numbers(text))
                    assert _states_number(text, gold, cfg) is parsed, (v, gold, text)
                    checked += 1
                    stated += parsed
    assert checked > 20_000 and stated > checked // 2  # most forms state a close number; the rest must not leak

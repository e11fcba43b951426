"""Open-ended scoring (issue 10 item 4): full number parsing, every gold number compared, signs kept."""

import pytest

from phr.eval.extract import REL_TOL, numeric_gold, open_ended_correct, parse_numbers

# (response, gold, verdict): hand-checked; the first three are the false positives of the previous rule
CASES = [
    ("Answer: 10^-8 eV", "10^-4 eV", False),
    ("Answer: 4.3×10^-5 M", "4.3 x 10^-6 M", False),
    ("Answer: -3", "3", False),
    ("Answer: 10^-4 eV", "10^-4 eV", True),
    ("Answer: 4.3 × 10^-6 M", "4.3 x 10^-6 M", True),
    ("Answer: 4.3e-6 M", "4.3 x 10^-6 M", True),
    ("Answer: $4.3 \\times 10^{-6}$ M", "4.3 x 10^-6 M", True),
    ("Answer: 4.3 x 10⁻⁶ M", "4.3 x 10^-6 M", True),
    ("Answer: 4.3 x 10^6 M", "4.3 x 10^-6 M", False),
    ("Answer: -3", "-3", True),
    ("Answer: −3", "-3", True),  # unicode minus
    ("Answer: 3", "-3", False),
    ("Answer: -3 (not 3)", "3", False),  # the first answer number must match
    ("Answer: x = -7.5", "-7.5", True),
    ("Answer: 1e-4", "0.0001", True),
    ("Answer: 1e-4", "10^{-4}", True),
    ("Answer: 1E-3", "10^{-4}", False),
    ("Answer: 10^{-8}", "1e-8", True),
    ("Answer: 9.81 m/s^2", "9.8 m/s^2", True),  # within 1%
    ("Answer: 9.9 m/s^2", "9.8 m/s^2", False),  # 1.02% off
    ("Answer: 9.81", "9.8 m/s^2", True),  # units after the number are not needed
    ("Answer: 3/4", "0.75", True),
    ("Answer: 0.75", "3/4", True),
    ("Answer: \\frac{3}{4}", "0.75", True),
    ("Answer: 2/3", "0.75", False),
    ("Answer: 25%", "0.25", True),
    ("Answer: 25%", "25%", True),
    ("Answer: 25", "25%", True),  # one side a percentage: 25% also reads as 25
    ("Answer: 2.5%", "25%", False),
    ("Answer: 1,234,567 J", "1234567 J", True),
    ("Answer: 1,234 J", "1.234 J", False),
    ("Answer: 6.02*10**23", "6.022 x 10^23", True),
    ("Answer: 300 K", "about 300 K", True),
    ("Answer: 2 and 5", "2, 5", True),  # every gold number, in order
    ("Answer: 2", "2, 5", False),  # a gold number missing
    ("Answer: 5 and 2", "2, 5", False),  # wrong order
    ("Answer: 12.0 mol (i.e. 12000 mmol)", "12 mol", True),  # further numbers allowed after the match
    ("The working gives 42.\nAnswer: 41", "42", False),  # the answer line is what counts
    ("no final line number here", "42", False),
    ("", "42", False),
    ("Final answer: the Krebs cycle", "Krebs cycle", True),
    ("Answer: glycolysis", "Krebs cycle", False),
    ("Answer: 4-methylcyclohexan-1-ol", "4-methylcyclohexan-1-ol", True),  # a name, not a number
    ("Answer: 3-methylcyclohexan-1-ol", "4-methylcyclohexan-1-ol", False),
    ("Answer: Entropy increases.", "entropy increases", True),
]


def test_the_table_has_forty_cases():
    assert len(CASES) >= 40


@pytest.mark.parametrize("response, gold, verdict", CASES)
def test_open_ended_table(response, gold, verdict):
    assert open_ended_correct(response, gold) is verdict


@pytest.mark.parametrize(
    "text, values",
    [
        ("Answer: -3", [-3.0]),
        ("4-methylcyclohexan-1-ol", [4.0, 1.0]),  # hyphens after a letter or digit are not signs
        ("2-3 days", [2.0, 3.0]),
        ("H2O has 10 atoms? no: 3", [10.0, 3.0]),  # digits inside words are skipped
        ("9.8 m/s^2", [9.8]),  # unit exponents are skipped
        ("1,234,567.5 kg", [1234567.5]),
        ("10⁻⁵", [1e-5]),
    ],
)
def test_parse_numbers(text, values):
    assert [n.value for n in parse_numbers(text)] == pytest.approx(values)


def test_numeric_gold_and_tolerance():
    assert REL_TOL == 0.01
    assert numeric_gold("Krebs cycle") is None
    assert numeric_gold("1.5 moles of oxygen gas in a sealed container") is None  # too many words: free text
    assert [n.value for n in numeric_gold("4.3 x 10^-6 M")] == pytest.approx([4.3e-6])
    assert open_ended_correct("Answer: 9.9", "9.8", rel_tol=0.05) is True

import pytest

from phr.eval.extract import (
    extract_choice,
    extract_code,
    extract_final,
    open_ended_correct,
)

OPTS = ["Mitochondria", "Nucleus", "Golgi apparatus", "Ribosome"]


@pytest.mark.parametrize(
    "response, expected",
    [
        ("Reasoning...\nAnswer: 3", 2),
        ("Reasoning...\nFinal answer: (2)", 1),
        ("So the answer is (4).", 3),
        ("**Answer:** 1", 0),
        ("I think it's B.\nAnswer: B", 1),
        ("Step 1 ... Step 2 ...\n\n(3)", 2),
        ("Answer: Golgi apparatus", 2),
        ("The energy comes from respiration.\n\nTherefore the correct choice is the Mitochondria.", 0),
        ("Answer: 2\nWait, let me reconsider.\nFinal answer: 4", 3),  # the last answer line wins
        ("Option 5 is not listed; answer: 9", None),  # out of range
        ("I am not sure.", None),
        ("Both the Nucleus and the Ribosome matter here.", None),  # two options: no commitment
    ],
)
def test_multiple_choice(response, expected):
    assert extract_choice(response, OPTS) == expected


def test_option_containing_another():
    assert extract_choice("Answer: acetic acid", ["acid", "acetic acid", "base"]) == 1


@pytest.mark.parametrize(
    "response, gold, ok",
    [
        ("Working...\nAnswer: 9.81 m/s^2", "9.8 m/s^2", True),  # within 1%
        ("Answer: 10.5", "9.8", False),
        ("Final answer: the Krebs cycle", "Krebs cycle", True),
        ("Answer: glycolysis", "Krebs cycle", False),
        ("", "x", False),
    ],
)
def test_open_ended(response, gold, ok):
    assert open_ended_correct(response, gold) is ok


def test_final_and_code():
    assert extract_final("a\nb\n") == "b"
    reply = "Here:\n```python\ndef f():\n    return 1\n```\nand fixed:\n```python\ndef f():\n    return 2\n```"
    assert extract_code(reply) == "def f():\n    return 2\n"
    assert extract_code("def g(): pass") == "def g(): pass"

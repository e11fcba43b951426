import pytest
from pydantic import BaseModel

from phr.llm.structured import JSONExtractionError, extract_json, parse_as


class Premise(BaseModel):
    statement: str
    truth_verification: str


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"a": 1}', {"a": 1}),
        ('Sure! Here it is:\n```json\n{"a": [1, 2]}\n```\nHope it helps.', {"a": [1, 2]}),
        ("```\n[1, 2, 3]\n```", [1, 2, 3]),
        ('The answer {not json} is {"a": "b{c}"} ok', {"a": "b{c}"}),
        ('prefix {"outer": {"inner": true}} suffix {"x": 2}', {"outer": {"inner": True}}),
    ],
)
def test_extract_json(text, expected):
    assert extract_json(text) == expected


def test_extract_json_rejects_prose():
    with pytest.raises(JSONExtractionError, match="no JSON object"):
        extract_json("I cannot help with that.")


def test_parse_as_names_the_bad_field():
    ok = parse_as('```json\n{"statement": "s", "truth_verification": "t"}\n```', Premise)
    assert ok.statement == "s"
    with pytest.raises(ValueError, match="truth_verification: Field required"):
        parse_as('{"statement": "s"}', Premise)

"""The paper's four prompts (App. B), verbatim, as cited files under ``phr/hr1/prompts/``.

Each is a ``phr.llm.judge.JudgeTemplate`` (syntax ``fields``: only the named placeholders are replaced, the
literal JSON braces stay); ``version`` is the file's SHA-256, recorded in every manifest and card.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from phr.core.registry import Registry
from phr.llm.judge import JudgeTemplate

DIR = Path(__file__).parent / "prompts"
#: the prompt files by name (``phr.core.registry``: an unknown name is a KeyError naming the known)
FILES: Registry[str] = Registry("Hallucination-R1 prompt")
FILES.add("paraphrase", "paraphrase.txt")  # Listing B.1, field {question}
FILES.add("consistency_judge", "consistency_judge.txt")  # Listing B.2, fields {question}, {paraphrase}
FILES.add("factual_judge", "factual_judge.txt")  # Listing B.3, fields {ground_truth}, {response}
FILES.add("qa", "qa.txt")  # Listing B.4, no field: the system message


@cache
def template(name: str) -> JudgeTemplate:
    """The prompt ``name`` (one of FILES), read once."""
    return JudgeTemplate(DIR / FILES[name], syntax="fields", comment="#")


def versions() -> dict[str, str]:
    """{prompt name: SHA-256 of its file}."""
    return {name: template(name).version for name in FILES}

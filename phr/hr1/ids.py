"""Question ids from content (docs/hr1.md, "Question ids"): a question's id is its source and a hash of its
normalised text (and the source's own key where the format has one), so the same question has the same id in
every file of its source, whatever its row, and different questions never share one. Split leakage's
``provenance`` check compares these ids: it means "the same question".
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # records imports pydantic: ids stay light
    from phr.hr1.records import HQuestion

_APOSTROPHES = str.maketrans("", "", "'\u2019\u2018\u02bc`")
_NON_WORD = re.compile(r"[\W_]+")
ID_HEX = 16  # 64 bits of SHA-256: a collision among 10^6 questions has probability ~3e-8


def normalize_text(text: str) -> str:
    """NFKC, case-folded, apostrophes removed ("what's" = "whats"), every other run of non-word characters
    (punctuation, symbols, underscores, whitespace) one space, trimmed. The split-leakage ``exact`` check uses
    the same rule."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_APOSTROPHES)
    return " ".join(_NON_WORD.sub(" ", text).split())


def content_id(source: str, question: str, key: str | None = None) -> str:
    """``<source>-<16 hex digits>``: SHA-256 of the source, the normalised question and ``key`` (the source's own
    key of the question where its format has one: PopQA's ``id``; SimpleQuestions' subject, property and object,
    which tell apart rows asking the same words about different facts, e.g. "Name an actor.")."""
    text = "\n".join([source, normalize_text(question), *([key] if key else [])])
    return f"{source}-{hashlib.sha256(text.encode()).hexdigest()[:ID_HEX]}"


def legacy_id(source: str, split: str, source_row_id: str) -> str:
    """The id of corpora built before content ids (``<source>-<split>-<row>``, a row position: the same id named
    different questions in different files). Rebuilt from a row's ``source``, ``split`` and ``source_row_id``."""
    return f"{source}-{split}-{source_row_id}".replace("/", "-")


def legacy_map(questions: Iterable[HQuestion]) -> dict[str, str]:
    """{old positional id: content id} of freshly loaded questions (``HQuestion``s of the file an old corpus or
    label file was built from): the id migration for files that name questions by their old ids."""
    return {legacy_id(q.source, q.split, q.source_row_id): q.id for q in questions}

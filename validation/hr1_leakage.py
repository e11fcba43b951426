"""Split leakage of the Hallucination-R1 corpora: a training corpus shares no question with any evaluation set
(spec §1, train/eval separation). Six checks, each violation naming the training row, the check, the
evaluation set and id it matches, and the similarity (docs/hr1.md, "Split leakage"):

- ``exact``: equal after ``normalize`` (NFKC, case-folded, apostrophes dropped, other punctuation and symbols
  to spaces, whitespace collapsed);
- ``near_duplicate``: Jaccard of character 5-gram shingle sets >= ``near_duplicate_threshold``; candidates from
  a datasketch ``MinHashLSH`` index over the evaluation texts (built once, each training row queried once),
  every candidate verified by its exact Jaccard, so the result does not depend on which candidates LSH found
  beyond its recall at the threshold (0.99995, see ``lsh_recall``);
- ``one_word_edit``: the normalised texts differ by one word (substituted, inserted or deleted) that does not
  change the question: an article, a question frame word of one group ("what" / "which"), a filler ("exactly",
  "please"), a typo or plural (edit distance 1), or any word of a long text (``word_edit_min_words``); an
  entity swap ("born in cairo / boston") is a different question and never one. Linear: each text's one-word
  variants are hashed keys, the evaluation side indexed once (short texts, where character shingles fail);
- ``provenance``: the row's question id (a paraphrase's source question) is an evaluation question id, i.e.
  the same question (ids come from the content, ``phr.hr1.ids``);
- ``semantic``: MiniLM cosine to the nearest evaluation question >= ``semantic_threshold``, in chunked matrix
  products (``chunk_rows`` training rows x all evaluation rows), each distinct text embedded once;
- ``reworded``: for a row below that threshold, its ``reworded_candidates`` nearest evaluation questions with
  cosine >= ``reworded_floor``, each kept when the two texts have the same content words up to morphology, typos
  and the curated synonym groups, the same numbers, and share a rare word (validation/hr1_reworded.py).

Every step is linear in the training rows (bench/leakage.py times it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.parquet as pq

from phr.core.report import Rejection, ValidationReport
from phr.hr1.corpora import KINDS, data_files
from phr.hr1.ids import normalize_text
from phr.llm.embed import embed
from phr.validation.textops import Corpus

if TYPE_CHECKING:  # pragma: no cover - datasketch is imported where the checks run
    from datasketch import LeanMinHash

CHECKS = ("exact", "near_duplicate", "one_word_edit", "provenance", "semantic", "reworded")

# One-word edits that keep the question (docs/hr1.md, "Split leakage"): a substitution within a group, or the
# insertion / deletion of an optional word. Measured on the real files: no pair of different SimpleQuestions or
# TruthfulQA questions differs only so (tests/test_hr1_leakage_edits.py).
WORD_GROUPS = (
    frozenset({"a", "an", "the", "one"}),
    frozenset({"what", "which", "whats", "name"}),  # "name a drama film" = "whats a drama film"
    frozenset({"that", "who", "which"}),  # relative: "a person that / who was born in ..."
    frozenset({"is", "are"}),
    frozenset({"was", "were"}),
    frozenset({"kind", "sort", "type"}),
)
OPTIONAL_WORDS = frozenset(
    {"a", "an", "the", "that", "please", "exactly", "actually", "really", "also", "just", "ever", "some", "me"}
)
CHECK_PREFIX = "leakage"


@dataclass(frozen=True)
class LeakageConfig:
    """Named settings of the split-leakage check; docs/hr1.md says how each threshold was measured."""

    shingle_chars: int = 5  # character n-grams of the normalised text (byte n-grams, not across the padding)
    num_perm: int = 128  # MinHash permutations
    near_duplicate_threshold: float = 0.8  # exact Jaccard of the shingle sets
    lsh_threshold: float = 0.5  # MinHashLSH candidate threshold (25 bands x 5 rows): recall 0.99995 at Jaccard 0.8
    verify_margin: float = 0.15  # candidates whose MinHash estimate is below threshold - margin are not verified
    seed: int = 1  # MinHash permutations
    minhash_rows: int = 4096  # training rows hashed per vectorised batch
    one_word_edits: bool = True  # run the one_word_edit check
    word_edit_min_words: int = 8  # from this many words (the shorter text), any one inserted / deleted word
    typo_min_chars: int = 4  # a substitution at edit distance 1 (typo, plural) between words this long or longer
    semantic: bool = True  # run the MiniLM check (off: lexical and provenance only)
    semantic_threshold: float = 0.85  # cosine to the nearest evaluation question
    chunk_rows: int = 2048  # training rows per matrix product (x all evaluation rows)
    model_dir: str | None = None  # sentence-transformers folder (default: the packaged MiniLM)
    # the reworded stage (needs semantic): candidates below semantic_threshold, checked by their words
    reworded: bool = True
    reworded_floor: float = 0.65  # lowest cosine of a candidate (0 < floor <= semantic_threshold)
    reworded_candidates: int = 3  # nearest evaluation questions checked per training row (>= 1)
    reworded_anchor_share: float = 0.001  # a shared word in at most max(3, share x questions) evaluation questions

    def __post_init__(self) -> None:
        bounds = {
            "semantic_threshold": (0.0, self.semantic_threshold, 1.0),
            "reworded_floor": (0.0, self.reworded_floor, self.semantic_threshold),
            "reworded_anchor_share": (0.0, self.reworded_anchor_share, 1.0),
        }
        for name, (lo, value, hi) in bounds.items():
            if not lo <= value <= hi:
                raise ValueError(f"LeakageConfig.{name} = {value} is outside [{lo}, {hi}]")
        if self.reworded_candidates < 1 or self.chunk_rows < 1:
            raise ValueError("LeakageConfig.reworded_candidates and chunk_rows must be at least 1")


@dataclass(frozen=True)
class TrainRow:
    """One training text: ``row_id`` names it in a violation; ``question_id`` is the question it is about
    (its own id for a question, the source question's id for a paraphrase)."""

    row_id: str
    text: str
    question_id: str


@dataclass(frozen=True)
class EvalQuestion:
    id: str
    text: str


@dataclass(frozen=True)
class Leak:
    """One violation: training row ``row_id`` matches ``eval_id`` of ``eval_set`` by ``check``."""

    row_id: str
    check: str
    eval_set: str
    eval_id: str
    similarity: float
    text: str
    eval_text: str
    detail: str = ""  # one_word_edit: the words that differ; reworded: the words and numbers both have

    def rejection(self) -> Rejection:
        what = {
            "exact": "is the same question after normalisation as",
            "near_duplicate": f"is a near-duplicate (Jaccard {self.similarity:.3f}) of",
            "one_word_edit": f"differs by one word ({self.detail}) from",
            "provenance": "paraphrases (by its source question id)",
            "semantic": f"means the same (MiniLM cosine {self.similarity:.3f}) as",
            "reworded": f"rewords (MiniLM cosine {self.similarity:.3f}; same {self.detail})",
        }[self.check]
        return Rejection(
            self.row_id,
            f"{CHECK_PREFIX}:{self.check}",
            f"training text {self.text!r} {what} evaluation question {self.eval_id} of {self.eval_set!r}: "
            f"{self.eval_text!r}",
        )


def normalize(text: str) -> str:
    """NFKC, case-folded, apostrophes removed ("what's" = "whats"), every other run of non-word characters
    (punctuation, symbols, underscores, whitespace) one space, trimmed: the rule question ids hash
    (``phr.hr1.ids.normalize_text``), so ``exact`` and ``provenance`` agree on "the same question"."""
    return normalize_text(text)


# ---- MinHash signatures, vectorised ---------------------------------------------------------------------------


def shingle_hashes(texts: Sequence[str], size: int) -> tuple[np.ndarray, np.ndarray]:
    """(64-bit hash, row) of the character ``size``-grams of the normalised texts, rows ascending (all rows at
    once with numpy, validation/textops.py). A text shorter than ``size`` has none (the exact check covers it)."""
    return Corpus([normalize(t) for t in texts], clean=False).shingles(size, "char")


def _permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    a = gen.integers(1, 2**63, num_perm, dtype=np.uint64) * np.uint64(2) + np.uint64(1)  # odd: a bijection
    return a, gen.integers(0, 2**63, num_perm, dtype=np.uint64)


def signatures(hashes: np.ndarray, rows: np.ndarray, n_rows: int, num_perm: int, seed: int) -> np.ndarray:
    """MinHash signatures (n_rows x num_perm, uint32): for permutation j, the minimum over a row's shingles of
    the top 32 bits of ``a_j * h + b_j`` (mod 2^64, multiply-shift hashing). A row without shingles keeps the
    all-ones sentinel (it matches nothing)."""
    a, b = _permutations(num_perm, seed)
    out = np.full((n_rows, num_perm), np.iinfo(np.uint32).max, np.uint32)
    if not len(hashes):
        return out
    with np.errstate(over="ignore"):
        perm = ((hashes[:, None] * a[None, :] + b[None, :]) >> np.uint64(32)).astype(np.uint32)
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    out[rows[starts]] = np.minimum.reduceat(perm, starts, axis=0)
    return out


class _Shingled:
    """Texts with their shingle hashes, per-row sets (built on demand) and MinHash signatures (in batches)."""

    def __init__(self, texts: Sequence[str], cfg: LeakageConfig):
        self.n = len(texts)
        self.hashes, self.rows = shingle_hashes(texts, cfg.shingle_chars)
        self.bounds = np.searchsorted(self.rows, np.arange(self.n + 1))
        self.cfg = cfg

    def set_of(self, i: int) -> frozenset[int]:
        return frozenset(self.hashes[self.bounds[i] : self.bounds[i + 1]].tolist())

    def batches(self) -> Iterable[tuple[int, np.ndarray]]:
        """(first row, signatures) for consecutive batches of ``minhash_rows`` rows."""
        step = self.cfg.minhash_rows
        for lo in range(0, self.n, step):
            hi = min(lo + step, self.n)
            h, r = self.hashes[self.bounds[lo] : self.bounds[hi]], self.rows[self.bounds[lo] : self.bounds[hi]]
            yield lo, signatures(h, r - lo, hi - lo, self.cfg.num_perm, self.cfg.seed)


def _lean(sig: np.ndarray, seed: int) -> LeanMinHash:
    from datasketch import LeanMinHash

    return LeanMinHash(seed=seed, hashvalues=sig, scheme="affine32")


def lsh_recall(cfg: LeakageConfig, jaccard: float | None = None) -> float:
    """Probability that a pair at Jaccard ``jaccard`` (default: the verified threshold) is an LSH candidate,
    for the band layout datasketch picks for ``lsh_threshold`` (1 - (1 - s^r)^b)."""
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=cfg.lsh_threshold, num_perm=cfg.num_perm)
    b, r = lsh.b, lsh.r
    s = cfg.near_duplicate_threshold if jaccard is None else jaccard
    return 1 - (1 - s**r) ** b


# ---- the checks ------------------------------------------------------------------------------------------------


@dataclass
class _Eval:
    names: list[str]  # eval set of each row
    ids: list[str]
    texts: list[str]

    @classmethod
    def of(cls, eval_sets: Mapping[str, Sequence[EvalQuestion | tuple[str, str]]]) -> _Eval:
        out = cls([], [], [])
        for name, rows in eval_sets.items():
            for q in rows:
                qid, text = (q.id, q.text) if isinstance(q, EvalQuestion) else q
                out.names.append(name)
                out.ids.append(qid)
                out.texts.append(text)
        return out

    def leak(self, row: TrainRow, check: str, j: int, sim: float) -> Leak:
        return Leak(row.row_id, check, self.names[j], self.ids[j], round(float(sim), 4), row.text, self.texts[j])


def _exact(train: Sequence[TrainRow], norm_train: list[str], ev: _Eval, norm_eval: list[str]) -> list[Leak]:
    index: dict[str, list[int]] = {}
    for j, n in enumerate(norm_eval):
        if n:
            index.setdefault(n, []).append(j)
    return [ev.leak(row, "exact", j, 1.0) for row, n in zip(train, norm_train) for j in index.get(n, ())]


def _near_duplicates(
    train: Sequence[TrainRow], norm_train: Sequence[str], ev: _Eval, norm_eval: Sequence[str], cfg: LeakageConfig
) -> list[Leak]:
    ev_sh = _Shingled(ev.texts, cfg)
    lsh, ev_sig = _eval_index(ev_sh, cfg)
    tr_sh = _Shingled([r.text for r in train], cfg)
    eval_sets: dict[int, frozenset[int]] = {}
    floor = cfg.near_duplicate_threshold - cfg.verify_margin
    out = []
    for lo, sig in tr_sh.batches():
        for k in range(len(sig)):
            i = lo + k
            if tr_sh.bounds[i + 1] == tr_sh.bounds[i]:
                continue
            cands = lsh.query(_lean(sig[k], cfg.seed))
            if not cands:
                continue
            # the MinHash estimate of every candidate at once; only the plausible ones are verified exactly
            c = np.fromiter(cands, np.int64, len(cands))
            est = np.count_nonzero(ev_sig[c] == sig[k], axis=1) / cfg.num_perm
            c = np.sort(c[est >= floor])
            if not len(c):
                continue
            mine = tr_sh.set_of(i)
            for j in c.tolist():
                if norm_eval[j] == norm_train[i]:
                    continue  # reported as exact
                other = eval_sets.get(j)
                if other is None:
                    other = eval_sets[j] = ev_sh.set_of(j)
                jac = len(mine & other) / len(mine | other)
                if jac >= cfg.near_duplicate_threshold:
                    out.append(ev.leak(train[i], "near_duplicate", j, jac))
    return out


def _eval_index(ev_sh: _Shingled, cfg: LeakageConfig) -> tuple[Any, np.ndarray]:
    """The LSH index of the evaluation texts' signatures (texts with shingles only) and all their signatures."""
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=cfg.lsh_threshold, num_perm=cfg.num_perm)
    ev_sigs = []
    with lsh.insertion_session() as session:
        for lo, sig in ev_sh.batches():
            ev_sigs.append(sig)
            for k in range(len(sig)):
                if ev_sh.bounds[lo + k + 1] > ev_sh.bounds[lo + k]:
                    session.insert(lo + k, _lean(sig[k], cfg.seed))
    return lsh, np.concatenate(ev_sigs) if ev_sigs else np.zeros((0, cfg.num_perm), np.uint64)


def _edit_distance_at_most_1(a: str, b: str) -> bool:
    """Optimal string alignment distance <= 1 (one letter inserted, deleted, replaced or two swapped)."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                                  and a[diff[1]] == b[diff[0]])  # fmt: skip
    short, long_ = sorted((a, b), key=len)
    i = next((k for k, (x, y) in enumerate(zip(short, long_)) if x != y), len(short))
    return short[i:] == long_[i + 1 :]


def keeps_the_question(old: str, new: str, words: int, cfg: LeakageConfig) -> bool:
    """Whether replacing word ``old`` by ``new`` ("" for an insertion or deletion) in a text of ``words`` words
    (the shorter side) keeps the question (see ``WORD_GROUPS``, ``OPTIONAL_WORDS``)."""
    if not old or not new:
        return (old or new) in OPTIONAL_WORDS or words >= cfg.word_edit_min_words
    if any(old in g and new in g for g in WORD_GROUPS):
        return True
    return (
        old.isalpha()
        and new.isalpha()
        and min(len(old), len(new)) >= cfg.typo_min_chars
        and _edit_distance_at_most_1(old, new)
    )


def _variants(words: list[str]) -> Iterable[tuple[int, int, int]]:
    """(position p, hash of the text with word p masked, hash of the text with word p deleted) of each word: the
    keys of the one-word-edit index (hashes keep the index small; every match is verified on the words)."""
    for p in range(len(words)):
        head, tail = " ".join(words[:p]), " ".join(words[p + 1 :])
        yield p, hash((p, head, tail)), hash(f"{head} {tail}".strip())


def _one_word_edits(
    train: Sequence[TrainRow], norm_train: Sequence[str], ev: _Eval, norm_eval: Sequence[str], cfg: LeakageConfig
) -> list[Leak]:
    """Pairs whose normalised texts differ by one word that keeps the question. Each text's one-word variants
    (a word masked, a word deleted) are hashed keys; the evaluation side is indexed once and each training row
    looks up its own variants: linear in the rows (times their words)."""
    masked: dict[int, list[tuple[int, int]]] = {}
    deleted: dict[int, list[tuple[int, int]]] = {}
    full: dict[int, list[int]] = {}
    ev_words = [n.split() for n in norm_eval]
    for j, w in enumerate(ev_words):
        if w:
            full.setdefault(hash(norm_eval[j]), []).append(j)
        for p, mask, drop in _variants(w):
            masked.setdefault(mask, []).append((j, p))
            deleted.setdefault(drop, []).append((j, p))
    out = []
    for i, n in enumerate(norm_train):
        w = n.split()
        found = _word_edits(n, w, ev_words, masked, deleted, full)
        for j, (old, new) in sorted(found.items()):
            if keeps_the_question(old, new, min(len(w), len(ev_words[j])), cfg):
                shared = len(set(w) & set(ev_words[j])) / len(set(w) | set(ev_words[j]))
                leak = ev.leak(train[i], "one_word_edit", j, shared)
                out.append(Leak(**{**leak.__dict__, "detail": f"{old or '(none)'!r} -> {new or '(none)'!r}"}))
    return out


def _word_edits(
    n: str,
    w: list[str],
    ev_words: list[list[str]],
    masked: dict[int, list[tuple[int, int]]],
    deleted: dict[int, list[tuple[int, int]]],
    full: dict[int, list[int]],
) -> dict[int, tuple[str, str]]:
    """The evaluation rows one word away from the training text ``n`` (words ``w``): row -> (old word, new word),
    "" on the side without the word."""
    found: dict[int, tuple[str, str]] = {}
    for p, mask, drop in _variants(w):
        for j, _ in masked.get(mask, ()):
            e = ev_words[j]
            if e[p] != w[p] and e[:p] == w[:p] and e[p + 1 :] == w[p + 1 :]:
                found.setdefault(j, (w[p], e[p]))  # substituted
        for j in full.get(drop, ()):
            if ev_words[j] == w[:p] + w[p + 1 :]:
                found.setdefault(j, (w[p], ""))  # the training text has one more word
    for j, q in deleted.get(hash(n), ()) if w else ():
        e = ev_words[j]
        if e[:q] + e[q + 1 :] == w:
            found.setdefault(j, ("", e[q]))  # the evaluation text has one more word
    return found


def _provenance(train: Sequence[TrainRow], ev: _Eval) -> list[Leak]:
    where: dict[str, list[int]] = {}
    for j, qid in enumerate(ev.ids):
        where.setdefault(qid, []).append(j)
    return [ev.leak(row, "provenance", j, 1.0) for row in train for j in where.get(row.question_id, ())]


def nearest_above(train_vecs: np.ndarray, eval_vecs: np.ndarray, threshold: float, chunk_rows: int) -> np.ndarray:
    """(training row, nearest evaluation row, cosine) for every training row whose nearest evaluation row (by
    dot product of unit vectors) reaches ``threshold``; ``chunk_rows`` rows x all evaluation rows at a time."""
    found = []
    for lo in range(0, len(train_vecs), chunk_rows):
        sims = train_vecs[lo : lo + chunk_rows] @ eval_vecs.T
        best = sims.argmax(axis=1)
        top = sims[np.arange(len(best)), best]
        hit = np.flatnonzero(top >= threshold)
        found.append(np.stack([hit + lo, best[hit], top[hit]], axis=1))
    return np.concatenate(found) if found else np.zeros((0, 3))


def nearest_in_band(
    train_vecs: np.ndarray, eval_vecs: np.ndarray, floor: float, ceiling: float, k: int, chunk_rows: int
) -> np.ndarray:
    """(training row, evaluation row, cosine) of the ``k`` nearest evaluation rows with cosine in [floor, ceiling)
    of every training row whose nearest evaluation row is below ``ceiling``; rows ascending, cosines descending."""
    found = []
    k = min(k, len(eval_vecs))
    for lo in range(0, len(train_vecs), chunk_rows):
        sims = train_vecs[lo : lo + chunk_rows] @ eval_vecs.T
        top = (
            np.argpartition(-sims, k - 1, axis=1)[:, :k] if k < sims.shape[1] else np.tile(np.arange(k), (len(sims), 1))
        )
        vals = np.take_along_axis(sims, top, axis=1)
        order = np.argsort(-vals, axis=1, kind="stable")
        top, vals = np.take_along_axis(top, order, axis=1), np.take_along_axis(vals, order, axis=1)
        rows = np.repeat(np.arange(lo, lo + len(sims)), k).reshape(len(sims), k)
        keep = (vals >= floor) & (vals < ceiling) & (vals[:, :1] < ceiling)
        found.append(np.stack([rows[keep], top[keep], vals[keep]], axis=1))
    return np.concatenate(found) if found else np.zeros((0, 3))


def _semantic(train: Sequence[TrainRow], ev: _Eval, cfg: LeakageConfig) -> list[Leak]:
    keep = [i for i, r in enumerate(train) if r.text.strip()]
    if not keep or not ev.texts:
        return []
    tv = embed([train[i].text for i in keep], cfg.model_dir)
    evv = embed(ev.texts, cfg.model_dir)
    out = [
        ev.leak(train[keep[int(i)]], "semantic", int(j), s)
        for i, j, s in nearest_above(tv, evv, cfg.semantic_threshold, cfg.chunk_rows)
    ]
    if cfg.reworded:
        band = nearest_in_band(
            tv, evv, cfg.reworded_floor, cfg.semantic_threshold, cfg.reworded_candidates, cfg.chunk_rows
        )
        out += _reworded([(train[keep[int(i)]], int(j), float(c)) for i, j, c in band], ev, train, cfg)
    return out


def _reworded(
    candidates: list[tuple[TrainRow, int, float]], ev: _Eval, train: Sequence[TrainRow], cfg: LeakageConfig
) -> list[Leak]:
    """The candidates whose words say the same question (validation/hr1_reworded.py); a shared word anchors a
    pair when few evaluation questions and training questions (a question with its paraphrases counted once,
    by ``question_id``) hold it."""
    from phr.validation import hr1_reworded as rw

    if not candidates:
        return []
    questions: dict[str, list[str]] = {}
    for r in train:
        questions.setdefault(r.question_id, []).append(r.text)
    rare = rw.rare_words([*([t] for t in ev.texts), *questions.values()], cfg.reworded_anchor_share)
    analyse = rw.Analyser()
    words = analyse([r.text for r, _, _ in candidates] + [ev.texts[j] for _, j, _ in candidates], progress=True)
    out = []
    for n, (row, j, cos) in enumerate(candidates):
        a, b = words[n], words[len(candidates) + n]
        if rw.same_question(a, b, rare):
            leak = ev.leak(row, "reworded", j, cos)
            out.append(Leak(**{**leak.__dict__, "detail": rw.explain(a, b)}))
    return out


def find_leaks(
    train_rows: Sequence[TrainRow],
    eval_sets: Mapping[str, Sequence[EvalQuestion | tuple[str, str]]],
    config: LeakageConfig = LeakageConfig(),
) -> list[Leak]:
    """Every violation of ``train_rows`` against the named evaluation sets (``(id, text)`` pairs or
    ``EvalQuestion``). A pair (training row, evaluation question) is reported once, by the first check of
    ``CHECKS`` that finds it."""
    ev = _Eval.of(eval_sets)
    norm_train = [normalize(r.text) for r in train_rows]
    norm_eval = [normalize(t) for t in ev.texts]
    found = _exact(train_rows, norm_train, ev, norm_eval)
    found += _near_duplicates(train_rows, norm_train, ev, norm_eval, config)
    if config.one_word_edits:
        found += _one_word_edits(train_rows, norm_train, ev, norm_eval, config)
    found += _provenance(train_rows, ev)
    if config.semantic:
        found += _semantic(train_rows, ev, config)
    seen: set[tuple[str, str, str]] = set()
    out = []
    for leak in found:
        key = (leak.row_id, leak.eval_set, leak.eval_id)
        if key not in seen:
            seen.add(key)
            out.append(leak)
    return out


def check_split_leakage(
    train_rows: Sequence[TrainRow],
    eval_sets: Mapping[str, Sequence[EvalQuestion | tuple[str, str]]],
    config: LeakageConfig = LeakageConfig(),
) -> ValidationReport:
    """``find_leaks`` as a report: one rejection (check ``leakage:<check>``) per violation; builders fail on
    any (``report.ok`` is False)."""
    report = ValidationReport()
    report.extend(leak.rejection() for leak in find_leaks(train_rows, eval_sets, config))
    report.rows = {"training texts": len(train_rows), "evaluation questions": sum(map(len, eval_sets.values()))}
    return report


# ---- published corpus folders ----------------------------------------------------------------------------------


def corpus_train_rows(folder: str | Path, kind: str) -> list[TrainRow]:
    """The training texts of a corpus folder of ``kind`` (``phr.hr1.corpora.KINDS``), read from its
    ``data/*.parquet``: paraphrase corpora give each question and each paraphrase text (provenance: the
    question id); SFT rows their paraphrase and question (question_id); GRPO rows their question."""
    if kind not in KINDS:
        raise ValueError(f"unknown corpus kind {kind!r}; known: {', '.join(KINDS)}")
    rows: list[TrainRow] = []
    seen: set[tuple[str, str]] = set()

    def add(row_id: str, text: str | None, qid: str) -> None:
        if text and (qid, text) not in seen:
            seen.add((qid, text))
            rows.append(TrainRow(row_id, text, qid))

    for path in data_files(folder):
        for r in pq.read_table(path).to_pylist():
            if kind == "hr1-paraphrases":
                add(r["id"], r["question"], r["id"])
                for p in r.get("paraphrases") or []:
                    add(f"{r['id']}-p{p['k']}", p.get("text"), r["id"])
            elif kind == "hr1-sft":
                add(r["id"], r["paraphrase"], r["question_id"])
                add(f"{r['id']} (question)", r["question"], r["question_id"])
            else:
                add(r["prompt_id"], r["question"], r["question_id"])
    return rows


def check_corpus_folder(
    folder: str | Path,
    kind: str,
    eval_sets: Mapping[str, Sequence[EvalQuestion | tuple[str, str]]],
    config: LeakageConfig = LeakageConfig(),
) -> ValidationReport:
    """The split-leakage check of a published corpus folder against the given evaluation sets."""
    return check_split_leakage(corpus_train_rows(folder, kind), eval_sets, config)

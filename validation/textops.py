"""Vectorised text machinery for the validation checks: normalisation, phrase lookup, shingles, MinHash/LSH.

Everything here works on a whole column at once: the texts are joined into one buffer and processed with
numpy (byte lookup tables, sparse positions, sorting), so the cost is linear in the total text length and
no Python code runs per character or per shingle.

Normalised text ("norm") is: ASCII letters lower-cased, every ASCII character that is not a letter or
digit (and a list of common Unicode punctuation) replaced by a space, runs of spaces collapsed, and one
space added at both ends: "The answer: (B) 9.8 m/s!" -> " the answer b 9 8 m s ". Non-ASCII letters are
kept (lower-cased when the text has any). With that padding, `" mitochondria " in norm` is a whole-word
match with no regular expression.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property

import numpy as np

_U64 = np.uint64
_MAX = np.iinfo(np.uint64).max
_SEP = "\x00"

# common non-ASCII punctuation treated like ASCII punctuation (replaced by spaces of the same byte length)
UNICODE_PUNCT = "\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u00ab\u00bb\u2014\u2013\u2012\u2212\u2026\u00b0\u00d7\u00b7\u2022\u2192\u2190\u2194\u00b1\u2248\u2264\u2265\u2032\u2033\u00a7\u00b6\u00a0\u2009\u202f\u2002\u2003\u00bf\u00a1\u2010\u2011"
_PUNCT_BYTES = [(c.encode("utf-8"), b" " * len(c.encode("utf-8"))) for c in UNICODE_PUNCT]

_LUT = np.full(256, 32, np.uint8)
for _c in b"0123456789abcdefghijklmnopqrstuvwxyz":
    _LUT[_c] = _c
for _c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ":
    _LUT[_c] = _c + 32
_LUT[0] = 0
_LUT[128:] = np.arange(128, 256, dtype=np.uint8)


# byte classes for the vectorised pre-filters (Corpus.marks)
DOT, BANG, QUESTION, SEMI, RPAREN, NEWLINE, DASH, STAR, U_A6, U_A2, DIGIT = range(1, 12)
BYTE_CLASS = np.zeros(256, np.uint8)
for _b, _k in ((46, DOT), (33, BANG), (63, QUESTION), (59, SEMI), (41, RPAREN), (10, NEWLINE), (45, DASH), (42, STAR), (0xA6, U_A6), (0xA2, U_A2)):
    BYTE_CLASS[_b] = _k
BYTE_CLASS[48:58] = DIGIT
ALNUM = np.zeros(256, bool)
ALNUM[48:58] = ALNUM[65:91] = ALNUM[97:123] = True
SPACE = np.zeros(256, bool)
SPACE[[32, 9, 10, 13]] = True


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (in place on a uint64 array; returns it)."""
    with np.errstate(over="ignore"):
        x ^= x >> _U64(30)
        x *= _U64(0xBF58476D1CE4E5B9)
        x ^= x >> _U64(27)
        x *= _U64(0x94D049BB133111EB)
        x ^= x >> _U64(31)
    return x


def _clean(texts: Iterable[object]) -> list[str]:
    out = []
    for t in texts:
        if not isinstance(t, str):
            t = "" if t is None or (isinstance(t, float) and t != t) else str(t)
        out.append(t)
    return out


def normalize(text: str) -> str:
    """The normalised form of one text (same rules as Corpus.norm)."""
    return Corpus([text]).norm[0]


class Corpus:
    """A column of texts with their normalised forms, joined buffers and word hashes computed once."""

    def __init__(self, texts: Sequence[object]):
        texts = _clean(texts)
        if any(_SEP in t for t in texts):
            texts = [t.replace(_SEP, " ") for t in texts]
        self.texts: list[str] = texts
        self.n = len(texts)

    # ---- raw text ---------------------------------------------------------------------------

    @cached_property
    def lower(self) -> list[str]:
        return [t.lower() for t in self.texts]

    @cached_property
    def lower_joined(self) -> tuple[str, np.ndarray]:
        """All lower-cased texts joined by NUL, and each row's start offset (characters)."""
        return _joined(self.lower)

    @cached_property
    def raw_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        """UTF-8 bytes of the texts joined by NUL, and the positions of the NULs."""
        buf = np.frombuffer(_SEP.join(self.texts).encode("utf-8"), np.uint8)
        return buf, np.flatnonzero(buf == 0)

    def byte_rows(self, positions: np.ndarray) -> np.ndarray:
        """Row index of each position of raw_bytes."""
        return np.searchsorted(self.raw_bytes[1], positions)

    @cached_property
    def marks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(position, class, row) of the bytes of interest in raw_bytes (see BYTE_CLASS), in one pass."""
        buf, _ = self.raw_bytes
        cls = BYTE_CLASS[buf]
        pos = np.flatnonzero(cls)
        return pos, cls[pos], self.byte_rows(pos)

    # ---- normalised text ------------------------------------------------------------------------

    @cached_property
    def _norm_buffer(self) -> tuple[np.ndarray, str]:
        joined = " " + " \x00 ".join(t if t.isascii() else t.lower() for t in self.texts) + " "
        raw = joined.encode("utf-8")
        if not joined.isascii():
            for src, dst in _PUNCT_BYTES:
                if src in raw:
                    raw = raw.replace(src, dst)
        arr = _LUT[np.frombuffer(raw, np.uint8)]
        space = arr == 32
        keep = np.ones(len(arr), bool)
        keep[1:] = ~(space[1:] & space[:-1])
        arr = arr[keep]
        return arr, arr.tobytes().decode("utf-8", errors="replace")

    @cached_property
    def norm(self) -> list[str]:
        """Normalised texts, each with one space at both ends."""
        rows = self._norm_buffer[1].split(_SEP)
        return rows if self.n else []

    @cached_property
    def norm_joined(self) -> tuple[str, np.ndarray]:
        return _joined(self.norm)

    @cached_property
    def norm_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        """The normalised buffer (uint8, rows separated by NUL) and the NUL positions."""
        arr = self._norm_buffer[0]
        return arr, np.flatnonzero(arr == 0)

    # ---- lookups ----------------------------------------------------------------------------------

    def rows_with(self, phrases: Iterable[str], *, normalised: bool = True) -> dict[int, str]:
        """{row: first phrase found} for the rows containing any of `phrases` (plain substring search).

        With normalised=True, phrases are looked up in the normalised texts (pass them normalised, e.g.
        " and also "); otherwise in the lower-cased raw texts.
        """
        joined, starts = self.norm_joined if normalised else self.lower_joined
        found: dict[int, str] = {}
        for phrase in phrases:
            hits = _find_all(joined, phrase)
            if not hits:
                continue
            rows = np.searchsorted(starts, np.asarray(hits), side="right") - 1
            for r in np.unique(rows).tolist():
                found.setdefault(r, phrase)
        return found

    # ---- words and shingles ----------------------------------------------------------------------

    @cached_property
    def words(self) -> tuple[np.ndarray, np.ndarray]:
        """(hash, row) of every word of the normalised texts, in text order."""
        arr, seps = self.norm_bytes
        if not len(arr):
            return np.zeros(0, _U64), np.zeros(0, np.int64)
        is_word = (arr != 32) & (arr != 0)
        edge = np.flatnonzero(is_word[1:] != is_word[:-1]) + 1  # word starts and ends alternate (buffer starts with a space)
        starts, ends = edge[0::2], edge[1::2]
        lengths = ends - starts
        padded = np.concatenate([arr, np.zeros(8, np.uint8)])
        win = np.lib.stride_tricks.as_strided(padded, shape=(len(arr), 8), strides=(1, 1))
        first = np.ascontiguousarray(win[starts]).view(_U64).ravel()
        with np.errstate(over="ignore"):
            shift = np.minimum(lengths, 8).astype(_U64) * _U64(8)
            mask = np.where(shift >= 64, _MAX, (_U64(1) << (shift & _U64(63))) - _U64(1))
            h = first & mask
            long = np.flatnonzero(lengths > 8)
            if len(long):  # words longer than 8 bytes: also the last 8 bytes and the length
                last = np.ascontiguousarray(win[ends[long] - 8]).view(_U64).ravel()
                tail = _mix(last ^ (lengths[long].astype(_U64) * _U64(0x9E3779B97F4A7C15)))
                h[long] ^= tail
            h = _mix(h + _U64(0x632BE59BD9B4E019))
        rows = np.searchsorted(seps, starts)
        return h, rows

    def shingles(self, size: int, kind: str = "word") -> tuple[np.ndarray, np.ndarray]:
        """(hash, row) of the word n-grams (or character n-grams) of every normalised text, rows ascending.

        A text shorter than one shingle contributes one shingle made of all its words (none if it is empty).
        """
        key = ("shingles", size, kind)
        cache = self.__dict__.setdefault("_shingle_cache", {})
        if key not in cache:
            cache[key] = self._word_shingles(size) if kind == "word" else self._char_shingles(size)
        return cache[key]

    def _word_shingles(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        h, rows = self.words
        if n <= 1 or len(h) == 0:
            return h, rows
        m = len(h)
        with np.errstate(over="ignore"):
            acc = h[: m - n + 1].copy()
            for j in range(1, n):
                acc = _mix(acc * _U64(0x9E3779B97F4A7C15) + h[j : m - n + 1 + j])
        valid = rows[: m - n + 1] == rows[n - 1 :]
        out_h, out_r = acc[valid], rows[: m - n + 1][valid]
        # rows with fewer than n words: one shingle of all their words
        counts = np.bincount(rows, minlength=self.n)
        short = np.flatnonzero((counts > 0) & (counts < n))
        if len(short):
            first = np.searchsorted(rows, short)
            c = counts[short]
            extra = h[first].copy()
            with np.errstate(over="ignore"):
                for j in range(1, n - 1):
                    more = c > j
                    extra[more] = _mix(extra[more] * _U64(0x9E3779B97F4A7C15) + h[first[more] + j])
            out_h = np.concatenate([out_h, extra])
            out_r = np.concatenate([out_r, short])
            order = np.argsort(out_r, kind="stable")
            out_h, out_r = out_h[order], out_r[order]
        return out_h, out_r

    def _char_shingles(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Character k-grams (k <= 8) of the normalised texts without their padding spaces."""
        if not 1 <= k <= 8:
            raise ValueError("character shingles are 1 to 8 characters long")
        arr, seps = self.norm_bytes
        if not len(arr):
            return np.zeros(0, _U64), np.zeros(0, np.int64)
        # a window is valid when it lies inside one row and does not start or end on the padding space
        bad = (arr == 0).astype(np.int32)
        csum = np.concatenate([[0], np.cumsum(bad)])
        pos = np.arange(len(arr) - k + 1)
        ok = (csum[pos + k] - csum[pos]) == 0
        ok &= arr[pos] != 32
        ok &= arr[pos + k - 1] != 32
        pos = pos[ok]
        padded = np.concatenate([arr, np.zeros(8, np.uint8)])
        win = np.lib.stride_tricks.as_strided(padded, shape=(len(arr), 8), strides=(1, 1))
        v = np.ascontiguousarray(win[pos]).view(_U64).ravel()
        if k < 8:
            v &= _U64((1 << (8 * k)) - 1)
        return _mix(v + _U64(0x2545F4914F6CDD1D)), np.searchsorted(seps, pos)


def _joined(rows: list[str]) -> tuple[str, np.ndarray]:
    lengths = np.fromiter((len(r) + 1 for r in rows), np.int64, count=len(rows))
    starts = np.zeros(len(rows), np.int64)
    if len(rows) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    return _SEP.join(rows), starts


def _find_all(text: str, phrase: str) -> list[int]:
    out = []
    i = text.find(phrase)
    while i >= 0:
        out.append(i)
        i = text.find(phrase, i + 1)
    return out


def row_starts(rows: np.ndarray, n: int) -> np.ndarray:
    """For rows sorted ascending: start offset of each row 0..n (length n + 1)."""
    return np.searchsorted(rows, np.arange(n + 1))


# ---- MinHash (one-permutation hashing) and LSH banding ----------------------------------------------


def minhash(hashes: np.ndarray, rows: np.ndarray, n_rows: int, num_perm: int) -> tuple[np.ndarray, np.ndarray]:
    """MinHash signatures by one-permutation hashing with rotation densification.

    Each shingle hash goes to bin `hash % num_perm` and each bin keeps its minimum (the remaining bits),
    which is a min-wise sample of the set per bin; an empty bin borrows the value of the next non-empty
    bin to its right (cyclically) plus a per-distance offset (Shrivastava & Li, ICML 2014), so two sets
    collide in a bin with probability ~ their Jaccard similarity. Cost: one pass over the shingles.

    Returns (signatures[n_rows, num_perm] uint64, has_shingles[n_rows] bool).
    """
    B = int(num_perm)
    sig = np.full(n_rows * B, _MAX, _U64)
    if len(hashes):
        bins = (hashes % _U64(B)).astype(np.int64)
        np.minimum.at(sig, rows.astype(np.int64) * B + bins, hashes >> _U64(1))
    sig = sig.reshape(n_rows, B)
    empty = sig == _MAX
    has = ~empty.all(axis=1)
    fix = np.flatnonzero(empty.any(axis=1) & has)
    if len(fix):
        sub = sig[fix]
        e = empty[fix]
        big = np.int32(4 * B)
        idx = np.where(e, big, np.arange(B, dtype=np.int32)[None, :]).astype(np.int32)
        doubled = np.concatenate([idx, np.where(idx < big, idx + B, big)], axis=1)
        nxt = np.minimum.accumulate(doubled[:, ::-1], axis=1)[:, ::-1][:, :B]
        dist = (nxt - np.arange(B, dtype=np.int32)[None, :]).astype(_U64)
        src = np.take_along_axis(sub, (nxt % B).astype(np.int64), axis=1)
        with np.errstate(over="ignore"):
            filled = src + dist * _U64(0x9E3779B97F4A7C15)
        sig[fix] = np.where(e, filled, sub)
    return sig, has


def lsh_params(threshold: float, num_perm: int, recall: float = 0.999) -> tuple[int, int]:
    """(bands, rows per band): the most rows per band (fewest false candidates) such that a pair with
    Jaccard == threshold becomes a candidate with probability >= recall under the MinHash model."""
    best = (num_perm, 1)
    for r in range(1, num_perm + 1):
        b = num_perm // r
        if b < 1:
            break
        if 1 - (1 - threshold**r) ** b >= recall:
            best = (b, r)
    return best


def lsh_candidates(sig: np.ndarray, groups: np.ndarray, bands: int, rows_per_band: int, active: np.ndarray | None = None) -> np.ndarray:
    """Candidate pairs (i < j) of signature rows in the same group that agree on every value of some band.

    Band keys are hashed with the group, sorted, and runs of equal keys give the pairs: cost ~ n * bands.
    Returns an int64 array of shape (k, 2), unique pairs.
    """
    n = sig.shape[0]
    idx = np.arange(n) if active is None else np.flatnonzero(active)
    if len(idx) < 2:
        return np.zeros((0, 2), np.int64)
    rowbits = max(1, int(idx.max()).bit_length())
    if rowbits > 40:
        raise ValueError("too many rows for LSH packing")
    g = groups[idx].astype(_U64)
    keys = []
    with np.errstate(over="ignore"):
        base = _mix(g * _U64(0x9E3779B97F4A7C15) + _U64(1))
        for b in range(bands):
            k = base ^ _U64((b + 1) * 0xD6E8FEB86659FD93 % (1 << 64))
            for c in range(b * rows_per_band, (b + 1) * rows_per_band):
                k = _mix(k + sig[idx, c])
            keys.append(((k >> _U64(rowbits)) << _U64(rowbits)) | idx.astype(_U64))
    packed = np.sort(np.concatenate(keys))
    hi = packed >> _U64(rowbits)
    lo = (packed & _U64((1 << rowbits) - 1)).astype(np.int64)
    same = hi[1:] == hi[:-1]
    if not same.any():
        return np.zeros((0, 2), np.int64)
    # runs of equal keys
    start_mask = np.concatenate([[True], ~same])
    run_id = np.cumsum(start_mask) - 1
    run_len = np.bincount(run_id)
    in_multi = run_len[run_id] >= 2
    pairs = []
    two = in_multi & (run_len[run_id] == 2) & start_mask
    p2 = np.flatnonzero(two)
    if len(p2):
        pairs.append(np.stack([lo[p2], lo[p2 + 1]], axis=1))
    big_runs = np.flatnonzero(run_len > 2)
    if len(big_runs):
        run_start = np.flatnonzero(start_mask)
        extra = []
        for r in big_runs.tolist():
            members = sorted(set(lo[run_start[r] : run_start[r] + run_len[r]].tolist()))
            extra += [(a, b) for i, a in enumerate(members) for b in members[i + 1 :]]
        if extra:
            pairs.append(np.asarray(extra, np.int64))
    if not pairs:
        return np.zeros((0, 2), np.int64)
    p = np.concatenate(pairs)
    p = np.sort(p, axis=1)
    p = p[p[:, 0] != p[:, 1]]
    code = np.unique(p[:, 0] * n + p[:, 1])
    return np.stack([code // n, code % n], axis=1)

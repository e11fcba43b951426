"""Vectorised text machinery for the validation checks: normalisation, word hashes, shingles, one-permutation
MinHash with LSH banding, and RE2 pre-filters over Arrow string columns.

Everything here works on a whole column at once: the texts are joined into one buffer and processed with
numpy (byte lookup tables, gathers, sorting) or with pyarrow.compute kernels, so the cost is linear in the
total text length (up to a sort) and no Python code runs per character, word or shingle.

Normalised text ("norm") is: ASCII letters lower-cased, every ASCII character that is not a letter or
digit (and a list of common Unicode punctuation) replaced by a space, runs of spaces collapsed, and one
space added at both ends: "The answer: (B) 9.8 m/s!" -> " the answer b 9 8 m s ". Non-ASCII letters are
kept (lower-cased when the text has any). With that padding, `" mitochondria " in norm` is a whole-word
match with no regular expression.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
_TABLE = _LUT.tobytes()  # the same lookup for bytes.translate (C speed, ~3x numpy's gather)
_TABLE_NUL = bytes(32 if i == 0 else b for i, b in enumerate(_TABLE))  # ... with a NUL read as a space


_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


def _unaligned_u64(arr: np.ndarray) -> np.ndarray:
    """A uint64 view reading the 8 bytes that start at each position of a uint8 array (little-endian;
    zero-padded at the end): gathering from it reads a word's first 8 bytes in one step."""
    padded = np.concatenate([arr, np.zeros(8, np.uint8)])
    view = np.ndarray(shape=(len(arr),), dtype="<u8", buffer=padded, offset=0, strides=(1,))
    return view


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
    items = texts if isinstance(texts, list) else list(texts)
    if all(type(t) is str for t in items):
        return cast("list[str]", items)  # every item was just checked to be a str
    out: list[str] = []
    for t in items:
        if not isinstance(t, str):
            t = "" if t is None or (isinstance(t, float) and t != t) else str(t)
        out.append(t)
    return out


def _listed(arr: pa.Array | pa.ChunkedArray) -> list[str]:
    """An Arrow string column as a list of str ("" for a null)."""
    return cast("list[str]", pc.fill_null(arr, "").to_numpy(zero_copy_only=False).tolist())


def normalize(text: str) -> str:
    """The normalised form of one text (same rules as Corpus.norm)."""
    return Corpus([text]).norm[0]


class Corpus:
    """A column of texts with their normalised forms, joined buffers and word hashes computed once.

    Buffers join the rows with " \\x00 " (a NUL between two spaces) so every row is padded by spaces.
    """

    def __init__(
        self,
        texts: Sequence[object] | None = None,
        arrow: pa.Array | pa.ChunkedArray | None = None,
        *,
        clean: bool = True,
    ):
        """`texts`: the column (None/NaN/non-strings are read as ""; pass clean=False when every item is
        already a str). `arrow`: the same column as an Arrow string array, if the caller has one; with `arrow`
        alone the texts are listed only if a caller asks for them all (``texts_of`` reads some), and an ASCII column
        is normalised straight from its Arrow buffers (no Python string per row)."""
        if texts is None and arrow is None:
            raise ValueError("a Corpus needs texts or an Arrow string array")
        if texts is not None:
            self.texts = _clean(texts) if clean else cast("list[str]", texts)  # clean=False: all str
        self.n = len(texts) if texts is not None else len(cast("pa.Array", arrow))
        if arrow is not None:
            self.__dict__["arrow"] = arrow

    @cached_property
    def texts(self) -> list[str]:
        """The texts ("" for a null), listed from the Arrow array (only when the Corpus was made from one)."""
        return _listed(self.arrow)

    def texts_of(self, rows: np.ndarray) -> list[str]:
        """The texts of `rows` ("" for a null), in order, without listing the whole column."""
        listed = self.__dict__.get("texts")
        if listed is not None:
            return [listed[i] for i in rows.tolist()]
        return _listed(self.arrow.take(pa.array(rows, pa.int64()))) if len(rows) else []

    @cached_property
    def arrow(self) -> pa.Array | pa.ChunkedArray:
        """The texts as an Arrow string array (for the RE2 kernels of pyarrow.compute)."""
        return pa.array(self.texts, pa.string())

    @cached_property
    def _joined(self) -> str:
        joined = " " + " \x00 ".join(self.texts) + " "
        if joined.count(_SEP) != max(self.n - 1, 0):  # a text holds a NUL: blank it out
            self.texts = [t.replace(_SEP, " ") for t in self.texts]
            joined = " " + " \x00 ".join(self.texts) + " "
        return joined

    # ---- normalised text ------------------------------------------------------------------------

    def _arrow_translated(self) -> np.ndarray | None:
        """The joined, translated buffer (before collapsing spaces) built from the Arrow column's own offsets and
        data, when the Corpus was given one that is ASCII without nulls; else None (the texts' path)."""
        if "arrow" not in self.__dict__ or "texts" in self.__dict__ or self.n == 0:
            return None
        arr = self.arrow
        arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
        if arr.null_count or not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            return None
        odt = np.dtype(np.int64 if pa.types.is_large_string(arr.type) else np.int32)
        _, offsets_buf, data_buf = arr.buffers()
        off = np.frombuffer(offsets_buf, odt, count=len(arr) + 1, offset=arr.offset * odt.itemsize).astype(np.int64)
        if data_buf is None:  # every text empty
            data = np.zeros(0, np.uint8)
        else:
            data = np.frombuffer(data_buf, np.uint8, count=int(off[-1] - off[0]), offset=int(off[0]))
        if len(data) and data.max() >= 128:
            return None  # non-ASCII: lower-casing and Unicode punctuation need the texts
        off -= off[0]
        translated = np.frombuffer(data.tobytes().translate(_TABLE_NUL), np.uint8)  # a NUL in a text: a space
        # " " + row 0 + " \x00 " + row 1 + ... + " ": the padding and separators inserted at the row boundaries
        at = np.concatenate([[0], np.repeat(off[1:-1], 3), [len(data)]])
        fill = np.concatenate([[32], np.tile(np.array([32, 0, 32], np.uint8), self.n - 1), [32]]).astype(np.uint8)
        return np.insert(translated, at, fill)

    @cached_property
    def _norm_buffer(self) -> tuple[np.ndarray, str]:
        arr = self._arrow_translated()
        if arr is None:
            if self._joined.isascii():
                b = self._joined.encode("ascii")
            else:
                joined = " " + " \x00 ".join(t if t.isascii() else t.lower() for t in self.texts) + " "  # see _joined
                b = joined.encode("utf-8")
                for src, dst in _PUNCT_BYTES:
                    if src in b:
                        b = b.replace(src, dst)
            arr = np.frombuffer(b.translate(_TABLE), np.uint8)
        space = arr == 32
        space[1:] &= space[:-1]
        space[0] = False
        arr = arr[~space]
        if not len(arr) or arr.max() < 128:  # ASCII: latin-1 is the same text, decoded by a plain copy
            return arr, arr.tobytes().decode("latin-1")
        return arr, arr.tobytes().decode("utf-8", errors="replace")

    @cached_property
    def norm_joined(self) -> tuple[str, np.ndarray]:
        """The normalised texts joined by NUL (each row " ... " with its padding) and each row's start offset."""
        text = self._norm_buffer[1]
        if self.normalised_ascii:  # character offsets are byte offsets
            return text, _starts_from_seps(self.norm_bytes[1], self.n)
        return text, _starts_from_lengths([len(r) for r in text.split(_SEP)])

    @cached_property
    def norm(self) -> list[str]:
        """Normalised texts, each with one space at both ends."""
        return self._norm_buffer[1].split(_SEP) if self.n else []

    def norm_row(self, i: int) -> str:
        text, starts = self.norm_joined
        end = starts[i + 1] - 1 if i + 1 < self.n else len(text)
        return text[starts[i] : end]

    @cached_property
    def norm_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        """The normalised buffer (uint8, rows separated by NUL) and the NUL positions."""
        arr = self._norm_buffer[0]
        return arr, np.flatnonzero(arr == 0)

    @property
    def normalised_ascii(self) -> bool:
        """Is every normalised text ASCII (no character beyond ASCII that normalising kept: a letter, a space
        that is not in ``UNICODE_PUNCT``)? (Then its characters are its bytes.)"""
        arr, text = self._norm_buffer
        return len(text) == len(arr)

    # ---- words and shingles ----------------------------------------------------------------------

    @cached_property
    def _word_spans(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, end, row) of every word of the normalised buffer, in text order."""
        arr, _ = self.norm_bytes
        if not len(arr):
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        # the collapsed buffer is " w w \x00 w w \x00 ... ": words lie between consecutive spaces, and every
        # gap between two spaces is a word or a row separator (no two spaces are adjacent)
        sp = np.flatnonzero(arr == 32)
        starts, ends = sp[:-1] + 1, sp[1:]
        is_sep = arr[starts] == 0
        rows_all = np.cumsum(is_sep, dtype=np.int32)  # (int32: several times faster than int64's cumsum)
        is_word = ~is_sep
        return starts[is_word], ends[is_word], rows_all[is_word].astype(np.int64)

    @cached_property
    def words(self) -> tuple[np.ndarray, np.ndarray]:
        """(hash, row) of every word of the normalised texts, in text order.

        A word's hash mixes its first 8 bytes, and for longer words its last 8 bytes and its length: it depends
        on the word alone, so equal words of two corpora have equal hashes.
        """
        starts, ends, rows = self._word_spans
        if not len(starts):
            return np.zeros(0, _U64), rows
        arr, _ = self.norm_bytes
        lengths = ends - starts
        u64 = _unaligned_u64(arr)
        h = u64[starts]  # the 8 bytes from each word start (little-endian), masked to the word
        h &= _MASKS[np.minimum(lengths, 8)]
        with np.errstate(over="ignore"):
            long = np.flatnonzero(lengths > 8)
            if len(long):  # words longer than 8 bytes: also the last 8 bytes and the length
                last = u64[ends[long] - 8]
                h[long] ^= _mix(last ^ (lengths[long].astype(_U64) * _U64(0x9E3779B97F4A7C15)))
            h += _U64(0x632BE59BD9B4E019)
        return _mix(h), rows

    def longest_words(self) -> tuple[np.ndarray, np.ndarray]:
        """(hash, row) of each row's longest word (the first of equal length; rows without words: none),
        rows ascending: ``max(norm.split(), key=len)`` of every row, hashed as in ``words``."""
        starts, ends, rows = self._word_spans
        h, _ = self.words
        order = np.lexsort((starts - ends, rows))  # by row, then longest first (stable: the first of equals)
        first = order[np.r_[True, rows[order][1:] != rows[order][:-1]]] if len(order) else order
        return h[first], rows[first]

    def longest_inner_words(self) -> tuple[np.ndarray, np.ndarray]:
        """(hash, row) of each row's longest word other than its first and last (rows of fewer than three words:
        none), rows ascending: a text that holds the row as a substring holds this word whole (the first and
        last may be parts of longer words there)."""
        starts, ends, rows = self._word_spans
        h, _ = self.words
        if not len(rows):
            return h, rows
        new_row = rows[1:] != rows[:-1]
        inner = ~(np.r_[True, new_row] | np.r_[new_row, True])
        s, e, r, hh = starts[inner], ends[inner], rows[inner], h[inner]
        order = np.lexsort((s - e, r))  # by row, then longest first
        first = order[np.r_[True, r[order][1:] != r[order][:-1]]] if len(order) else order
        return hh[first], r[first]

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
        v = _unaligned_u64(arr)[pos]
        if k < 8:
            v &= _U64((1 << (8 * k)) - 1)
        return _mix(v + _U64(0x2545F4914F6CDD1D)), np.searchsorted(seps, pos)


def arrow_strings(values: Iterable[object]) -> pa.Array | pa.ChunkedArray:
    """A column as an Arrow string array: zero-copy for Arrow-backed pandas columns, else converted
    (non-strings become null)."""
    try:
        arr = pa.array(values)
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            return arr
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        pass
    vals = values.tolist() if hasattr(values, "tolist") else list(values)
    return pa.array([v if isinstance(v, str) else None for v in vals], pa.string())


def regex_mask(arr: pa.Array | pa.ChunkedArray, pattern: str) -> np.ndarray:
    """Per-row: does the RE2 pattern match (null rows: False)."""
    out = pc.match_substring_regex(arr, pattern).fill_null(False)
    out = out if isinstance(out, pa.Array) else out.combine_chunks()
    return out.to_numpy(zero_copy_only=False)


def _starts_from_seps(seps: np.ndarray, n: int) -> np.ndarray:
    """Row start offsets in a " \\x00 "-joined buffer: 0, then one past each NUL."""
    return np.concatenate([[0], seps[: max(n - 1, 0)] + 1]).astype(np.int64)[:n]


def _starts_from_lengths(lengths: list[int]) -> np.ndarray:
    """Row start offsets when each row is followed by one separator character (the NUL)."""
    ln = np.asarray(lengths, np.int64) + 1
    starts = np.zeros(len(ln), np.int64)
    if len(ln) > 1:
        np.cumsum(ln[:-1], out=starts[1:])
    return starts


def row_starts(rows: np.ndarray, n: int) -> np.ndarray:
    """For rows sorted ascending: start offset of each row 0..n (length n + 1)."""
    return np.searchsorted(rows, np.arange(n + 1))


# ---- MinHash (one-permutation hashing) and LSH banding ----------------------------------------------


def oph_signatures(hashes: np.ndarray, rows: np.ndarray, n_rows: int, num_perm: int) -> np.ndarray:
    """Raw one-permutation MinHash: each shingle hash goes to bin `hash % num_perm`, each bin keeps its
    minimum (of the remaining bits); an empty bin holds the maximum uint64. Shape (n_rows, num_perm).

    Bin-wise, the signature of a union is the minimum of the signatures, and A <= B (as sets) implies
    sig(B) <= sig(A) in every bin.
    """
    B = int(num_perm)
    flat = np.full(n_rows * B, _MAX, _U64)
    if len(hashes):
        bins = (hashes & _U64(B - 1)) if B & (B - 1) == 0 else (hashes % _U64(B))
        key = rows.astype(_U64) * _U64(B) + bins
        np.minimum.at(flat, key.view(np.int64), hashes >> _U64(1))
    return flat.reshape(n_rows, B)


def oph_similarity(sig: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Jaccard estimates of row pairs (a[i], b[i]) from raw one-permutation signatures (rows x bins):
    bins where both sets have the same minimum / bins where either set has an element."""
    sa, sb = sig[a], sig[b]
    both = ((sa == sb) & (sa != _MAX)).sum(axis=1)
    either = ((sa != _MAX) | (sb != _MAX)).sum(axis=1)
    return both / np.maximum(either, 1)


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


def group_pair_similarity(
    sig: np.ndarray, groups: np.ndarray, max_group: int = 16
) -> tuple[np.ndarray, np.ndarray] | None:
    """Every pair (i < j) of rows of raw one-permutation signatures in the same group, sorted by (i, j),
    with its Jaccard estimate (as `oph_similarity`); None when some group has more than `max_group` rows
    (then LSH banding is cheaper than all pairs).

    One question holds a handful of premises, so comparing all of its pairs costs ~ n * group size and
    finds every near-duplicate (LSH banding finds each with probability `recall`). Rows are compared in
    group order as shifted slices (row k against row k + d), so no signature is gathered twice."""
    n = len(groups)
    if n < 2:
        return np.zeros((0, 2), np.int64), np.zeros(0)
    in_order = bool((groups[1:] >= groups[:-1]).all())  # rows usually come grouped: no sort, no gather
    order = np.arange(n) if in_order else np.argsort(groups, kind="stable")
    g = groups if in_order else groups[order]
    starts = np.flatnonzero(np.concatenate([[True], g[1:] != g[:-1]]))
    biggest = int(np.diff(np.append(starts, n)).max())
    if biggest > max_group:
        return None
    s = np.ascontiguousarray(sig if in_order else sig[order])
    full = s != _MAX
    pairs, est = [], []
    for d in range(1, biggest):
        same = np.flatnonzero(g[d:] == g[:-d])
        eq = s[:-d] == s[d:]  # every row against the row d below (contiguous slices), then the same-group ones
        eq &= full[:-d]
        both = _row_counts(eq)[same]
        either = _row_counts(full[:-d] | full[d:])[same]
        pairs.append(np.stack([order[same], order[same + d]], axis=1))
        est.append(both / np.maximum(either, 1))
    if not pairs:
        return np.zeros((0, 2), np.int64), np.zeros(0)
    p, e = np.concatenate(pairs), np.concatenate(est)
    swap = p[:, 0] > p[:, 1]
    p[swap] = p[swap][:, ::-1]
    key = np.argsort(p[:, 0] * n + p[:, 1])
    return p[key], e[key]


def _row_counts(b: np.ndarray) -> np.ndarray:
    """True values per row of a C-contiguous bool matrix (a popcount of its bytes when rows are whole words)."""
    if b.shape[1] % 8 == 0 and b.flags.c_contiguous:
        return np.bitwise_count(b.view(np.uint64)).sum(axis=1, dtype=np.int64)
    return np.count_nonzero(b, axis=1)


def lsh_candidates(sig: np.ndarray, groups: np.ndarray, bands: int, rows_per_band: int) -> np.ndarray:
    """Candidate pairs (i < j) of rows of raw one-permutation signatures (rows x bins) in the same group
    that agree on every bin of some band.

    Empty bins (the maximum uint64) take part in a band's key, but a band whose bins are all empty in a
    row is not bucketed: two sets then share a band with probability >= J ** rows_per_band (a bin that
    is empty for both agrees for free), so no densification is needed. When bands * rows_per_band is
    less than the number of bins, one more band covers the last rows_per_band bins. Band keys are
    hashed with the group, sorted, and runs of equal keys give the pairs: cost ~ n * bands.
    Returns an int64 array of shape (k, 2), unique pairs.
    """
    n, B = sig.shape
    if n < 2:
        return np.zeros((0, 2), np.int64)
    rowbits = max(1, int(n).bit_length())
    if rowbits > 40:
        raise ValueError("too many rows for LSH packing")
    cols = np.ascontiguousarray(sig.T)
    idx = np.arange(n, dtype=_U64)
    spans = [(b * rows_per_band, (b + 1) * rows_per_band) for b in range(bands)]
    if bands * rows_per_band < B:
        spans.append((B - rows_per_band, B))
    keys = []
    with np.errstate(over="ignore"):
        base = _mix(groups.astype(_U64) * _U64(0x9E3779B97F4A7C15) + _U64(1))
        for b, (lo_c, hi_c) in enumerate(spans):
            k = base ^ _U64((b + 1) * 0xD6E8FEB86659FD93 % (1 << 64))
            empty = np.ones(n, bool)
            for c in range(lo_c, hi_c):
                k += cols[c]
                k = _mix(k)
                empty &= cols[c] == _MAX
            k >>= _U64(rowbits)
            k <<= _U64(rowbits)
            k |= idx
            keys.append(k[~empty])
    packed = np.sort(np.concatenate(keys))
    hi = packed >> _U64(rowbits)
    lo = (packed & _U64((1 << rowbits) - 1)).astype(np.int64)
    same = hi[1:] == hi[:-1]
    if not same.any():
        return np.zeros((0, 2), np.int64)
    # runs of equal keys: pairs of neighbours, and every pair of the (rare) longer runs
    start_mask = np.concatenate([[True], ~same])
    run_id = np.cumsum(start_mask) - 1
    run_len = np.bincount(run_id)
    pairs = []
    p2 = np.flatnonzero(start_mask & (run_len[run_id] == 2))
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
    p = np.sort(np.concatenate(pairs), axis=1)
    p = p[p[:, 0] != p[:, 1]]
    code = np.unique(p[:, 0] * n + p[:, 1])
    return np.stack([code // n, code % n], axis=1)

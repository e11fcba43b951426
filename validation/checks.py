"""Rule-based (non-LLM) checks of augmentations: single mutation, distinctness, no leakage.

Every check takes DataFrames (or records), returns a list of Rejection and costs time linear in the number
of rows: texts are processed a column at a time (phr.validation.textops), the per-row Python that remains
is a substring test or runs only on the few rows a vectorised pre-filter flags, and pairwise comparisons
go through MinHash/LSH or a sort instead of all pairs. docs/validation.md describes each rule.

    report = run_checks(questions_df, augmentations_df)          # schemas + every check
    print(report.render()); report.ok; report.by_check()
"""

from __future__ import annotations

import math
import re
import time
from collections import defaultdict
from collections.abc import Callable
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from .config import DistinctnessConfig, LeakageConfig, SingleMutationConfig, ValidationConfig
from .report import Rejection, ValidationReport
from .schemas import to_frame, validate_frame
from . import textops as T
from .textops import Corpus, _mix, lsh_candidates, lsh_params, minhash, row_starts

__all__ = [
    "single_mutation",
    "distinctness",
    "leakage",
    "run_checks",
    "references",
    "split_sentences",
    "enumeration_markers",
    "parse_numbers",
    "numeric_value",
]

_U64 = np.uint64
LETTERS = "ABCDEFGHIJ"


# ---- small helpers ----------------------------------------------------------------------------------


def _short(text: str, n: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _present(values: pd.Series | None, n: int) -> np.ndarray:
    """Boolean mask: the value is a non-blank string (or any other non-null value)."""
    if values is None:
        return np.zeros(n, bool)
    notna = values.notna().to_numpy(bool)
    try:
        blank = values.str.strip().str.len().fillna(0).to_numpy() == 0
        is_str = values.map(lambda v: isinstance(v, str)).to_numpy(bool) if values.dtype == object else notna
        return notna & ~(is_str & blank)
    except AttributeError:  # not a string column
        return notna


def _strs(values: Any, n: int) -> list[str]:
    """The values as strings ("" for null), fast for pandas string columns."""
    if values is None:
        return [""] * n
    vals = values.tolist() if hasattr(values, "tolist") else list(values)
    return [v if isinstance(v, str) else "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v) for v in vals]


# ---- sentences, lists -----------------------------------------------------------------------------------

_BOUNDARY = re.compile(r"([.!?\u2026]+)([\"'\u201d\u2019)\]]*)\s+(?=(\S))")
_LAST_TOKEN = re.compile(r"(\S+)$")


def split_sentences(text: str, abbreviations: tuple[str, ...] = SingleMutationConfig.abbreviations) -> list[str]:
    """Sentences of `text`: a break is [.!?] (+ closing quotes/brackets) + whitespace + the next sentence,
    except after an abbreviation ("e.g.", "Fig.", "approx."), a single-letter initial ("J. Smith") or
    before a lower-case letter ("approx. five")."""
    abbrev = {a.lower().rstrip(".") for a in abbreviations}
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        nxt = m.group(3)
        if m.group(1) == ".":
            tok = _LAST_TOKEN.search(text, 0, m.start())
            word = tok.group(1).lstrip("([{\"'\u201c\u2018").lower() if tok else ""
            if word in abbrev or (len(word) == 1 and word.isalpha()):
                continue
        if nxt.islower():
            continue
        piece = text[start : m.end(2)].strip()
        if piece:
            out.append(piece)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


_LINE_MARKER = re.compile(r"(?m)^[ \t]*(?:[-*\u2022\u25e6\u2023\u25aa\u00b7]|\(?\d{1,2}[.)]|\(?[a-hA-H][.)]|\(?[ivxIVX]{1,4}[.)])[ \t]+\S")
_INLINE_PAREN = re.compile(r"(?:^|(?<=[\s:;,]))\(?(\d{1,2}|[a-h]|[ivx]{1,4})\)\s")
_INLINE_DOT = re.compile(r"(?:^|(?<=[\s:;,]))(\d{1,2})\.\s+(?=[A-Za-z(])")
_ORDINAL = re.compile(r"(?i)(?:^|(?<=[.;:]\s)|(?<=[.;:]))\s*(first(?:ly)?|second(?:ly)?|third(?:ly)?|fourth(?:ly)?|finally|lastly)\s*,")
_INLINE_BULLET = re.compile(r"(?:^|(?<=\s))([\u2022\u25e6\u2023\u25aa])\s")
_ROMAN = {"i": 1, "ii": 2, "iii": 3, "iv": 4, "v": 5, "vi": 6, "vii": 7, "viii": 8, "ix": 9, "x": 10}


def _ordinal(token: str) -> int | None:
    if token.isdigit():
        return int(token)
    if token in _ROMAN:
        return _ROMAN[token]
    if len(token) == 1 and token.isalpha():
        return ord(token) - ord("a") + 1
    return None


def _consecutive_run(tokens: list[str]) -> list[str]:
    """The longest run of markers numbered k, k+1, ... in order of appearance (as a list of markers)."""
    best: list[str] = []
    for i, t in enumerate(tokens):
        v = _ordinal(t)
        if v is None:
            continue
        run, want = [t], v + 1
        for u in tokens[i + 1 :]:
            w = _ordinal(u)
            if w == want or (u in _ROMAN and _ROMAN[u] == want):
                run.append(u)
                want += 1
        if len(run) > len(best):
            best = run
    return best


def enumeration_markers(text: str) -> list[str]:
    """Markers of an enumeration in `text`: bullets or numbered items at line starts, inline "(1) ... (2)",
    "1) ... 2)", "1. ... 2.", "(a) ... (b)", or "First, ... Second, ...". A lone "(2)" or "5." is not a list
    (numbered markers count only as a consecutive run)."""
    lines = [m.group(0).strip()[:-1].strip() for m in _LINE_MARKER.finditer(text)]
    if len(lines) >= 2:
        return lines
    paren = _consecutive_run([m.group(1) for m in _INLINE_PAREN.finditer(text)])
    dot = _consecutive_run([m.group(1) for m in _INLINE_DOT.finditer(text)])
    ordinals = list(dict.fromkeys(m.group(1).lower() for m in _ORDINAL.finditer(text)))
    bullets = [m.group(1) for m in _INLINE_BULLET.finditer(text)]
    best = max((paren, dot, ordinals, bullets, lines), key=len)
    return best if len(best) >= 2 else (lines if lines else [])


# ---- numbers --------------------------------------------------------------------------------------------

_SUP = str.maketrans("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b\u207a\u2212", "0123456789--" + "-")
_NUMBER = re.compile(
    r"(?<![\w.^])(?P<m>\d{1,3}(?:,\d{3})+(?![\d,])|\d+(?:\.\d+)?|\.\d+)"
    r"(?:\s*[eE](?P<e1>[-+\u2212]?\d+)\b"
    r"|\s*[\u00d7x*\u00b7]\s*10\s*(?:\^|\*\*)?\s*(?P<e2>[-+\u2212\u207b]?[\d\u2070\u00b9\u00b2\u00b3\u2074-\u2079]+)"
    r"|(?:\^|\*\*)(?P<e3>[-+\u2212]?\d+))?"
)


def parse_numbers(text: str) -> list[tuple[float, str]]:
    """(absolute value, matched text) of every number in `text`: 9.8, 9.80, 1,000, 3.2e5, 3.2 x 10^5,
    3.2 x 10⁵, 10^-3. Digits inside words (CO2, H2O, m/s^2) are not numbers."""
    out = []
    for m in _NUMBER.finditer(text):
        try:
            value = float(m.group("m").replace(",", ""))
            if m.group("e1"):
                value *= 10.0 ** int(m.group("e1").translate(_SUP))
            elif m.group("e2"):
                value *= 10.0 ** int(m.group("e2").translate(_SUP))
            elif m.group("e3"):
                value **= int(m.group("e3").translate(_SUP))
        except (ValueError, OverflowError):
            continue
        out.append((abs(value), m.group(0)))
    return out


def numeric_value(text: str, max_unit_chars: int = 16) -> float | None:
    """The value of a numeric answer ("9.8", "9.8 m/s^2", "-40 °C", "25%", "3.2 x 10^5 J"), else None:
    exactly one number, at the start (after an optional sign, ~, ≈ or currency symbol), followed by at
    most `max_unit_chars` characters of unit."""
    text = text.strip()
    nums = list(_NUMBER.finditer(text))
    if len(nums) != 1:
        return None
    m = nums[0]
    if m.start() > 0 and text[: m.start()].strip() not in ("-", "+", "\u2212", "~", "\u2248", "$", "\u20ac", "\u00a3", "\u00b1"):
        return None
    if len(text) - m.end() > max_unit_chars:
        return None
    parsed = parse_numbers(m.group(0))
    return parsed[0][0] if parsed else None


def _close(a: float, b: float, rel: float, abs_: float) -> bool:
    return abs(a - b) <= max(rel * max(abs(a), abs(b)), abs_)


# ---- labels -----------------------------------------------------------------------------------------

_LABEL = re.compile(
    r"(?i:\b(?:(?:correct|right|true|best)\s+)?(?:answer|candidate|option|choice)s?\b)"
    r"(?:\s+(?i:is|was|would\s+be|must\s+be|should\s+be|will\s+be|=|number|no\.?|#))?"
    r"\s*[:=]?\s*(?:\((?P<p>[1-9]|[A-Ja-j])\)|(?P<b>[1-9]|[A-J])(?![\w.,]?\d)\b)"
    r"|\((?P<q>[1-9]|[A-Ja-j])\)\s+(?i:is|was)\s+(?i:the\s+)?(?i:correct|right|true|best|answer)"
)
_LABEL_WORDS = ("answer", "option", "candidate", "choice", "correct", "right", "best")


# ---- code -------------------------------------------------------------------------------------------------

_CODE_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d+)?|[^\s\w]")
_CODE_CHARS = re.compile(r"[=\[\]{}_`<>%]|\w\(|\b(?:return|lambda|def)\b")


def _ws(text: str) -> str:
    return " ".join(text.split())


# ---- the shared context -------------------------------------------------------------------------------


class _Context:
    """The augmentation rows joined to their questions, with every derived column computed once."""

    def __init__(self, augs: Any, questions: Any | None, config: ValidationConfig):
        self.config = config
        self.A = to_frame(augs).reset_index(drop=True)
        self.Q = None if questions is None else to_frame(questions).reset_index(drop=True)
        n = self.n = len(self.A)
        col = self.A.get
        raw_ids = _strs(col("id"), n)
        self.ids = [x or f"<augmentations>[{i}]" for i, x in enumerate(raw_ids)]
        self.kind = np.asarray(_strs(col("kind"), n), dtype=object)
        self.is_h = self.kind == "hallucinated"
        self.is_t = self.kind == "truthful"
        self.question_ids = _strs(col("question_id"), n)
        self.corpus = Corpus(_strs(col("statement"), n))
        if self.Q is not None and len(self.Q) and "id" in self.Q.columns:
            qids = pd.Index(_strs(self.Q["id"], len(self.Q)))
            first = ~qids.duplicated()
            lookup = pd.Series(np.flatnonzero(first), index=qids[first])
            self.qpos = lookup.reindex(self.question_ids).fillna(-1).to_numpy(np.int64)
        else:
            self.qpos = np.full(n, -1, np.int64)
        self.has_q = self.qpos >= 0
        # group = question: its row in Q, else a code of its question_id
        codes, _ = pd.factorize(pd.Series(self.question_ids, dtype=object))
        offset = len(self.Q) if self.Q is not None else 0
        self.group = np.where(self.has_q, self.qpos, offset + codes)

    # question columns, one value per question row
    def qcol(self, name: str) -> list[Any]:
        if self.Q is None or name not in self.Q.columns:
            return [None] * (0 if self.Q is None else len(self.Q))
        return self.Q[name].tolist()

    def per_row(self, values: list[Any], default: Any = None) -> list[Any]:
        """A per-question list mapped onto the augmentation rows."""
        return [values[p] if p >= 0 else default for p in self.qpos.tolist()]

    @cached_property
    def domain(self) -> list[str]:
        """Each row's question domain (from the questions, else a `domain` column of the augmentations)."""
        own = _strs(self.A["domain"], self.n) if "domain" in self.A.columns else [""] * self.n
        if self.Q is None or "domain" not in self.Q.columns:
            return own
        qd = _strs(self.Q["domain"], len(self.Q))
        return [qd[p] if p >= 0 else o for p, o in zip(self.qpos.tolist(), own, strict=True)]

    @cached_property
    def q_corpus(self) -> Corpus:
        return Corpus(_strs(self.qcol("question"), len(self.Q) if self.Q is not None else 0))


def _finish(found: list[tuple[int, str]], ids: list[str], check: str) -> list[Rejection]:
    found.sort(key=lambda x: x[0])
    return [Rejection(ids[i], check, reason) for i, reason in found]


# ---- single mutation -------------------------------------------------------------------------------------


def single_mutation(augmentations: Any, questions: Any | None = None, config: ValidationConfig | SingleMutationConfig | None = None) -> list[Rejection]:
    """Each hallucinated premise is one statement carrying one error; truthful rows carry no mutation fields.

    `questions` (or a `domain` column on the augmentations) is needed for the code-domain rule.
    """
    cfg = _config(config)
    return _single_mutation(_Context(augmentations, questions, cfg), cfg.single_mutation)


def _single_mutation(ctx: _Context, cfg: SingleMutationConfig) -> list[Rejection]:
    A, n = ctx.A, ctx.n
    found: list[tuple[int, str]] = []
    is_h, is_t = ctx.is_h, ctx.is_t
    has_mt = _present(A.get("mutation_type"), n)
    has_logic = _present(A.get("mutation_logic"), n)
    has_strategy = _present(A.get("mutation_strategy"), n)
    mt = A["mutation_type"] if "mutation_type" in A.columns else pd.Series([None] * n)

    # -- mutation fields (vectorised masks; Python only for the rows that fail)
    allowed = mt.isin(list(cfg.allowed_mutation_types)).to_numpy(bool)
    code_ok = mt.isin(list(cfg.code_mutation_types)).to_numpy(bool)
    in_code = np.isin(np.asarray(ctx.domain, dtype=object), list(cfg.code_domains))
    mt_list = mt.tolist()
    for i in np.flatnonzero(is_h & ~has_mt).tolist():
        found.append((i, "hallucinated premise has no mutation_type"))
    for i in np.flatnonzero(is_h & has_mt & ~allowed).tolist():
        found.append((i, f"mutation_type {mt_list[i]!r} is not one of {', '.join(sorted(cfg.allowed_mutation_types))}"))
    for i in np.flatnonzero(is_h & allowed & in_code & ~code_ok).tolist():
        found.append((i, f"code question premise has mutation_type {mt_list[i]!r}; {ctx.domain[i]} allows only {', '.join(sorted(cfg.code_mutation_types))}"))
    if cfg.require_mutation_logic:
        for i in np.flatnonzero(is_h & ~has_logic).tolist():
            found.append((i, "hallucinated premise has no mutation_logic naming its error"))
    for i in np.flatnonzero(is_t & (has_mt | has_logic | has_strategy)).tolist():
        fields = [f for f, has in (("mutation_type", has_mt), ("mutation_strategy", has_strategy), ("mutation_logic", has_logic)) if has[i]]
        found.append((i, f"truthful premise has mutation fields set ({', '.join(fields)})"))

    # -- mutation_logic naming more than one error
    h_rows = np.flatnonzero(is_h & has_logic)
    if len(h_rows):
        logic = _strs(A["mutation_logic"].iloc[h_rows], len(h_rows))
        lc = Corpus(logic)
        joined, starts = lc.lower_joined
        hits: dict[int, str] = {}
        for pat in _multi_error_res(cfg.multi_error_patterns):
            for m in pat.finditer(joined):
                r = int(np.searchsorted(starts, m.start(), side="right") - 1)
                hits.setdefault(r, m.group(0))
        for r in _list_candidates(lc, 1):
            if r not in hits:
                markers = enumeration_markers(logic[r])
                if len(markers) >= 2:
                    hits[r] = "an enumeration " + " / ".join(markers[:4])
        for r, what in hits.items():
            found.append((int(h_rows[r]), f"mutation_logic names more than one error ({_short(what, 40)!r})"))

    # -- statement form: sentences, lists, "; " chains, additive connectives
    corpus = ctx.corpus
    buf, _ = corpus.raw_bytes
    if len(buf):
        pos, cls, rows = corpus.marks
        nxt = buf[np.minimum(pos + 1, len(buf) - 1)]
        at_end = pos + 1 >= len(buf)
        # sentence-boundary candidates: . ! ? (or an ellipsis' last byte) followed by a space or a closer
        sent = np.isin(cls, (T.DOT, T.BANG, T.QUESTION, T.U_A6)) & _FOLLOW[nxt] & ~at_end
        counts = np.bincount(rows[sent], minlength=n)
        for i in np.flatnonzero(is_h & (counts + 1 > cfg.max_sentences)).tolist():
            sents = split_sentences(corpus.texts[i], cfg.abbreviations)
            if len(sents) > cfg.max_sentences:
                shown = " | ".join(repr(_short(s, 40)) for s in sents[:5])
                found.append((i, f"hallucinated premise has {len(sents)} sentences (max {cfg.max_sentences}): {shown}"))
        # "; " chains
        semi = (cls == T.SEMI) & T.SPACE[nxt] & ~at_end
        scount = np.bincount(rows[semi], minlength=n)
        for i in np.flatnonzero(is_h & (scount > cfg.max_semicolons)).tolist():
            found.append((i, f"hallucinated premise chains {scount[i] + 1} statements with '; ' (max {cfg.max_semicolons} separator{'s' if cfg.max_semicolons != 1 else ''})"))
        # enumerations, on the rows a vectorised pre-filter flags
        for i in sorted(r for r in _list_candidates(corpus, cfg.max_list_markers + 1) if is_h[r]):
            markers = enumeration_markers(corpus.texts[i])
            if len(markers) > cfg.max_list_markers:
                found.append((i, f"hallucinated premise is a list ({len(markers)} enumeration markers: {', '.join(repr(m) for m in markers[:5])})"))
        # additive connectives joining another claim
        phrases = {" " + " ".join(re.sub(r"[^\w]+", " ", c.lower()).split()) + " ": c for c in cfg.additive_connectives}
        hits_c: dict[int, list[str]] = defaultdict(list)
        joined, starts = corpus.norm_joined
        for phrase, label in phrases.items():
            i = joined.find(phrase)
            while i >= 0:
                r = int(np.searchsorted(starts, i, side="right") - 1)
                after = joined[i + len(phrase) : i + len(phrase) + 3]
                if is_h[r] and not (phrase == " in addition " and after == "to "):
                    hits_c[r].append(label)
                i = joined.find(phrase, i + 1)
        for r, labels in sorted(hits_c.items()):
            if len(labels) > cfg.max_additive_connectives:
                shown = ", ".join(repr(x) for x in dict.fromkeys(labels))
                found.append((r, f"hallucinated premise joins independent claims with {shown}"))
    return _finish(found, ctx.ids, "single_mutation")


def _list_candidates(corpus: Corpus, min_markers: int) -> set[int]:
    """Rows that may hold an enumeration (a superset of what enumeration_markers finds): a newline,
    >= min_markers inline markers "x)" / "12." / "•", a leading "-" / "*" / "1.", or the word "first"."""
    buf, _ = corpus.raw_bytes
    if not len(buf):
        return set()
    pos, cls, rows = corpus.marks
    out = set(rows[cls == T.NEWLINE].tolist())
    L = len(buf)

    def at(offsets: np.ndarray) -> np.ndarray:
        return buf[np.clip(offsets, 0, L - 1)]

    def boundary(offsets: np.ndarray) -> np.ndarray:
        b = at(offsets)
        return (offsets < 0) | (b == 0) | (b == 40) | T.SPACE[b] | (b == 58) | (b == 59) | (b == 44)

    # "x)", "(12)", "iv)": 1-4 alphanumerics between a boundary and ')'
    rp = pos[cls == T.RPAREN]
    marker = np.zeros(len(rp), bool)
    run = np.ones(len(rp), bool)
    for k in range(1, 5):
        run &= T.ALNUM[at(rp - k)] & (rp - k >= 0)
        marker |= run & boundary(rp - k - 1)
    # "12. " with a boundary before the number
    dp = pos[(cls == T.DOT)]
    d1 = (at(dp - 1) >= 48) & (at(dp - 1) <= 57) & T.SPACE[at(dp + 1)]
    dmark = d1 & (boundary(dp - 2) | (((at(dp - 2) >= 48) & (at(dp - 2) <= 57)) & boundary(dp - 3)))
    # bullets: "•" is E2 80 A2
    bp = pos[cls == T.U_A2]
    bmark = (at(bp - 1) == 0x80) & (at(bp - 2) == 0xE2)
    counts = np.bincount(np.concatenate([rows[cls == T.RPAREN][marker], rows[cls == T.DOT][dmark], rows[cls == T.U_A2][bmark]]), minlength=corpus.n)
    out |= set(np.flatnonzero(counts >= min_markers).tolist())
    # a leading "-", "*" or bullet (a one-item list on the first line, more on later lines need a newline)
    lead = pos[np.isin(cls, (T.DASH, T.STAR, T.DIGIT))]
    first = lead[(lead == 0) | (at(lead - 1) == 0)]
    out |= set(corpus.byte_rows(first).tolist()) if min_markers <= 1 else set()
    out |= set(corpus.rows_with(["first"], normalised=False))
    return out


_FOLLOW = np.zeros(256, bool)
_FOLLOW[[32, 10, 9, 13, 34, 39, 41, 93, 0xE2]] = True

_MULTI_CACHE: dict[tuple[str, ...], list[re.Pattern]] = {}


def _multi_error_res(patterns: tuple[str, ...]) -> list[re.Pattern]:
    if patterns not in _MULTI_CACHE:
        _MULTI_CACHE[patterns] = [re.compile(p, re.IGNORECASE) for p in patterns]
    return _MULTI_CACHE[patterns]


# ---- distinctness ------------------------------------------------------------------------------------------


def distinctness(augmentations: Any, config: ValidationConfig | DistinctnessConfig | None = None) -> list[Rejection]:
    """No two hallucinated premises of one question are near-paraphrases (shingle Jaccard >= threshold)."""
    cfg = _config(config)
    return _distinctness(_Context(augmentations, None, cfg), cfg.distinctness)


def _distinctness(ctx: _Context, cfg: DistinctnessConfig) -> list[Rejection]:
    h_rows = np.flatnonzero(ctx.is_h)
    if len(h_rows) < 2:
        return []
    sh, rows = ctx.corpus.shingles(cfg.shingle_size, cfg.shingle)
    # keep the hallucinated rows' shingles, renumbered 0..len(h_rows)-1 (order is kept: rows ascending)
    local = np.full(ctx.n, -1, np.int64)
    local[h_rows] = np.arange(len(h_rows))
    keep = local[rows] >= 0
    sh, lrow = sh[keep], local[rows[keep]]
    nh = len(h_rows)
    sig, has = minhash(sh, lrow, nh, cfg.num_perm)
    if cfg.bands:
        bands, r = cfg.bands, cfg.num_perm // cfg.bands
    else:
        bands, r = lsh_params(cfg.threshold, cfg.num_perm)
    pairs = lsh_candidates(sig, ctx.group[h_rows], bands, r, active=has)
    if not len(pairs):
        return []
    est = (sig[pairs[:, 0]] == sig[pairs[:, 1]]).mean(axis=1)
    margin = 0.25 if cfg.verify else 0.0
    pairs, est = pairs[est >= cfg.threshold - margin], est[est >= cfg.threshold - margin]
    bounds = row_starts(lrow, nh)
    found: list[tuple[int, str]] = []
    unit = f"{cfg.shingle} {cfg.shingle_size}-grams"
    for (a, b), e in zip(pairs.tolist(), est.tolist(), strict=True):
        if cfg.verify:
            sa = set(sh[bounds[a] : bounds[a + 1]].tolist())
            sb = set(sh[bounds[b] : bounds[b + 1]].tolist())
            j = len(sa & sb) / max(1, len(sa | sb))
        else:
            j = e
        if j >= cfg.threshold:
            ia, ib = int(h_rows[a]), int(h_rows[b])
            found.append((ib, f"hallucinated premises {ctx.ids[ia]} and {ctx.ids[ib]} of question {ctx.question_ids[ib]} are near-paraphrases (Jaccard {j:.2f} >= {cfg.threshold} on {unit})"))
    return _finish(found, ctx.ids, "distinctness")


# ---- leakage ------------------------------------------------------------------------------------------------


def leakage(questions: Any, augmentations: Any, config: ValidationConfig | LeakageConfig | None = None) -> list[Rejection]:
    """No premise reveals its question's answer, and no truthful premise carries a hallucinated statement."""
    cfg = _config(config)
    return _leakage(_Context(augmentations, questions, cfg), cfg.leakage)


class _Gold:
    """Per-question answer facts used by the leakage rules (computed once per question)."""

    def __init__(self, ctx: _Context, cfg: LeakageConfig):
        Q = ctx.Q
        m = 0 if Q is None else len(Q)
        self.m = m
        task = _strs(ctx.qcol("task_type"), m)
        domain = _strs(ctx.qcol("domain"), m)
        answers = _strs(ctx.qcol("answer"), m)
        options = ctx.qcol("options")
        index = ctx.qcol("answer_index")
        qtext = _strs(ctx.qcol("question"), m)
        self.is_mc = [t == "multiple_choice" for t in task]
        self.is_code = [t == "code" or d == "Code" for t, d in zip(task, domain, strict=True)]
        self.gold_index: list[int | None] = []
        gold_text: list[str] = []
        for j in range(m):
            opts = options[j] if isinstance(options[j], list | tuple | np.ndarray) else []
            idx = index[j]
            try:
                idx = int(idx) if idx is not None and not (isinstance(idx, float) and math.isnan(idx)) else None
            except (TypeError, ValueError):
                idx = None
            if idx is not None and not 0 <= idx < len(opts):
                idx = None
            self.gold_index.append(idx if self.is_mc[j] else None)
            gold_text.append(str(opts[idx]) if self.is_mc[j] and idx is not None else answers[j])
        self.options = [list(map(str, o)) if isinstance(o, list | tuple | np.ndarray) else [] for o in options]
        self.gold_raw = gold_text
        # numeric answers
        q_numbers = [None] * m
        self.gold_value: list[float | None] = [None] * m
        for j in range(m):
            if self.is_code[j]:
                continue
            v = numeric_value(gold_text[j], cfg.max_unit_chars)
            if v is None:
                continue
            q_numbers[j] = [x for x, _ in parse_numbers(qtext[j])]
            if any(_close(v, x, cfg.numeric_rel_tol, cfg.numeric_abs_tol) for x in q_numbers[j]):
                continue  # the number is in the question: mentioning it reveals nothing
            others = [numeric_value(o, cfg.max_unit_chars) for k, o in enumerate(self.options[j]) if k != self.gold_index[j]]
            if any(o is not None and _close(v, o, cfg.numeric_rel_tol, cfg.numeric_abs_tol) for o in others):
                continue  # another candidate has the same number (other unit): the number does not single out the answer
            self.gold_value[j] = v
        # gold text (normalised, word-bounded)
        texts = Corpus(gold_text + qtext + [o for opts in self.options for o in opts])
        norm = texts.norm
        gold_norm, q_norm = norm[:m], norm[m : 2 * m]
        opt_norm, k = [], 2 * m
        for opts in self.options:
            opt_norm.append(norm[k : k + len(opts)])
            k += len(opts)
        ignore = {" " + " ".join(re.sub(r"[^\w]+", " ", t.lower()).split()) + " " for t in cfg.ignore_gold_texts}
        self.gold_pat: list[str | None] = [None] * m
        self.covers: list[list[str]] = [[] for _ in range(m)]
        for j in range(m):
            g = gold_norm[j]
            if self.is_code[j] or self.gold_value[j] is not None or numeric_value(gold_text[j], cfg.max_unit_chars) is not None:
                continue
            if len(g) - 2 < cfg.min_gold_chars or g in ignore or g in q_norm[j]:
                continue
            self.gold_pat[j] = g
            gi = self.gold_index[j]
            self.covers[j] = [o for i, o in enumerate(opt_norm[j]) if i != gi and g in o and o != g]
        # code: reference-solution lines and token n-grams not already shown in the question
        sols = _strs(ctx.qcol("reference_solution"), m)
        sigs = _strs(ctx.qcol("code_signature"), m)
        self.sol_lines: list[list[str]] = [[] for _ in range(m)]
        self.sol_ngrams: list[set[tuple[str, ...]]] = [set() for _ in range(m)]
        n_tok = cfg.code_ngram_tokens
        for j in range(m):
            if not self.is_code[j]:
                continue
            sol = sols[j] or answers[j]
            shown = _ws(qtext[j] + "\n" + sigs[j])
            seen = set()
            for line in sol.splitlines():
                w = _ws(line)
                if len(w) >= cfg.min_solution_line_chars and w not in shown and w not in seen:
                    seen.add(w)
                    self.sol_lines[j].append(w)
            if n_tok > 0:
                toks = _CODE_TOKEN.findall(sol)
                shown_toks = _CODE_TOKEN.findall(qtext[j] + "\n" + sigs[j])
                shown_grams = {tuple(shown_toks[i : i + n_tok]) for i in range(len(shown_toks) - n_tok + 1)}
                self.sol_ngrams[j] = {tuple(toks[i : i + n_tok]) for i in range(len(toks) - n_tok + 1)} - shown_grams


def _leakage(ctx: _Context, cfg: LeakageConfig) -> list[Rejection]:
    found: list[tuple[int, str]] = []
    corpus = ctx.corpus
    n = ctx.n
    if ctx.Q is not None:
        gold = _Gold(ctx, cfg)
        qpos = ctx.qpos.tolist()
        norm = corpus.norm
        texts = corpus.texts

        # gold option / answer text, word-bounded on normalised text
        pats = gold.gold_pat
        for i, p in enumerate(qpos):
            if p < 0:
                continue
            g = pats[p]
            if g is None or g not in norm[i]:
                continue
            covers = gold.covers[p]
            if covers:
                rest = norm[i]
                for c in covers:
                    rest = rest.replace(c, " ")
                if g not in rest:
                    continue
            found.append((i, f"{ctx.kind[i] or 'premise'} premise reveals the gold answer text {_short(gold.gold_raw[p], 50)!r}"))

        # answer labels: rows mentioning answer/option/candidate/choice/correct
        if cfg.check_labels:
            for i in sorted(corpus.rows_with(_LABEL_WORDS, normalised=False)):
                p = qpos[i]
                if p < 0 or not gold.is_mc[p]:
                    continue
                gi = gold.gold_index[p]
                gold_labels = {str(gi + 1), LETTERS[gi], LETTERS[gi].lower()} if gi is not None and gi < len(LETTERS) else set()
                for m in _LABEL.finditer(texts[i]):
                    label = m.group("p") or m.group("b") or m.group("q")
                    if label in gold_labels:
                        found.append((i, f"premise reveals the gold label {label!r} ({_short(m.group(0), 40)!r})"))
                        break
                    if cfg.reject_any_label_reference:
                        found.append((i, f"premise refers to answer candidate {label!r} ({_short(m.group(0), 40)!r})"))
                        break

        # numeric answers: rows of questions with a numeric gold answer whose premise has a digit
        buf, _ = corpus.raw_bytes
        digit_rows = np.zeros(n, bool)
        if len(buf):
            digit_rows[np.unique(corpus.byte_rows(np.flatnonzero((buf >= 48) & (buf <= 57))))] = True
        gv = gold.gold_value
        for i in np.flatnonzero(digit_rows).tolist():
            p = qpos[i]
            if p < 0 or gv[p] is None:
                continue
            v = gv[p]
            for x, text in parse_numbers(texts[i]):
                if _close(x, v, cfg.numeric_rel_tol, cfg.numeric_abs_tol):
                    found.append((i, f"premise states the numeric answer {_short(gold.gold_raw[p], 30)!r} as {text!r}"))
                    break

        # code: reference-solution lines and token runs
        for i, p in enumerate(qpos):
            if p < 0 or not gold.is_code[p]:
                continue
            lines, grams = gold.sol_lines[p], gold.sol_ngrams[p]
            if not lines and not grams:
                continue
            flat = _ws(texts[i])
            hit = next((ln for ln in lines if ln in flat), None)
            if hit is not None:
                found.append((i, f"premise quotes the reference solution line {_short(hit, 60)!r}"))
                continue
            if grams and _CODE_CHARS.search(flat):
                k = cfg.code_ngram_tokens
                toks = _CODE_TOKEN.findall(flat)
                g = next((tuple(toks[s : s + k]) for s in range(len(toks) - k + 1) if tuple(toks[s : s + k]) in grams), None)
                if g is not None:
                    found.append((i, f"premise quotes {k} consecutive tokens of the reference solution {_short(' '.join(g), 60)!r}"))

    found += _truthful_carries_error(ctx, cfg)
    return _finish(found, ctx.ids, "leakage")


def _truthful_carries_error(ctx: _Context, cfg: LeakageConfig) -> list[tuple[int, str]]:
    """A truthful premise that contains a hallucinated premise's distinctive content.

    The distinctive content of a hallucinated premise H is its word n-grams that are neither in the question
    text nor in any other hallucinated premise of the question (so the wording all premises share, or that
    comes from the question, does not count; with minimal-edit mutations what is left is the edited part).
    H is carried by a truthful premise T of the same question when >= containment_threshold of that
    content is in T. One sort of all n-grams: linear up to the sort.
    """
    n = ctx.n
    if not ctx.is_h.any() or not ctx.is_t.any():
        return []
    k = cfg.containment_shingle_words
    sh, rows = ctx.corpus.shingles(k, "word")
    tag = np.where(ctx.is_t, 1, np.where(ctx.is_h, 2, 3))[rows]
    keep = tag < 3
    sh, rows, tag = sh[keep], rows[keep], tag[keep]
    grp = ctx.group[rows].astype(_U64)
    # question-text n-grams (tag 0), only for questions that have augmentations here
    if ctx.Q is not None and len(ctx.Q):
        qsh, qrows = ctx.q_corpus.shingles(k, "word")
        used = np.zeros(len(ctx.Q), bool)
        used[ctx.qpos[ctx.has_q]] = True
        sel = used[qrows]
        qsh, qrows = qsh[sel], qrows[sel]
        sh = np.concatenate([qsh, sh])
        grp = np.concatenate([qrows.astype(_U64), grp])
        tag = np.concatenate([np.zeros(len(qsh), np.int64), tag])
        rows = np.concatenate([np.full(len(qsh), n, np.int64), rows])
    rowbits = max(1, int(n).bit_length())
    low = rowbits + 2
    with np.errstate(over="ignore"):
        key = _mix(sh ^ (grp * _U64(0x9E3779B97F4A7C15) + _U64(0x7F4A7C159E3779B9)))
    packed = ((key >> _U64(low)) << _U64(low)) | (tag.astype(_U64) << _U64(rowbits)) | rows.astype(_U64)
    packed.sort()
    hi = packed >> _U64(low)
    tag_s = ((packed >> _U64(rowbits)) & _U64(3)).astype(np.int64)
    row_s = (packed & _U64((1 << rowbits) - 1)).astype(np.int64)
    new = np.ones(len(packed), bool)
    new[1:] = hi[1:] != hi[:-1]
    run = np.cumsum(new) - 1
    nruns = int(run[-1]) + 1 if len(run) else 0
    in_q = np.zeros(nruns, bool)
    in_q[run[tag_s == 0]] = True
    in_t = np.zeros(nruns, bool)
    in_t[run[tag_s == 1]] = True
    # distinct hallucinated rows per run (same row repeated is adjacent after the sort)
    first_of_row = np.ones(len(packed), bool)
    first_of_row[1:] = new[1:] | (row_s[1:] != row_s[:-1]) | (tag_s[1:] != tag_s[:-1])
    h_first = (tag_s == 2) & first_of_row
    n_h = np.bincount(run[h_first], minlength=nruns)
    distinctive = h_first & ~in_q[run] & (n_h[run] == 1)
    total = np.bincount(row_s[distinctive], minlength=n + 1)[:n]
    hit = np.bincount(row_s[distinctive & in_t[run]], minlength=n + 1)[:n]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total > 0, hit / np.maximum(total, 1), 0.0)
    flagged = np.flatnonzero((total >= cfg.min_distinctive_shingles) & (share >= cfg.containment_threshold))
    if not len(flagged):
        return []
    # name the truthful premise: per (flagged H, truthful T of its question), on the few flagged rows
    is_flagged = np.zeros(n + 1, bool)
    is_flagged[flagged] = True
    truthful_by_group: dict[int, list[int]] = defaultdict(list)
    for i in np.flatnonzero(ctx.is_t).tolist():
        truthful_by_group[int(ctx.group[i])].append(i)
    wanted_t = np.zeros(n + 1, bool)
    for h in flagged.tolist():
        wanted_t[truthful_by_group.get(int(ctx.group[h]), [])] = True
    d_sets: dict[int, set[int]] = defaultdict(set)
    sel = np.flatnonzero(distinctive & is_flagged[row_s])
    for r, x in zip(row_s[sel].tolist(), hi[sel].tolist(), strict=True):
        d_sets[r].add(x)
    t_sets: dict[int, set[int]] = defaultdict(set)
    sel = np.flatnonzero((tag_s == 1) & wanted_t[row_s])
    for r, x in zip(row_s[sel].tolist(), hi[sel].tolist(), strict=True):
        t_sets[r].add(x)
    out: list[tuple[int, str]] = []
    for h in flagged.tolist():
        own = d_sets[h]
        best = max(((len(own & t_sets[t]) / max(1, len(own)), t) for t in truthful_by_group.get(int(ctx.group[h]), [])), default=(0.0, -1))
        if best[1] >= 0 and best[0] >= cfg.containment_threshold:
            t = best[1]
            out.append((t, f"truthful premise carries hallucinated premise {ctx.ids[h]}: {len(own & t_sets[t])}/{len(own)} ({best[0]:.0%}) of its distinctive word {k}-grams are in the truthful statement"))
    return out


# ---- references and composition ------------------------------------------------------------------------------


def references(ctx_or_augs: Any, questions: Any | None = None) -> list[Rejection]:
    """Augmentations whose question_id names no question."""
    ctx = ctx_or_augs if isinstance(ctx_or_augs, _Context) else _Context(ctx_or_augs, questions, ValidationConfig())
    if ctx.Q is None:
        return []
    return [Rejection(ctx.ids[i], "reference", f"question_id {ctx.question_ids[i]!r} names no question") for i in np.flatnonzero(~ctx.has_q).tolist()]


def _config(config: Any) -> ValidationConfig:
    if config is None:
        return ValidationConfig()
    if isinstance(config, ValidationConfig):
        return config
    if isinstance(config, SingleMutationConfig):
        return ValidationConfig(single_mutation=config)
    if isinstance(config, DistinctnessConfig):
        return ValidationConfig(distinctness=config)
    if isinstance(config, LeakageConfig):
        return ValidationConfig(leakage=config)
    if isinstance(config, dict):
        return ValidationConfig.from_dict(config)
    raise TypeError(f"expected a ValidationConfig, got {type(config).__name__}")


def run_checks(questions: Any, augmentations: Any, config: ValidationConfig | dict | None = None, *, instances: Any | None = None, schemas: bool = True) -> ValidationReport:
    """Schemas (questions, augmentations, and instances when given), references, single_mutation,
    distinctness and leakage, composed into one report (with the wall time of each step)."""
    cfg = _config(config)
    report = ValidationReport()
    qdf, adf = to_frame(questions), to_frame(augmentations)
    report.rows = {"questions": len(qdf), "augmentations": len(adf)}

    def step(name: str, fn: Callable[[], list[Rejection]]) -> None:
        t0 = time.perf_counter()
        report.extend(fn())
        report.seconds[name] = report.seconds.get(name, 0.0) + time.perf_counter() - t0

    if schemas:
        step("schema", lambda: validate_frame(qdf, "questions", cfg.schema) + validate_frame(adf, "augmentations", cfg.schema))
        if instances is not None:
            idf = to_frame(instances)
            report.rows["instances"] = len(idf)
            step("schema", lambda: validate_frame(idf, "instances", cfg.schema))
    t0 = time.perf_counter()
    ctx = _Context(adf, qdf, cfg)
    report.seconds["prepare"] = time.perf_counter() - t0
    if cfg.schema.check_references:
        step("reference", lambda: references(ctx))
    step("single_mutation", lambda: _single_mutation(ctx, cfg.single_mutation))
    step("distinctness", lambda: _distinctness(ctx, cfg.distinctness))
    step("leakage", lambda: _leakage(ctx, cfg.leakage))
    return report

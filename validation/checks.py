"""Rule-based (non-LLM) checks of augmentations: single mutation, distinctness, no leakage, and that each names a
question (references).

Every check takes DataFrames (or records), returns a list of Rejection and costs time linear in the number
of rows: texts are processed a column at a time (phr.validation.textops), the per-row Python that remains
is a substring test or runs only on the few rows a vectorised pre-filter flags, and pairwise comparisons
go through MinHash/LSH or a sort instead of all pairs. docs/validation.md describes each rule.

    report = run_checks(questions_df, augmentations_df)          # schemas + every check
    print(report.render()); report.ok; report.by_check()
"""

from __future__ import annotations

import math
import os
import re
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cached_property, lru_cache
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from phr.core.numbers import Number, parse_numbers, plain
from phr.core.numbers import close as number_close
from phr.core.report import Rejection, ValidationReport

from . import textops as T
from .config import DistinctnessConfig, LeakageConfig, SingleMutationConfig, ValidationConfig
from .schemas import to_frame, validate_frame
from .textops import Corpus, group_pair_similarity, lsh_candidates, lsh_params, row_starts

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
    """Boolean mask: the value is a string with a non-space character (one RE2 pass)."""
    if values is None:
        return np.zeros(n, bool)
    return T.regex_mask(T.arrow_strings(values), r"\S")


def _strs(values: Any, n: int) -> list[str]:
    """The values as strings ("" for null), fast for pandas string columns."""
    if values is None:
        return [""] * n
    vals = values.tolist() if hasattr(values, "tolist") else list(values)
    return [
        v if isinstance(v, str) else "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
        for v in vals
    ]


# ---- sentences, lists -----------------------------------------------------------------------------------

_BOUNDARY = re.compile(r"([.!?\u2026]+)([\"'\u201d\u2019)\]]*)\s+(?=(\S))")


def _last_token(text: str, end: int) -> str:
    """The run of non-space characters that ends at `end` ("" when none); ``re``'s ``(\\S+)$`` up to `end`,
    without scanning the text before it (``$`` also matches before a final newline)."""
    if end and text[end - 1] == "\n":
        end -= 1
    if end == 0 or text[end - 1].isspace():
        return ""
    return text[:end].rsplit(None, 1)[-1]


@lru_cache(maxsize=8)
def _abbrev_set(abbreviations: tuple[str, ...]) -> frozenset[str]:
    return frozenset(a.lower().rstrip(".") for a in abbreviations)


def split_sentences(text: str, abbreviations: tuple[str, ...] = SingleMutationConfig.abbreviations) -> list[str]:
    """Sentences of `text`: a break is [.!?] (+ closing quotes/brackets) + whitespace + the next sentence,
    except after an abbreviation ("e.g.", "Fig.", "approx."), a single-letter initial ("J. Smith") or
    before a lower-case letter ("approx. five")."""
    abbrev = _abbrev_set(abbreviations)
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        nxt = m.group(3)
        if m.group(1) == ".":
            word = _last_token(text, m.start()).lstrip("([{\"'\u201c\u2018").lower()
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


_LINE_MARKER = re.compile(
    r"(?m)^[ \t]*(?:[-*\u2022\u25e6\u2023\u25aa\u00b7]|\(?\d{1,2}[.)]|\(?[a-hA-H][.)]|\(?[ivxIVX]{1,4}[.)])[ \t]+\S"
)
# (each inline pattern opens with a lookahead for the characters its matches start with: the regex engine skips
# to those, about 1.5x faster)
_INLINE_PAREN = re.compile(r"(?=[(\da-hivx])(?:^|(?<=[\s:;,]))\(?(\d{1,2}|[a-h]|[ivx]{1,4})\)\s")
_INLINE_DOT = re.compile(r"(?=\d)(?:^|(?<=[\s:;,]))(\d{1,2})\.\s+(?=[A-Za-z(])")
_ORDINAL_WORDS = ("first", "second", "third", "fourth", "finally", "lastly")
_ORDINAL = re.compile(
    r"(?i)(?=[\sfslt])(?:^|(?<=[.;:]\s)|(?<=[.;:]))\s*(first(?:ly)?|second(?:ly)?|third(?:ly)?|fourth(?:ly)?|finally|lastly)\s*,"
)
_BULLETS = "\u2022\u25e6\u2023\u25aa"
_INLINE_BULLET = re.compile(f"(?=[{_BULLETS}])(?:^|(?<=\\s))([{_BULLETS}])\\s")
_ROMAN = {"i": 1, "ii": 2, "iii": 3, "iv": 4, "v": 5, "vi": 6, "vii": 7, "viii": 8, "ix": 9, "x": 10}


def _ordinal(token: str) -> int | None:
    if token.isdigit():
        return int(token)
    if token in _ROMAN:
        return _ROMAN[token]
    if len(token) == 1 and token.isalpha():
        return ord(token) - ord("a") + 1
    return None


def _consecutive_run(tokens: list[tuple[str, str]]) -> list[str]:
    """The longest run of markers numbered k, k+1, ... in order of appearance. `tokens` are
    (number or letter, marker as written); returns the markers as written."""
    best: list[str] = []
    for i, (t, shown) in enumerate(tokens):
        v = _ordinal(t)
        if v is None:
            continue
        run, want = [shown], v + 1
        for u, shown_u in tokens[i + 1 :]:
            w = _ordinal(u)
            if w == want or (u in _ROMAN and _ROMAN[u] == want):
                run.append(shown_u)
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
    # a pattern runs only where the characters or words it needs are in the text (cheap substring tests)
    paren = (
        _consecutive_run([(m.group(1), m.group(0).strip()) for m in _INLINE_PAREN.finditer(text)])
        if ")" in text
        else []
    )
    dot = _consecutive_run([(m.group(1), m.group(0).strip()) for m in _INLINE_DOT.finditer(text)])
    low = text.lower()  # (the words' test only for ASCII text: case-insensitive matching reads "ſ" as "s")
    ordinals = (
        list(dict.fromkeys(m.group(1).lower() for m in _ORDINAL.finditer(text)))
        if not text.isascii() or any(w in low for w in _ORDINAL_WORDS)
        else []
    )
    bullets = [m.group(1) for m in _INLINE_BULLET.finditer(text)] if any(b in text for b in _BULLETS) else []
    best = max((paren, dot, ordinals, bullets, lines), key=len)
    return best if len(best) >= 2 else (lines if lines else [])


# ---- numbers --------------------------------------------------------------------------------------------

_SIGNS = ("", "+", "-", "~", "\u2248", "$", "\u20ac", "\u00a3", "\u00b1")  # may precede a numeric answer


def numeric_value(text: str, max_unit_chars: int = 16) -> float | None:
    """The value of a numeric answer ("9.8", "9.8 m/s^2", "-40 °C", "25%" = 0.25, "3/4" = 0.75, "3.2 x 10^5 J"),
    else None: exactly one number (``phr.core.numbers.parse_numbers``, the scorer's parser), at the start (after
    an optional sign, ~, ≈ or currency symbol), followed by at most `max_unit_chars` characters of unit."""
    n = _numeric_answer(text, max_unit_chars)
    return None if n is None else n.value


def _numeric_answer(text: str, max_unit_chars: int) -> Number | None:
    text = plain(text.strip())
    nums = parse_numbers(text)
    if len(nums) != 1:
        return None
    m = nums[0]
    if text[: m.start].strip() not in _SIGNS or len(text) - m.end > max_unit_chars:
        return None
    return m


def _lead_digits(n: Number, rel: float, abs_: float = 0.0) -> str:
    """Digits one of which is the first significant digit of every number within `rel` of n, or of n as a
    percentage (a cheap test that rules out most premises before their numbers are parsed)."""
    v = abs(n.value)
    if n.percent:
        return "".join(sorted(set(_lead_digits(Number(v), rel, abs_)) | set(_lead_digits(Number(v * 100), rel, abs_))))
    if v == 0 or not math.isfinite(v) or v * rel <= abs_:  # (near) zero: the absolute tolerance decides
        return "0123456789"
    m = v / 10 ** math.floor(math.log10(v))  # mantissa in [1, 10)
    lo, hi = m * (1 - 2 * rel), m * (1 + 2 * rel)
    out = set()
    if lo < 1:  # reaches into the decade below: 0.99...
        out.add("9")
        lo = 1.0
    if hi >= 10:  # reaches into the decade above: 10.0...
        out.add("1")
        hi = 9.999999
    out |= {str(d) for d in range(int(lo), int(hi) + 1)}
    return "".join(sorted(out))


_DIGIT_GAP = (
    r"(?:[.,]|\\,)?"  # between two significant digits: a decimal point or a thousands separator ("4,257", r"4\,257")
)


def _digits_pattern(n: Number, rel: float, abs_: float) -> re.Pattern[str] | None:
    """The second pre-test (after ``_lead_digits``): a pattern every text that writes a number close to n (the
    leakage comparison, either side a percentage) matches, so that only those texts are parsed: the number's first
    two significant digits as any written form keeps them ("4.2", "42", "0.0042", "4,257", "4.2 x 10^3", "420%"),
    a lone first digit where a whole mantissa is close ("4" for 4.01), or a fraction. None: no such pre-test (near
    zero, where the absolute tolerance decides)."""
    values = (abs(n.value), abs(n.value) * 100) if n.percent else (abs(n.value),)
    alts: set[str] = set()
    for v in values:
        if v == 0 or not math.isfinite(v) or v * rel <= abs_:
            return None
        m = v / 10 ** math.floor(math.log10(v))  # mantissa in [1, 10)
        lo, hi = m * (1 - 2 * rel), m * (1 + 2 * rel)
        if lo < 1 or hi >= 10:  # reaches into the next decade: the first digit alone
            alts.add(f"[{_lead_digits(Number(v), rel, abs_)}]")
            continue
        for first in range(int(lo), int(hi) + 1):
            a, b = max(int(lo * 10), first * 10) - first * 10, min(int(hi * 10), first * 10 + 9) - first * 10
            if a <= b:  # (float rounding can leave none for the first digit of lo)
                alts.add(f"{first}{_DIGIT_GAP}[{a}-{b}]")
            if lo <= first <= hi:
                alts.add(f"{first}(?:[^0-9]|$)")
    return _compiled("|".join(sorted(alts)) + "|/|frac")


@lru_cache(maxsize=4096)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _close(a: Number, b: Number, rel: float, abs_: float) -> bool:
    """The leakage rule's comparison: absolute values (a premise stating "40" for the answer "-40 °C" gives it
    away), within the tolerances; one side a percentage: 25% also equals 25."""
    return number_close(a, b, rel, abs_, signed=False)


# ---- labels -----------------------------------------------------------------------------------------

_LABEL = re.compile(
    r"(?i:\b(?:(?:correct|right|true|best)\s+)?(?:answer|candidate|option|choice)s?\b)"
    r"(?:\s+(?i:is|was|would\s+be|must\s+be|should\s+be|will\s+be|=|number|no\.?|#))?"
    r"\s*[:=]?\s*(?:\((?P<p>[1-9]|[A-Ja-j])\)|(?P<b>[1-9]|[A-J])(?![\w.,]?\d)\b)"
    r"|\((?P<q>[1-9]|[A-Ja-j])\)\s+(?i:is|was)\s+(?i:the\s+)?(?i:correct|right|true|best|answer)"
)
# the label pattern for RE2 (pyarrow), a superset of _LABEL on the texts it reads: without its lookahead (RE2 has
# none); on text other than printable ASCII and the whitespace both engines agree on (\w, \s and case-folding
# differ beyond it) it matches anything, so the Python pattern decides there
_LABEL_RE2 = _LABEL.pattern.replace(r"(?![\w.,]?\d)", "", 1) + r"|[^\x{09}\x{0a}\x{0c}\x{0d}\x{20}-\x{7e}]"
assert "(?!" not in _LABEL_RE2
_LABEL_WORDS = (
    "answer",
    "answers",
    "option",
    "options",
    "candidate",
    "candidates",
    "choice",
    "choices",
    "correct",
    "right",
    "true",
    "best",
)


# ---- code -------------------------------------------------------------------------------------------------

_CODE_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d+)?|[^\s\w]")
_CODE_LIKE = r"[=\[\]{}_`<>%:]|[\pL\pN]\("  # code punctuation, or a call: "(" right after a letter or digit


def _ws(text: str) -> str:
    return " ".join(text.split())


# ---- the shared context -------------------------------------------------------------------------------


def _positions(ids: pd.Series, wanted: Any) -> np.ndarray:
    """Position in `ids` of each value of `wanted` (first occurrence; -1 when absent)."""
    index = pd.Index(ids)
    if index.has_duplicates:
        keep = ~index.duplicated()
        positions, index = np.flatnonzero(keep), index[keep]
    else:
        positions = np.arange(len(index))
    idx = index.get_indexer(wanted)
    return np.where(idx >= 0, positions[np.maximum(idx, 0)], -1).astype(np.int64)


class _Context:
    """The augmentation rows joined to their questions, with every derived column computed once."""

    def __init__(
        self,
        augs: Any,
        questions: Any | None,
        config: ValidationConfig,
        row_index: np.ndarray | None = None,
        qpos: np.ndarray | None = None,
    ):
        self.config = config
        self.row_index = row_index  # position of each row in the caller's frame (for ids of rows without one)
        self.A = to_frame(augs).reset_index(drop=True)
        self.Q = None if questions is None else to_frame(questions).reset_index(drop=True)
        n = self.n = len(self.A)
        A = self.A
        self.is_h = A["kind"].eq("hallucinated").to_numpy(bool) if "kind" in A.columns else np.zeros(n, bool)
        self.is_t = A["kind"].eq("truthful").to_numpy(bool) if "kind" in A.columns else np.zeros(n, bool)
        qcol = A["question_id"] if "question_id" in A.columns else pd.Series([""] * n, dtype=object)
        stmt = A["statement"] if "statement" in A.columns else pd.Series([""] * n, dtype=object)
        if isinstance(stmt.dtype, pd.StringDtype):  # a string column: its texts are read through Arrow as needed
            self.corpus = Corpus(arrow=T.arrow_strings(stmt))
        else:
            self.corpus = Corpus(stmt.tolist(), arrow=T.arrow_strings(stmt))
        if qpos is not None:  # given by the caller (positions in `questions`)
            self.qpos = np.asarray(qpos, np.int64)
        elif self.Q is not None and len(self.Q) and "id" in self.Q.columns:
            self.qpos = _positions(self.Q["id"], qcol)
        else:
            self.qpos = np.full(n, -1, np.int64)
        self.has_q = self.qpos >= 0
        # group = the question: its row in Q, else a code of its question_id
        if self.has_q.all():
            self.group = self.qpos
        else:
            codes, _ = pd.factorize(qcol, use_na_sentinel=False)
            offset = len(self.Q) if self.Q is not None else 0
            self.group = np.where(self.has_q, self.qpos, offset + codes)

    def _value(self, column: str, i: int) -> Any:
        """Row i's value of `column` (None when there is no such column). A string column is read through its
        Arrow array, one value at a time: only the rows named in rejections are read, not the whole column."""
        cache = self.__dict__.setdefault("_col_cache", {})
        if column not in cache:
            col = self.A[column] if column in self.A.columns else None
            cache[column] = (
                None
                if col is None
                else T.arrow_strings(col)
                if isinstance(col.dtype, pd.StringDtype)
                else col.to_numpy(dtype=object)
            )
        values = cache[column]
        if values is None:
            return None
        return values[i].as_py() if isinstance(values, pa.Array | pa.ChunkedArray) else values[i]

    def present(self, column: str) -> np.ndarray:
        """Per row: does `column` hold a string with a non-space character (computed once per column)."""
        cache = self.__dict__.setdefault("_present_cache", {})
        if column not in cache:
            cache[column] = _present(self.A.get(column), self.n)
        return cache[column]

    def row_id(self, i: int) -> str:
        v = self._value("id", i)
        if isinstance(v, str) and v:
            return v
        return f"<augmentations>[{i if self.row_index is None else int(self.row_index[i])}]"

    def question_id(self, i: int) -> str:
        v = self._value("question_id", i)
        return v if isinstance(v, str) else ""

    def kind(self, i: int) -> str:
        v = self._value("kind", i)
        return v if isinstance(v, str) else ""

    # question columns, one value per question row
    def qcol(self, name: str) -> list[Any]:
        if self.Q is None or name not in self.Q.columns:
            return [None] * (0 if self.Q is None else len(self.Q))
        return self.Q[name].tolist()

    def domain_of(self, i: int) -> str:
        if self.has_q[i] and self.Q is not None and "domain" in self.Q.columns:
            return str(self.Q["domain"].iat[int(self.qpos[i])])
        return str(self.A["domain"].iat[i]) if "domain" in self.A.columns else ""

    @cached_property
    def statement_prefilter(self) -> np.ndarray:
        """Rows whose statement may break a statement-form rule or name an answer label (one RE2 pass)."""
        return T.regex_mask(self.corpus.arrow, _statement_prefilter_re(self.config))

    def raw_signatures(self, kind: str, size: int, num_perm: int, questions: bool = False) -> np.ndarray:
        """Raw one-permutation signatures (rows x num_perm) of the statements' (or the question texts')
        shingles, computed once per setting and shared by the checks."""
        cache = self.__dict__.setdefault("_sig_cache", {})
        key = (kind, size, num_perm, questions)
        if key not in cache:
            corpus = self.q_corpus if questions else self.corpus
            sh, rows = corpus.shingles(size, kind)
            cache[key] = T.oph_signatures(sh, rows, corpus.n, num_perm)
        return cache[key]

    def in_domains(self, domains: tuple[str, ...]) -> np.ndarray:
        """Per row: is its question's domain one of `domains` (vectorised through the questions)."""
        if self.Q is not None and "domain" in self.Q.columns:
            per_q = np.append(self.Q["domain"].isin(list(domains)).to_numpy(bool), False)
            out = per_q[self.qpos]
            if "domain" in self.A.columns:
                out = np.where(self.has_q, out, self.A["domain"].isin(list(domains)).to_numpy(bool))
            return out
        if "domain" in self.A.columns:
            return self.A["domain"].isin(list(domains)).to_numpy(bool)
        return np.zeros(self.n, bool)

    @cached_property
    def q_corpus(self) -> Corpus:
        return Corpus(_strs(self.qcol("question"), len(self.Q) if self.Q is not None else 0))


def _finish(found: list[tuple[int, str]], ctx: _Context, check: str) -> list[Rejection]:
    found.sort(key=lambda x: x[0])
    return [Rejection(ctx.row_id(i), check, reason) for i, reason in found]


# ---- single mutation -------------------------------------------------------------------------------------


def single_mutation(
    augmentations: Any, questions: Any | None = None, config: ValidationConfig | SingleMutationConfig | None = None
) -> list[Rejection]:
    """Each hallucinated premise is one statement carrying one error; truthful rows carry no mutation fields.

    `questions` (or a `domain` column on the augmentations) is needed for the code-domain rule.
    """
    cfg = _config(config)
    return _blocked(augmentations, questions, cfg, lambda ctx: _single_mutation(ctx, cfg.single_mutation))


def _single_mutation(ctx: _Context, cfg: SingleMutationConfig) -> list[Rejection]:
    found = _mutation_fields(ctx, cfg) + _multi_error_logic(ctx, cfg)
    found += _statement_form(ctx, cfg) + _additive_connectives(ctx, cfg)
    return _finish(found, ctx, "single_mutation")


def _mutation_fields(ctx: _Context, cfg: SingleMutationConfig) -> list[tuple[int, str]]:
    """Mutation fields (vectorised masks; Python only for the rows that fail)."""
    A, n = ctx.A, ctx.n
    found: list[tuple[int, str]] = []
    is_h, is_t = ctx.is_h, ctx.is_t
    has_mt, has_logic, has_strategy = (ctx.present(c) for c in ("mutation_type", "mutation_logic", "mutation_strategy"))
    mt = A["mutation_type"] if "mutation_type" in A.columns else pd.Series([None] * n)
    allowed = mt.isin(list(cfg.allowed_mutation_types)).to_numpy(bool)
    code_ok = mt.isin(list(cfg.code_mutation_types)).to_numpy(bool)
    in_code = ctx.in_domains(cfg.code_domains)
    for i in np.flatnonzero(is_h & ~has_mt).tolist():
        found.append((i, "hallucinated premise has no mutation_type"))
    for i in np.flatnonzero(is_h & has_mt & ~allowed).tolist():
        found.append((i, f"mutation_type {mt.iat[i]!r} is not one of {', '.join(sorted(cfg.allowed_mutation_types))}"))
    for i in np.flatnonzero(is_h & allowed & in_code & ~code_ok).tolist():
        found.append(
            (
                i,
                f"code question premise has mutation_type {mt.iat[i]!r}; {ctx.domain_of(i)} allows only {', '.join(sorted(cfg.code_mutation_types))}",
            )
        )
    if cfg.require_mutation_logic:
        for i in np.flatnonzero(is_h & ~has_logic).tolist():
            found.append((i, "hallucinated premise has no mutation_logic naming its error"))
    for i in np.flatnonzero(is_t & (has_mt | has_logic | has_strategy)).tolist():
        fields = [
            f
            for f, has in (
                ("mutation_type", has_mt),
                ("mutation_strategy", has_strategy),
                ("mutation_logic", has_logic),
            )
            if has[i]
        ]
        found.append((i, f"truthful premise has mutation fields set ({', '.join(fields)})"))
    return found


def _multi_error_logic(ctx: _Context, cfg: SingleMutationConfig) -> list[tuple[int, str]]:
    """mutation_logic naming more than one error: a vectorised keyword pre-filter (RE2 over the Arrow column),
    then the patterns (Python re, on lower-cased text) on the few rows it keeps."""
    A = ctx.A
    found: list[tuple[int, str]] = []
    h_rows = np.flatnonzero(ctx.is_h & ctx.present("mutation_logic"))
    if not len(h_rows):
        return found
    logic_col = T.arrow_strings(A["mutation_logic"]).take(pa.array(h_rows))
    if cfg.multi_error_keywords:
        cand = T.regex_mask(logic_col, f"{_keyword_re(cfg.multi_error_keywords)}|{_LIST_PREFILTER}")
    else:
        cand = np.ones(len(h_rows), bool)
    pats = _multi_error_res(cfg.multi_error_patterns)
    logic_values = A["mutation_logic"]
    for r in np.flatnonzero(cand).tolist():
        i = int(h_rows[r])
        text = str(logic_values.iat[i])
        what = _second_error(text, pats)
        if what is not None:
            found.append((i, f"mutation_logic names more than one error ({_short(what, 40)!r})"))
    return found


def _second_error(text: str, pats: Sequence[re.Pattern]) -> str | None:
    """What in a mutation_logic names more than one error (a pattern's match, or an enumeration), else None."""
    low = text.lower()
    for pat in pats:
        m = next((m for m in pat.finditer(low) if not (m.start() and low[m.start() - 1].isalnum())), None)
        if m is not None:
            return m.group(0)
    markers = enumeration_markers(text)
    if len(markers) >= 2:
        return "an enumeration " + " / ".join(markers[:4])
    return None


def _statement_form(ctx: _Context, cfg: SingleMutationConfig) -> list[tuple[int, str]]:
    """Statement form: sentences, lists, "; " chains. One RE2 pass over the Arrow column (vectorised) keeps the
    rows that may break a rule; Python applies the rules to those only."""
    found: list[tuple[int, str]] = []
    semi = re.compile(r";\s")
    rows = np.flatnonzero(ctx.is_h & ctx.statement_prefilter)
    listy = T.regex_mask(ctx.corpus.arrow.take(pa.array(rows)), _LIST_PREFILTER) if len(rows) else rows
    for i, text, maybe_list in zip(rows.tolist(), ctx.corpus.texts_of(rows), listy.tolist(), strict=True):
        # each sentence break takes one of these characters: with fewer than max_sentences, no need to split
        ends = text.count(".") + text.count("!") + text.count("?") + text.count("\u2026")
        sents = split_sentences(text, cfg.abbreviations) if ends >= cfg.max_sentences else ()
        if len(sents) > cfg.max_sentences:
            shown = " | ".join(repr(_short(x, 40)) for x in sents[:5])
            found.append((i, f"hallucinated premise has {len(sents)} sentences (max {cfg.max_sentences}): {shown}"))
        k = len(semi.findall(text))
        if k > cfg.max_semicolons:
            plural = "s" if cfg.max_semicolons != 1 else ""
            found.append(
                (
                    i,
                    f"hallucinated premise chains {k + 1} statements with '; ' (max {cfg.max_semicolons} separator{plural})",
                )
            )
        markers = enumeration_markers(text) if maybe_list else []
        if len(markers) > cfg.max_list_markers:
            found.append(
                (
                    i,
                    f"hallucinated premise is a list ({len(markers)} enumeration markers: {', '.join(repr(x) for x in markers[:5])})",
                )
            )
    return found


def _additive_connectives(ctx: _Context, cfg: SingleMutationConfig) -> list[tuple[int, str]]:
    """Hallucinated premises that join independent claims with more additive connectives than allowed."""
    found: list[tuple[int, str]] = []
    phrases = _phrases(cfg.additive_connectives)
    if not phrases:
        return found
    for r in np.flatnonzero(ctx.is_h & ctx.statement_prefilter).tolist():
        row = ctx.corpus.norm_row(r)
        labels = []
        for phrase, label in phrases.items():
            start = row.find(phrase)
            while start >= 0:
                if not (phrase == " in addition " and row.startswith("to ", start + len(phrase))):
                    labels.append(label)
                start = row.find(phrase, start + 1)
        if len(labels) > cfg.max_additive_connectives:
            shown = ", ".join(repr(x) for x in dict.fromkeys(labels))
            found.append((r, f"hallucinated premise joins independent claims with {shown}"))
    return found


# RE2 (Arrow) pre-filters: each matches a superset of what the Python rules then look for
_SENT_PREFILTER = r"[.!?\x{2026}]+[\"'\x{201d}\x{2019})\]]*\s+\S"
_LIST_PREFILTER = (
    r"\n|[\x{2022}\x{25e6}\x{2023}\x{25aa}]|(?i:\b(?:first|second|third|fourth|finally|lastly)(?:ly)?\s*,)"
    r"|(?:^|[\s:;,(])\(?(?:\d{1,2}|[a-hA-H]|[ivxIVX]{1,4})[.)]\s|^\s*[-*]\s"
)


def _phrases(connectives: tuple[str, ...]) -> dict[str, str]:
    """{normalised phrase with padding: connective as configured}."""
    out = {" " + " ".join(re.sub(r"[^\w]+", " ", c.lower()).split()) + " ": c for c in connectives}
    out.pop("  ", None)
    return out


def _statement_prefilter_re(cfg: ValidationConfig) -> str:
    """One RE2 pattern matching every statement that may break a statement-form rule or mention an
    answer label: >= max_sentences sentence ends, > max_semicolons "; ", a list marker, a connective,
    a label word. A superset: the Python rules decide."""
    sm = cfg.single_mutation
    parts = [_LIST_PREFILTER, _keyword_re(_LABEL_WORDS)]
    if sm.max_sentences >= 1:
        parts.append(f"(?s:(?:{_SENT_PREFILTER}.*){{{sm.max_sentences}}})")
    else:
        parts.append(r"\S")
    parts.append(f"(?s:(?:;\\s.*){{{sm.max_semicolons + 1}}})")
    phrases = _phrases(sm.additive_connectives)
    if phrases:
        parts.append(_phrases_re(tuple(phrases)))
    return "|".join(f"(?:{p})" for p in parts)


def _keyword_re(words: tuple[str, ...]) -> str:
    return r"(?i)\b(?:" + "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True)) + r")\b"


def _phrases_re(phrases: tuple[str, ...]) -> str:
    """RE2 pattern for normalised phrases (" and also ") in raw text, words separated by any non-word run."""
    alts = [r"[\W_]+".join(re.escape(w) for w in p.split()) for p in phrases]
    return r"(?i)\b(?:" + "|".join(alts) + r")\b"


_MULTI_CACHE: dict[tuple[str, ...], list[re.Pattern]] = {}


def _multi_error_res(patterns: tuple[str, ...]) -> list[re.Pattern]:
    """The compiled patterns (applied to lower-cased text; one scan each: a pattern that starts with a
    literal alternation lets the regex engine skip ahead, an alternation of all of them would not)."""
    if patterns not in _MULTI_CACHE:
        _MULTI_CACHE[patterns] = [re.compile(p) for p in patterns]
    return _MULTI_CACHE[patterns]


# ---- distinctness ------------------------------------------------------------------------------------------


def distinctness(augmentations: Any, config: ValidationConfig | DistinctnessConfig | None = None) -> list[Rejection]:
    """No two hallucinated premises of one question are near-paraphrases (shingle Jaccard >= threshold)."""
    cfg = _config(config)
    return _blocked(augmentations, None, cfg, lambda ctx: _distinctness(ctx, cfg.distinctness))


def _distinctness(ctx: _Context, cfg: DistinctnessConfig) -> list[Rejection]:
    h_rows = np.flatnonzero(ctx.is_h)
    if len(h_rows) < 2:
        return []
    sig = ctx.raw_signatures(cfg.shingle, cfg.shingle_size, cfg.num_perm)[h_rows]
    scored = None if cfg.bands else group_pair_similarity(sig, ctx.group[h_rows])  # small groups: every pair
    if scored is None:
        bands, r = (cfg.bands, cfg.num_perm // cfg.bands) if cfg.bands else lsh_params(cfg.threshold, cfg.num_perm)
        pairs = lsh_candidates(sig, ctx.group[h_rows], bands, r)
        scored = pairs, T.oph_similarity(sig, pairs[:, 0], pairs[:, 1])
    pairs, est = scored
    if not len(pairs):
        return []
    margin = cfg.verify_margin if cfg.verify else 0.0
    pairs, est = pairs[est >= cfg.threshold - margin], est[est >= cfg.threshold - margin]
    sh, rows = ctx.corpus.shingles(cfg.shingle_size, cfg.shingle)
    bounds = row_starts(rows, ctx.n)
    found: list[tuple[int, str]] = []
    unit = f"{cfg.shingle} {cfg.shingle_size}-grams"
    for (a, b), e in zip(pairs.tolist(), est.tolist(), strict=True):
        ia, ib = int(h_rows[a]), int(h_rows[b])
        if cfg.verify:
            sa = set(sh[bounds[ia] : bounds[ia + 1]].tolist())
            sb = set(sh[bounds[ib] : bounds[ib + 1]].tolist())
            j = len(sa & sb) / max(1, len(sa | sb))
        else:
            j = e
        if j >= cfg.threshold:
            found.append(
                (
                    ib,
                    f"hallucinated premises {ctx.row_id(ia)} and {ctx.row_id(ib)} of question {ctx.question_id(ib)} are near-paraphrases (Jaccard {j:.2f} >= {cfg.threshold} on {unit})",
                )
            )
    return _finish(found, ctx, "distinctness")


# ---- leakage ------------------------------------------------------------------------------------------------


def leakage(
    questions: Any, augmentations: Any, config: ValidationConfig | LeakageConfig | None = None
) -> list[Rejection]:
    """No premise reveals its question's answer, and no truthful premise carries a hallucinated statement."""
    cfg = _config(config)
    return _blocked(augmentations, questions, cfg, lambda ctx: _leakage(ctx, cfg.leakage))


class _Gold:
    """Per-question answer facts used by the leakage rules (computed once per question)."""

    def __init__(self, ctx: _Context, cfg: LeakageConfig):
        Q = ctx.Q
        assert Q is not None  # _leakage builds the gold facts only for rows with questions
        m = self.m = len(Q)

        def col(name: str) -> pd.Series:
            return Q[name] if name in Q.columns else pd.Series([None] * m, dtype=object)

        task, domain = col("task_type"), col("domain")
        self.is_mc = task.eq("multiple_choice").to_numpy(bool)
        self.is_code = (task.eq("code") | domain.eq("Code")).to_numpy(bool)
        idx = pd.to_numeric(col("answer_index"), errors="coerce").to_numpy(float)
        n_opts = np.zeros(m, np.int64)
        mc_rows = np.flatnonzero(self.is_mc & np.isfinite(idx))
        if len(mc_rows):
            opts = col("options").to_numpy(dtype=object)[mc_rows]
            n_opts[mc_rows] = [len(o) if isinstance(o, list | tuple | np.ndarray) else 0 for o in opts]
        ok = self.is_mc & np.isfinite(idx) & (idx >= 0) & (idx < n_opts)
        self.gold_index = np.where(ok, np.nan_to_num(idx, nan=-1), -1).astype(np.int64)  # -1: none
        # gold text: the answer (for multiple choice the schema checks answer == options[answer_index])
        answers = col("answer")
        gold_text = _strs(answers, m)
        self.gold_raw = gold_text
        self._options = col("options")
        used = np.zeros(m, bool)
        used[ctx.qpos[ctx.has_q]] = True
        qtext = ctx.q_corpus.texts
        numeric = self._numeric_golds(cfg, used & ~self.is_code, answers, qtext)
        self._text_golds(ctx, cfg, used & ~self.is_code & ~numeric)
        self._code_golds(cfg, used & self.is_code, col, qtext)

    def _numeric_golds(self, cfg: LeakageConfig, rows: np.ndarray, answers: pd.Series, qtext: list[str]) -> np.ndarray:
        """``gold_value``: the numeric answers of ``rows`` that single out the answer. Returns the numeric rows."""
        m, gold_text = self.m, self.gold_raw
        self.gold_value: list[Number | None] = [None] * m
        numeric = np.zeros(m, bool)
        with_digit = T.regex_mask(T.arrow_strings(answers), r"\d")
        for j in np.flatnonzero(rows & with_digit).tolist():
            v = _numeric_answer(gold_text[j], cfg.max_unit_chars)
            if v is None:
                continue
            numeric[j] = True
            if _states_number(qtext[j], v, cfg):
                continue  # the number is in the question: mentioning it reveals nothing
            gi = int(self.gold_index[j])
            others = (
                [_numeric_answer(str(o), cfg.max_unit_chars) for k, o in enumerate(self.options(j)) if k != gi]
                if self.is_mc[j]
                else []
            )
            if any(o is not None and _close(v, o, cfg.numeric_rel_tol, cfg.numeric_abs_tol) for o in others):
                continue  # another candidate has the same number (other unit): the number does not single out the answer
            self.gold_value[j] = v
        return numeric

    def _text_golds(self, ctx: _Context, cfg: LeakageConfig, rows: np.ndarray) -> None:
        """``gold_pat``: the normalised gold text of ``rows`` (word-bounded) where the question does not show it;
        ``anchor_hash``: its longest word's hash. Numeric golds are checked as numbers instead."""
        m = self.m
        gold_corpus = Corpus(self.gold_raw)
        gold_norm = gold_corpus.norm
        q_joined, q_starts = ctx.q_corpus.norm_joined
        q_ends = np.append(q_starts[1:] - 1, len(q_joined)).tolist()
        q_starts = q_starts.tolist()
        ignore = {" " + " ".join(re.sub(r"[^\w]+", " ", t.lower()).split()) + " " for t in cfg.ignore_gold_texts}
        self.gold_pat: list[str | None] = [None] * m
        for j in np.flatnonzero(rows).tolist():
            g = gold_norm[j]
            if len(g) - 2 < cfg.min_gold_chars or g in ignore or q_joined.find(g, q_starts[j], q_ends[j]) >= 0:
                continue
            self.gold_pat[j] = g
        # each gold text's longest word, hashed like Corpus.words: the vectorised pre-filter of the lookup
        ah, arows = gold_corpus.longest_words()
        keep = np.array([self.gold_pat[r] is not None for r in arows.tolist()], bool)
        self.anchor_hash = np.zeros(m, _U64)
        self.anchor_hash[arows[keep]] = ah[keep]  # 0 (no anchor) where there is no gold text to look for

    def _code_golds(
        self, cfg: LeakageConfig, rows: np.ndarray, col: Callable[[str], pd.Series], qtext: list[str]
    ) -> None:
        """Code: reference-solution lines and token n-grams not already shown in the question."""
        gold_text = self.gold_raw
        self.sol_lines: dict[int, list[str]] = {}
        self._sol: dict[int, tuple[str, str]] = {}
        self._ngrams: dict[int, set[tuple[str, ...]]] = {}
        self.n_tok = cfg.code_ngram_tokens
        code_rows = np.flatnonzero(rows)
        if len(code_rows):
            sols = _strs(col("reference_solution").iloc[code_rows], len(code_rows))
            sigs = _strs(col("code_signature").iloc[code_rows], len(code_rows))
            for j, sol, sig in zip(code_rows.tolist(), sols, sigs, strict=True):
                sol = sol or gold_text[j]
                shown_text = qtext[j] + "\n" + sig
                self._sol[j] = (sol, shown_text)
                shown = _ws(shown_text)
                seen: set[str] = set()
                lines = self.sol_lines[j] = []
                for line in sol.splitlines():
                    w = _ws(line)
                    if len(w) >= cfg.min_solution_line_chars and w not in shown and w not in seen:
                        seen.add(w)
                        lines.append(w)

    def options(self, j: int) -> list:
        o = self._options.iat[j]
        return list(o) if isinstance(o, list | tuple | np.ndarray) else []

    def covers(self, j: int) -> list[str]:
        """Normalised texts of the other candidates of question j that contain its gold text (a premise
        naming "liquid oxygen" does not reveal the gold "oxygen" when "liquid oxygen" is another option)."""
        g, gi = self.gold_pat[j], int(self.gold_index[j])
        if g is None:
            return []
        others = [str(o) for i, o in enumerate(self.options(j)) if i != gi]
        return [o for o in Corpus(others).norm if g in o and o != g] if others else []

    def sol_ngrams(self, j: int) -> set[tuple[str, ...]]:
        """Runs of n_tok tokens of question j's reference solution that the question does not show."""
        if j not in self._ngrams:
            k = self.n_tok
            sol, shown_text = self._sol[j]
            toks, shown = _CODE_TOKEN.findall(sol), _CODE_TOKEN.findall(shown_text)
            grams = {tuple(toks[i : i + k]) for i in range(len(toks) - k + 1)}
            self._ngrams[j] = grams - {tuple(shown[i : i + k]) for i in range(len(shown) - k + 1)}
        return self._ngrams[j]


_ANSWER_NOUN = r"(?:answer|option|choice|candidate)"
_ANSWER_ADJ = r"(?:correct|right|true|best|expected|final|only|intended)"
_ADV = r"(?:therefore|thus|hence|clearly|obviously|then|so|simply|certainly|definitely|surely|of course)"
_ABOUT = r"(?: (?:to|for|of|in) (?:this|the|that) (?:question|problem|task|item))?(?: here| in this case)?"
_BE = rf"(?:is|was|being|remains|(?:would|must|should|will|can only|could only|has to|needs to)(?: {_ADV})? be)"
_SELECT = r"(?:select|choose|pick|mark|circle|tick|go with|opt for)"
_SELECTOR = (
    r"(?:(?:one|you|we|i|they|the reader|a reader|students|test takers)"
    r"(?: (?:should|must|would|could|can|will|need to|ought to|has to|have to))?"
    r"|(?:should|must|need to|ought to|has to|have to))"
)


@lru_cache(maxsize=4096)
def _answer_phrase(g: str) -> re.Pattern:
    """Normalised-text pattern of `g` (normalised, padded) named AS the answer (the one leak definition,
    ``phr.validation.judge.LEAK_DEFINITION``): "the (correct) answer (to this question) is g", "answer: g",
    "g is (therefore) the correct answer/option", "g is correct", "g as the answer", "one should select g",
    "choose g", "g should be chosen". A claim about g that does not present it as the answer matches none."""
    gold = re.escape(g.strip())
    return re.compile(
        rf" (?:{_ANSWER_ADJ} )?{_ANSWER_NOUN}{_ABOUT}(?: {_ADV})? {_BE}(?: {_ADV})? {gold} "
        rf"|(?:^| {_ANSWER_ADJ}) {_ANSWER_NOUN}{_ABOUT} {gold} "
        rf"| {gold}(?: {_ADV})? (?:{_BE}|as) (?:{_ADV} )?"
        rf"(?:(?:the )?{_ANSWER_ADJ} {_ANSWER_NOUN}|the {_ANSWER_NOUN}|{_ANSWER_NOUN} |(?:correct|right) )"
        rf"| {_SELECTOR}(?: {_ADV})? {_SELECT} {gold} "
        rf"|^ (?:{_ADV} )?{_SELECT} {gold} "
        rf"| {gold} (?:should|must|has to|needs to|is to|ought to) be (?:selected|chosen|picked|marked) "
    )


def _names_as_answer(row: str, g: str) -> bool:
    """Does the normalised row name the gold text `g` as the answer (not merely make a claim about it)?"""
    return _answer_phrase(g).search(row) is not None


def _leakage(ctx: _Context, cfg: LeakageConfig) -> list[Rejection]:
    found: list[tuple[int, str]] = []
    if ctx.Q is not None and len(ctx.Q):
        gold = _Gold(ctx, cfg)
        found += _gold_text_leaks(ctx, cfg, gold)
        if cfg.check_labels:
            found += _label_leaks(ctx, cfg, gold)
        found += _numeric_leaks(ctx, cfg, gold)
        found += _code_leaks(ctx, cfg, gold)
    found += _truthful_carries_error(ctx, cfg)
    return _finish(found, ctx, "leakage")


def _per_row(flags: Any, qpos: np.ndarray) -> np.ndarray:
    """A per-question flag read for every row (a row without a question: False)."""
    f = np.append(np.asarray(flags, bool), False)  # index -1 (no question) -> False
    return f[qpos]


def _gold_text_leaks(ctx: _Context, cfg: LeakageConfig, gold: _Gold) -> list[tuple[int, str]]:
    """Gold option / answer text, word-bounded on normalised text. Vectorised pre-filter: the rows containing
    the gold text's longest word (word hashes compared to the row's anchor hash)."""
    found: list[tuple[int, str]] = []
    corpus, qpos = ctx.corpus, ctx.qpos
    joined, starts = corpus.norm_joined
    ends = np.append(starts[1:] - 1, len(joined)).tolist()
    starts_l = starts.tolist()
    pats = gold.gold_pat
    find = joined.find
    wh, wrows = corpus.words
    anchor = np.append(gold.anchor_hash, _U64(0))[qpos]  # index -1 -> 0 (no anchor)
    hit_rows = np.zeros(ctx.n, bool)
    hit_rows[wrows[wh == anchor[wrows]]] = True
    for i in np.flatnonzero(hit_rows & _per_row([p is not None for p in pats], qpos)).tolist():
        p = int(qpos[i])
        g = pats[p]
        if g is None or find(g, starts_l[i], ends[i]) < 0:
            continue
        covers = gold.covers(p)
        rest = corpus.norm_row(i)
        if covers:
            for c in covers:
                rest = rest.replace(c, " ")
            if g not in rest:
                continue
        if (
            ctx.is_h[i]
            and gold.is_mc[p]
            and cfg.gold_text_in_hallucinated == "answer_phrase"
            and not _names_as_answer(rest, g)
        ):
            continue  # a (false) claim about a gold option the question shows anyway, not the answer given away
        found.append(
            (i, f"{ctx.kind(i) or 'the'} premise reveals the gold answer text {_short(gold.gold_raw[p], 50)!r}")
        )
    return found


def _label_leaks(ctx: _Context, cfg: LeakageConfig, gold: _Gold) -> list[tuple[int, str]]:
    """Answer labels (multiple choice): rows the statement pre-filter kept (it includes the label words) and the
    label pattern's RE2 superset matches."""
    found: list[tuple[int, str]] = []
    qpos = ctx.qpos
    rows = np.flatnonzero(_per_row(gold.is_mc, qpos) & ctx.statement_prefilter)
    if len(rows):
        rows = rows[T.regex_mask(ctx.corpus.arrow.take(pa.array(rows)), _LABEL_RE2)]
    for i, text in zip(rows.tolist(), ctx.corpus.texts_of(rows), strict=True):
        gi = int(gold.gold_index[int(qpos[i])])
        gold_labels = {str(gi + 1), LETTERS[gi], LETTERS[gi].lower()} if 0 <= gi < len(LETTERS) else set()
        for m in _LABEL.finditer(text):
            label = m.group("p") or m.group("b") or m.group("q")
            if label in gold_labels:
                found.append((i, f"premise reveals the gold label {label!r} ({_short(m.group(0), 40)!r})"))
                break
            if cfg.reject_any_label_reference:
                found.append((i, f"premise refers to answer candidate {label!r} ({_short(m.group(0), 40)!r})"))
                break
    return found


def _may_state(text: str, lead: str) -> bool:
    """The leading-digit pre-test: can `text` write a number whose first significant digit is one of `lead`
    (or a fraction)? No number close to a value can be written without one (``_lead_digits``)."""
    return any(ch in text for ch in lead) or "/" in text or "frac" in text


def _states_number(text: str, v: Number, cfg: LeakageConfig) -> bool:
    """Does `text` state a number close to `v` (the leakage comparison)? (After the two pre-tests.)"""
    rel, abs_ = cfg.numeric_rel_tol, cfg.numeric_abs_tol
    if not _may_state(text, _lead_digits(v, rel, abs_)):
        return False
    return _number_close_to(text, v, _digits_pattern(v, rel, abs_), cfg) is not None


def _number_close_to(text: str, v: Number, digits: re.Pattern[str] | None, cfg: LeakageConfig) -> Number | None:
    """The first number of `text` close to `v`, after the two-digit pre-test `digits` (``_digits_pattern``);
    None when there is none."""
    if digits is not None and not digits.search(text):
        return None  # no number close to v can be written without its first two digits
    return next((x for x in parse_numbers(text) if _close(x, v, cfg.numeric_rel_tol, cfg.numeric_abs_tol)), None)


def _numeric_leaks(ctx: _Context, cfg: LeakageConfig, gold: _Gold) -> list[tuple[int, str]]:
    """Numeric answers: rows of questions with a numeric gold answer (after a leading-digit pre-test)."""
    gv, qpos = gold.gold_value, ctx.qpos
    need = _per_row([v is not None for v in gv], qpos)
    if not need.any():
        return []
    found: list[tuple[int, str]] = []
    rows = np.flatnonzero(need)
    # the pre-test in one RE2 pass per set of leading digits (a handful), over the rows whose gold has that set
    leads = {p: _lead_digits(gv[p], cfg.numeric_rel_tol, cfg.numeric_abs_tol) for p in set(qpos[rows].tolist())}
    lead_sets = sorted(set(leads.values()))
    lead_of_q = np.zeros(len(gv) + 1, np.int64)
    lead_of_q[list(leads)] = [lead_sets.index(d) for d in leads.values()]
    row_lead = lead_of_q[qpos[rows]]
    maybe = np.zeros(len(rows), bool)
    for k, digits in enumerate(lead_sets):
        sel = np.flatnonzero(row_lead == k)
        maybe[sel] = T.regex_mask(ctx.corpus.arrow.take(pa.array(rows[sel])), f"[{digits}/]|frac")
    two_digits: dict[int, re.Pattern[str] | None] = {}  # per question, made when one of its rows gets here
    for i, text in zip(rows[maybe].tolist(), ctx.corpus.texts_of(rows[maybe]), strict=True):
        p = int(qpos[i])
        v = gv[p]
        assert v is not None  # rows of questions with a numeric gold only
        if p not in two_digits:
            two_digits[p] = _digits_pattern(v, cfg.numeric_rel_tol, cfg.numeric_abs_tol)
        x = _number_close_to(text, v, two_digits[p], cfg)
        if x is not None:
            found.append((i, f"premise states the numeric answer {_short(gold.gold_raw[p], 30)!r} as {x.text!r}"))
    return found


def _code_leaks(ctx: _Context, cfg: LeakageConfig, gold: _Gold) -> list[tuple[int, str]]:
    """Code: reference-solution lines and token runs."""
    k, qpos = cfg.code_ngram_tokens, ctx.qpos
    found: list[tuple[int, str]] = []
    code_rows = np.flatnonzero(_per_row(gold.is_code, qpos))
    code_rows = code_rows[np.array([p in gold._sol for p in qpos[code_rows].tolist()], bool)]
    codeish = np.zeros(ctx.n, bool)  # _looks_like_code of every code row, in one RE2 pass
    if k > 0 and len(code_rows):
        codeish[code_rows] = T.regex_mask(ctx.corpus.arrow.take(pa.array(code_rows)), _CODE_LIKE)
    # Python reads the rows that may quote a line (_line_candidates) or hold a token run (codeish) only
    code_rows = code_rows[_line_candidates(ctx, gold, code_rows) | codeish[code_rows]]
    for i, text in zip(code_rows.tolist(), ctx.corpus.texts_of(code_rows), strict=True):
        p = int(qpos[i])
        flat = _ws(text)  # (any whitespace, as the lines: "\r", a no-break or an ideographic space too)
        hit = next((ln for ln in gold.sol_lines.get(p, ()) if ln in flat), None)
        if hit is not None:
            found.append((i, f"premise quotes the reference solution line {_short(hit, 60)!r}"))
            continue
        if codeish[i]:
            run = _token_run(_CODE_TOKEN.findall(flat), gold.sol_ngrams(p), k)
            if run is not None:
                found.append(
                    (
                        i,
                        f"premise quotes {k} consecutive tokens of the reference solution {_short(' '.join(run), 60)!r}",
                    )
                )
    return found


def _line_candidates(ctx: _Context, gold: _Gold, code_rows: np.ndarray) -> np.ndarray:
    """Per row of `code_rows`: may its premise quote one of its question's solution lines? A premise that quotes a
    line holds the line's inner words whole (``Corpus.longest_inner_words``; for ASCII text, where normalising is
    per character), so it must hold the longest: word hashes keyed by question, compared in one vectorised pass.
    Always a candidate: a premise beyond ASCII, a question with a line of fewer than three words."""
    pairs = [(p, ln) for p, lines in gold.sol_lines.items() for ln in lines]  # (question, line)
    if not len(code_rows) or not pairs:
        return np.zeros(len(code_rows), bool)
    owner = np.array([p for p, _ in pairs], np.int64)
    lines = [ln for _, ln in pairs]
    ah, arow = Corpus(lines).longest_inner_words()
    anchored = np.zeros(len(lines), bool)
    anchored[arow] = True
    always = np.zeros(gold.m + 1, bool)  # (+1: index -1, a row without a question, stays False)
    always[owner[~anchored]] = True
    out = always[ctx.qpos[code_rows]]
    if not ctx.corpus.normalised_ascii:  # (normalising maps the common non-ASCII spaces, UNICODE_PUNCT, to spaces)
        out |= T.regex_mask(ctx.corpus.arrow.take(pa.array(code_rows)), r"[^\x{00}-\x{7f}]")
    h, rows = ctx.corpus.words
    of_code = np.zeros(ctx.n, bool)
    of_code[code_rows] = True
    keep = of_code[rows]
    h, rows = h[keep], rows[keep]

    def keyed(hashes: np.ndarray, questions: np.ndarray) -> np.ndarray:  # (a collision only adds a candidate)
        with np.errstate(over="ignore"):
            return hashes ^ (questions.astype(_U64) * _U64(0x9E3779B97F4A7C15) + _U64(0x2545F4914F6CDD1D))

    anchors = np.sort(keyed(ah, owner[arow]))
    hit = np.zeros(ctx.n, bool)
    if len(anchors):  # membership: a bitmap of the anchors' low 20 bits first, then a binary search for the few
        keys = keyed(h, ctx.qpos[rows])
        low = _U64((1 << 20) - 1)
        bitmap = np.zeros(1 << 20, bool)
        bitmap[(anchors & low).astype(np.intp)] = True
        maybe = np.flatnonzero(bitmap[(keys & low).astype(np.intp)])
        at = np.minimum(np.searchsorted(anchors, keys[maybe]), len(anchors) - 1)
        hit[rows[maybe[anchors[at] == keys[maybe]]]] = True
    return out | hit[code_rows]


def _token_run(toks: list[str], grams: set[tuple[str, ...]], k: int) -> tuple[str, ...] | None:
    """The first run of ``k`` tokens that is one of ``grams``, else None."""
    if not grams:
        return None
    return next((tuple(toks[s : s + k]) for s in range(len(toks) - k + 1) if tuple(toks[s : s + k]) in grams), None)


def _truthful_carries_error(ctx: _Context, cfg: LeakageConfig, num_perm: int = 32) -> list[tuple[int, str]]:
    """A truthful premise T that contains a hallucinated premise H of the same question.

    H's content is its word n-grams minus those of the question text Q (T need not repeat the question).
    T carries H when at least `containment_threshold` of that content is in T (default 1.0: all of it).
    A mutation that edits T's wording always leaves at least one n-gram of H (the edited part) outside
    T, so with the default only a T that repeats H's wording is flagged; whether T *means* what H
    claims is the LLM judge's question.

    Cost: H minus Q inside T is H inside (T union Q), which forces, bin by bin of the raw one-permutation
    signatures, min(sig T, sig Q) <= sig H, except in at most one bin per n-gram of H outside T union Q.
    That vectorised comparison of each (H, T) pair of a question keeps the pairs that can pass; exact
    set arithmetic runs on those only.
    """
    n = ctx.n
    if not ctx.is_h.any() or not ctx.is_t.any():
        return []
    k = cfg.containment_shingle_words
    c = cfg.containment_threshold
    sig = ctx.raw_signatures("word", k, num_perm)
    # (H, T) pairs within a question
    t_rows = np.flatnonzero(ctx.is_t)
    t_rows = t_rows[np.argsort(ctx.group[t_rows], kind="stable")]
    t_groups = ctx.group[t_rows]
    h_rows = np.flatnonzero(ctx.is_h)
    lo = np.searchsorted(t_groups, ctx.group[h_rows], side="left")
    hi = np.searchsorted(t_groups, ctx.group[h_rows], side="right")
    counts = hi - lo
    ph = np.repeat(h_rows, counts)
    offs = np.arange(len(ph)) - np.repeat(np.cumsum(counts) - counts, counts)
    pt = t_rows[np.repeat(lo, counts) + offs]
    if not len(ph):
        return []
    sh, rows = ctx.corpus.shingles(k, "word")
    size = np.bincount(rows, minlength=n)  # with repeats: an upper bound of the set size
    allowed = np.floor((1.0 - c) * size[ph] + 1e-9).astype(np.int64)
    upper = sig[pt]
    if ctx.Q is not None and len(ctx.Q):
        qsig = ctx.raw_signatures("word", k, num_perm, questions=True)
        qsig = np.concatenate([qsig, np.full((1, qsig.shape[1]), np.iinfo(np.uint64).max, _U64)])
        np.minimum(upper, qsig[ctx.qpos[ph]], out=upper)  # qpos -1 -> the all-empty last row
    violations = (upper > sig[ph]).sum(axis=1)
    keep = np.flatnonzero((violations <= allowed) & (size[ph] >= cfg.min_containment_shingles))
    if not len(keep):
        return []
    # exact check of the surviving pairs
    bounds = row_starts(rows, n)
    if ctx.Q is not None and len(ctx.Q):
        qsh, qrows = ctx.q_corpus.shingles(k, "word")
        qbounds = row_starts(qrows, len(ctx.Q))
    out: list[tuple[int, str]] = []
    done: set[int] = set()
    for h, t in zip(ph[keep].tolist(), pt[keep].tolist(), strict=True):
        if h in done:
            continue
        own = set(sh[bounds[h] : bounds[h + 1]].tolist())
        q = int(ctx.qpos[h])
        if q >= 0:
            own -= set(qsh[qbounds[q] : qbounds[q + 1]].tolist())
        if len(own) < cfg.min_containment_shingles:
            continue
        inside = len(own & set(sh[bounds[t] : bounds[t + 1]].tolist()))
        if inside >= c * len(own) - 1e-9:
            done.add(h)
            out.append(
                (
                    t,
                    f"truthful premise contains hallucinated premise {ctx.row_id(h)}: {inside}/{len(own)} ({inside / len(own):.0%}) of its word {k}-grams (outside the question) are in the truthful statement",
                )
            )
    return out


# ---- references and composition ------------------------------------------------------------------------------


def references(augmentations: Any, questions: Any) -> list[Rejection]:
    """Augmentations whose question_id names no question."""
    ctx = (
        augmentations if isinstance(augmentations, _Context) else _Context(augmentations, questions, ValidationConfig())
    )
    if ctx.Q is None:
        return []
    return [
        Rejection(ctx.row_id(i), "reference", f"question_id {ctx.question_id(i)!r} names no question")
        for i in np.flatnonzero(~ctx.has_q).tolist()
    ]


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


BLOCK_ROWS = 32768


def _blocks(
    augs: pd.DataFrame, questions: pd.DataFrame | None, cfg: ValidationConfig, block_rows: int = BLOCK_ROWS
) -> Iterator[_Context]:
    """Contexts over blocks of about `block_rows` augmentation rows, each holding whole questions (every
    rule looks at one question's rows only), with the questions they name. Streaming in blocks keeps the
    work arrays small (cache-sized) and the cost linear; rows of a question need not be adjacent."""
    n = len(augs)
    if n <= block_rows:
        yield _Context(augs, questions, cfg)
        return
    qcol = augs["question_id"] if "question_id" in augs.columns else pd.Series([""] * n)
    codes, uniques = pd.factorize(qcol, use_na_sentinel=False)
    order = None if (np.diff(codes) >= 0).all() else np.argsort(codes, kind="stable")
    sorted_codes = codes if order is None else codes[order]
    group_starts = np.flatnonzero(np.diff(sorted_codes)) + 1
    qpos = None
    if questions is not None and len(questions) and "id" in questions.columns:
        qpos = _positions(questions["id"], uniques)[codes]  # each distinct question id looked up once
    start = 0
    while start < n:
        k = np.searchsorted(group_starts, start + block_rows)
        end = int(group_starts[k]) if k < len(group_starts) else n
        idx = np.arange(start, end) if order is None else order[start:end]
        block = augs.iloc[start:end] if order is None else augs.iloc[idx]
        qblock, local = questions, None
        if qpos is not None and questions is not None:  # (qpos is set only with questions)
            block_qpos = qpos[idx]
            wanted = np.unique(block_qpos[block_qpos >= 0])
            qblock = questions.iloc[wanted]
            local = np.where(block_qpos >= 0, np.searchsorted(wanted, block_qpos), -1)
        yield _Context(block, qblock, cfg, row_index=idx, qpos=local)
        start = end


def _blocked(
    augs: Any, questions: Any | None, cfg: ValidationConfig, fn: Callable[[_Context], list[Rejection]]
) -> list[Rejection]:
    adf = to_frame(augs)
    qdf = None if questions is None else to_frame(questions)
    out: list[Rejection] = []
    for ctx in _blocks(adf, qdf, cfg):
        out += fn(ctx)
    return out


def _rules(ctx: _Context, cfg: ValidationConfig) -> tuple[dict[str, list[Rejection]], dict[str, float]]:
    """The rule checks of one block: rejections and seconds per check."""
    found: dict[str, list[Rejection]] = {}
    seconds: dict[str, float] = {}
    for name, fn in (
        ("reference", (lambda c: references(c, None)) if cfg.schema.check_references else (lambda c: [])),
        ("single_mutation", lambda c: _single_mutation(c, cfg.single_mutation)),
        ("distinctness", lambda c: _distinctness(c, cfg.distinctness)),
        ("leakage", lambda c: _leakage(c, cfg.leakage)),
    ):
        t0 = time.perf_counter()
        found[name] = fn(ctx)
        seconds[name] = time.perf_counter() - t0
    return found, seconds


def _ordered_map(fn: Callable[[Any], Any], items: Iterator[Any], workers: int) -> Iterator[Any]:
    """fn over items on `workers` threads, results in order, at most 2 * workers items in flight (the
    blocks' arrays are large: they are made as the workers need them, not all at once)."""
    if workers <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(workers, thread_name_prefix="phr-validate") as pool:
        pending: deque[Future] = deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def default_workers() -> int:
    """Threads for the rule checks: the CPUs this process may use, at most 4 (their array work releases the
    GIL; beyond 4 the Python parts of the rules dominate)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


def _balanced_block_rows(n: int, block_rows: int, workers: int, min_rows: int = 8192) -> int:
    """Rows per block: at most `block_rows`, in a number of blocks that is a multiple of `workers`, all about
    the same size (100k rows, 32768, 2 workers: four blocks of 25k, not three of 32768 and a small one that
    leaves a worker idle; 25k rows: two of 12.5k), unless that makes blocks smaller than `min_rows`."""
    if n <= 0:
        return block_rows
    n_blocks = -(-n // block_rows)
    balanced = -(-n_blocks // workers) * workers
    if n // balanced >= min_rows:
        n_blocks = balanced
    return -(-n // n_blocks)


def run_checks(
    questions: Any,
    augmentations: Any,
    config: ValidationConfig | dict | None = None,
    *,
    instances: Any | None = None,
    schemas: bool = True,
    block_rows: int = BLOCK_ROWS,
    workers: int | None = None,
) -> ValidationReport:
    """Schemas (questions, augmentations, and instances when given), references, single_mutation,
    distinctness and leakage, composed into one report (with the time of each step, summed over blocks).

    The rule checks stream over blocks of at most about `block_rows` augmentation rows (whole questions; as many
    blocks as keep every worker busy, `_balanced_block_rows`), on `workers` threads (None: `default_workers()`);
    the report is the same for any number of workers."""
    cfg = _config(config)
    report = ValidationReport()
    qdf, adf = to_frame(questions), to_frame(augmentations)
    report.rows = {"questions": len(qdf), "augmentations": len(adf)}

    def step(name: str, fn: Callable[[], list[Rejection]]) -> None:
        t0 = time.perf_counter()
        report.extend(fn())
        report.seconds[name] = report.seconds.get(name, 0.0) + time.perf_counter() - t0

    if schemas:
        step(
            "schema",
            lambda: validate_frame(qdf, "questions", cfg.schema) + validate_frame(adf, "augmentations", cfg.schema),
        )
        if instances is not None:
            idf = to_frame(instances)
            report.rows["instances"] = len(idf)
            step("schema", lambda: validate_frame(idf, "instances", cfg.schema))
    found: dict[str, list[Rejection]] = defaultdict(list)

    n_workers = default_workers() if workers is None else max(1, int(workers))
    rows_per_block = _balanced_block_rows(len(adf), block_rows, n_workers)

    def timed_blocks() -> Iterator[_Context]:
        blocks = _blocks(adf, qdf, cfg, rows_per_block)
        while True:
            t0 = time.perf_counter()
            ctx = next(blocks, None)
            report.seconds["prepare"] = report.seconds.get("prepare", 0.0) + time.perf_counter() - t0
            if ctx is None:
                return
            yield ctx

    for block_found, seconds in _ordered_map(lambda c: _rules(c, cfg), timed_blocks(), n_workers):
        for name, rejections in block_found.items():
            found[name] += rejections
            report.seconds[name] = report.seconds.get(name, 0.0) + seconds[name]
    for name in ("reference", "single_mutation", "distinctness", "leakage"):
        report.extend(found[name])
    return report

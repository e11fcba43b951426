"""Answer extraction and per-response correctness for PHRBench tasks.

Multiple choice (candidates numbered 1..k in the prompt): the last explicit final-answer line wins
("Answer: 3", "Final answer: (3)", "The answer is option 3"); otherwise a lone "(3)" / "3" on the last
non-empty line; otherwise the option text quoted in the final-answer line or, failing that, the only option
text that appears in the response's last paragraph. Letters A-D are accepted as 1-4 in answer lines.

Open-ended (GPQA open-ended, numeric ChemBench; paper §B.2 "the task-specific evaluation criterion inherited
from the corresponding source benchmark", which the paper does not spell out: our rule, docs/metrics.md):

* a **numeric gold** (it starts with a number, e.g. ``4.3 x 10^-6 M``, ``-3``, ``25%``, ``1/2``): every number
  of the gold (``parse_numbers``: signs, decimals, ``a × 10^b``, ``a x 10^-b``, ``1e-4``, ``10^{-8}``,
  fractions, percentages, thousands separators, units after the number ignored) must be matched, in order, by
  the numbers of the final-answer line, the first gold number by the first answer number, each within the
  relative tolerance ``REL_TOL`` (1%); the sign always counts;
* a **free-text gold**: the LLM equivalence grader when one is given (``phr.eval.scorers``), otherwise a
  normalised match (case, punctuation, articles, whitespace; the gold contained in the answer line).

Code: the last ```python block (or the whole reply if it has none) is the program; correctness comes from the
sandbox (phr.eval.sandbox.check_solution).
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass

_ANSWER_LINE = re.compile(
    r"(?:final\s+answer|answer|correct\s+(?:answer|option|candidate)|the\s+answer\s+is|i\s+choose|option)"
    r"\s*(?:is|:|=|-(?=\s))?\s*(?:option|candidate)?\s*(?::|-(?=\s))?\s*(.+)$",
    re.IGNORECASE,
)
_NUM_TOKEN = re.compile(r"^\(?\s*([1-9][0-9]?|[A-Za-z])\s*\)?[.)]?(?:\s|$)")
_CODE_BLOCK = re.compile(r"```(?:python|py|Python)?[ \t]*\n(.*?)```", re.DOTALL)


def _norm(text: str) -> str:
    text = text.casefold()
    text = "".join(" " if ch in string.punctuation else ch for ch in text)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _label(token: str, k: int) -> int | None:
    m = _NUM_TOKEN.match(token.strip())
    if not m:
        return None
    v = m.group(1)
    idx = int(v) if v.isdigit() else (ord(v.upper()) - ord("A") + 1 if len(v) == 1 and v.isalpha() else None)
    if v.isalpha() and v.upper() not in "ABCDEFGH"[:k]:
        return None
    return idx if idx is not None and 1 <= idx <= k else None


def _answer_lines(response: str) -> list[str]:
    out = []
    for line in response.splitlines():
        line = line.strip().strip("*#>` ").strip()
        m = _ANSWER_LINE.search(line)
        if m:
            out.append(m.group(1).strip().strip("*` ."))
    return out


def extract_choice(response: str, options: list[str]) -> int | None:
    """0-based index of the chosen candidate, or None when the response commits to none."""
    k = len(options)
    for tail in reversed(_answer_lines(response)):
        idx = _label(tail, k)
        if idx is not None:
            return idx - 1
        hit = _only_option(tail, options)
        if hit is not None:
            return hit
    lines = [ln.strip() for ln in response.strip().splitlines() if ln.strip()]
    if lines:
        idx = _label(lines[-1].strip("*`. "), k)
        if idx is not None and len(lines[-1].strip("*`. ")) <= 4:
            return idx - 1
        last_par = response.strip().split("\n\n")[-1]
        return _only_option(last_par, options)
    return None


def _only_option(text: str, options: list[str]) -> int | None:
    t = f" {_norm(text)} "
    hits = [i for i, o in enumerate(options) if _norm(o) and f" {_norm(o)} " in t]
    if len(hits) > 1:  # prefer the longest when one option contains another ("acid" vs "acetic acid")
        hits.sort(key=lambda i: -len(_norm(options[i])))
        if all(f" {_norm(options[j])} " in f" {_norm(options[hits[0]])} " for j in hits[1:]):
            return hits[0]
        return None
    return hits[0] if hits else None


def extract_final(response: str) -> str | None:
    """The text of the last final-answer line, or the last non-empty line."""
    lines = _answer_lines(response)
    if lines:
        return lines[-1]
    rest = [ln.strip() for ln in response.strip().splitlines() if ln.strip()]
    return rest[-1] if rest else None


#: Relative tolerance of a numeric open-ended match (ours: the paper names no tolerance; docs/metrics.md).
REL_TOL = 0.01

_SUPER = "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺"
_SUPER_RUN = re.compile(f"[{_SUPER}]+")
_FRAC_TEX = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")


def _exp(name: str) -> str:
    return r"\s*(?:\^|\*\*)\s*\{?\s*(?P<" + name + r">[-+]?\d+)\s*\}?"  # ^-8, ^{-8}, **-8


_NUM = re.compile(
    r"(?<![\w^.])(?P<sign>(?<![\w)\]^.])[-+])?"  # a sign, never the hyphen of a word or a range ("4-methyl", "2-3")
    r"(?:10" + _exp("pow") + r"|"  # 10^-8, 10^{-8}, 10**-8
    r"(?P<mant>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"  # 1,234.5  12  .5
    r"(?:[eE](?P<e>[-+]?\d+)|\s*[x×*·]\s*10" + _exp("x") + r")?"  # 1e-4, 4.3 × 10^-6
    r"(?:\s*/\s*(?P<den>\d+(?:\.\d+)?)(?![\d.]))?)"  # 3/4
    r"(?P<pct>\s*%)?"
)
_LOCANT = re.compile(r"[-,]\d*-?[A-Za-z]")  # "4-methyl", "2,3-dimethyl": a chemical name, not a number
#: A numeric gold has at most this many words besides its numbers (its units).
MAX_UNIT_WORDS = 3
_LEAD = re.compile(r"^(?:~|≈|about|approximately|approx\.?|roughly|\$|\s)*", re.IGNORECASE)


@dataclass(frozen=True)
class Number:
    """A number read from text: its value (a percentage as a fraction: ``25%`` is 0.25) and where it was."""

    value: float
    percent: bool = False
    start: int = 0
    end: int = 0


def _plain(text: str) -> str:
    """Unicode and LaTeX number notation as plain text (``−`` -> ``-``, ``10⁻⁵`` -> ``10^-5``, ``\\times`` ->
    ``×``, ``\\frac{a}{b}`` -> ``a/b``, ``$`` and ``\\,`` dropped)."""
    text = text.replace("\u2212", "-").replace("\\times", "×").replace("\\cdot", "×").replace("\\%", "%")
    text = _FRAC_TEX.sub(r"\1/\2", text)
    for tok in ("$", "\\left", "\\right", "\\,", "\\!", "\\ "):
        text = text.replace(tok, "" if tok != "\\ " else " ")
    return _SUPER_RUN.sub(lambda m: "^" + m.group().translate(str.maketrans(_SUPER, "0123456789-+")), text)


def parse_numbers(text: str) -> list[Number]:
    """Every number in ``text``, in order: signs (``-3``, ``−3``), decimals, thousands separators
    (``1,234,567``), ``a × 10^b`` / ``a x 10^-b`` / ``a*10**b`` / ``a \\times 10^{b}``, ``1e-4``, a bare
    ``10^{-8}`` / ``10⁻⁸``, fractions ``3/4`` and ``\\frac{3}{4}``, percentages (``25%`` = 0.25). Units after a
    number are ignored, and so are digits inside words (``H2O``) and unit exponents (``m/s^2``); a hyphen
    after a letter, digit or bracket is not a sign (``4-methyl``, ``2-3``)."""
    out = []
    for m in _NUM.finditer(_plain(text)):
        if m.group("pow") is not None:
            value = 10.0 ** int(m.group("pow"))
        elif m.group("mant") is not None:
            value = float(m.group("mant").replace(",", ""))
            exp = m.group("e") or m.group("x")
            if exp is not None:
                value *= 10.0 ** int(exp)
            if m.group("den") is not None:
                den = float(m.group("den"))
                if den == 0:
                    continue
                value /= den
        else:
            continue
        if m.group("sign") == "-":
            value = -value
        pct = m.group("pct") is not None
        out.append(Number(value / 100.0 if pct else value, pct, m.start(), m.end()))
    return out


def _close(a: Number, b: Number, rel_tol: float) -> bool:
    """Equal within ``rel_tol``; when exactly one side is a percentage, ``25%`` also equals ``25``."""
    values = [(a.value, b.value)]
    if a.percent != b.percent:
        values.append((a.value * 100 if a.percent else a.value, b.value * 100 if b.percent else b.value))
    return any(math.isclose(x, y, rel_tol=rel_tol, abs_tol=0.0) for x, y in values)


def numeric_gold(gold: str) -> list[Number] | None:
    """The numbers of a numeric gold answer, else None (free text). Numeric: it starts with a number (after
    ``~`` / "about"), that number is not the locant of a name (``4-methyl...``), and at most ``MAX_UNIT_WORDS``
    words besides the numbers remain (units: ``9.8 m/s^2``, ``4.3 x 10^-6 M``, ``25 degrees Celsius``)."""
    text = _plain(gold)
    nums = parse_numbers(text)
    if not nums or nums[0].start > _LEAD.match(text).end() or _LOCANT.match(text, nums[0].end):
        return None
    spans = _spans(nums)
    rest = "".join(" " if i in spans else ch for i, ch in enumerate(text))
    return nums if len(re.findall(r"[A-Za-z]+", rest)) <= MAX_UNIT_WORDS else None


def _spans(nums: Sequence[Number]) -> set[int]:
    return {i for n in nums for i in range(n.start, n.end)}


def numbers_match(final: str, gold: Sequence[Number], rel_tol: float = REL_TOL) -> bool:
    """The answer line's numbers match the gold's: the first with the first, then every further gold number,
    in order, by a later answer number (further answer numbers, e.g. a restated unit conversion, are allowed)."""
    got = parse_numbers(final)
    if not got or not gold or not _close(got[0], gold[0], rel_tol):
        return False
    j = 1
    for g in gold[1:]:
        while j < len(got) and not _close(got[j], g, rel_tol):
            j += 1
        if j == len(got):
            return False
        j += 1
    return True


def normalised_match(final: str, gold: str) -> bool:
    """The normalised gold (case, punctuation, articles, whitespace) equals or is contained in the answer."""
    ng, nf = _norm(gold), _norm(final)
    return bool(ng) and (nf == ng or f" {ng} " in f" {nf} ")


def open_ended_correct(response: str, gold: str, rel_tol: float = REL_TOL) -> bool:
    """Rule-based open-ended correctness (module docstring): numbers for a numeric gold, else normalised match."""
    final = extract_final(response)
    if final is None:
        return False
    nums = numeric_gold(gold)
    return numbers_match(final, nums, rel_tol) if nums is not None else normalised_match(final, gold)


def extract_code(response: str) -> str:
    """The program in a reply: the last ```python block, else the whole reply."""
    blocks = _CODE_BLOCK.findall(response)
    return blocks[-1] if blocks else response

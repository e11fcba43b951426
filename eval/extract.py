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

import re
import string
from collections.abc import Sequence

from phr.core.numbers import Number, parse_numbers, plain, same_quantity  # the one number parser (also leakage)

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

_LOCANT = re.compile(r"[-,]\d*-?[A-Za-z]")  # "4-methyl", "2,3-dimethyl": a chemical name, not a number
#: A numeric gold has at most this many words besides its numbers (its units).
MAX_UNIT_WORDS = 3
_LEAD = re.compile(r"^(?:~|≈|about|approximately|approx\.?|roughly|\$|\s)*", re.IGNORECASE)


def numeric_gold(gold: str) -> list[Number] | None:
    """The numbers of a numeric gold answer, else None (free text). Numeric: it starts with a number (after
    ``~`` / "about"), that number is not the locant of a name (``4-methyl...``), and at most ``MAX_UNIT_WORDS``
    words besides the numbers remain (units: ``9.8 m/s^2``, ``4.3 x 10^-6 M``, ``25 degrees Celsius``)."""
    text = plain(gold)
    nums = parse_numbers(text)
    lead = _LEAD.match(text)  # always matches (possibly empty)
    lead_end = lead.end() if lead else 0
    if not nums or nums[0].start > lead_end or _LOCANT.match(text, nums[0].end):
        return None
    spans = _spans(nums)
    rest = "".join(" " if i in spans else ch for i, ch in enumerate(text))
    return nums if len(re.findall(r"[A-Za-z]+", rest)) <= MAX_UNIT_WORDS else None


def _spans(nums: Sequence[Number]) -> set[int]:
    return {i for n in nums for i in range(n.start, n.end)}


def numbers_match(final: str, gold: Sequence[Number], rel_tol: float = REL_TOL) -> bool:
    """The answer line's numbers match the gold's: the first with the first, then every further gold number,
    in order, by a later answer number; and the answer names no other value: every answer number is one of the
    gold's quantities (``7 (i.e. 7.0)``, ``7 m = 700 cm`` restate it), so a hedge (``7 or 8``, ``between 7 and
    9``) is incorrect."""
    got = parse_numbers(final)
    if not got or not gold or not same_quantity(got[0], gold[0], rel_tol):
        return False
    j = 1
    for g in gold[1:]:
        while j < len(got) and not same_quantity(got[j], g, rel_tol):
            j += 1
        if j == len(got):
            return False
        j += 1
    return all(any(same_quantity(x, g, rel_tol) for g in gold) for x in got)


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

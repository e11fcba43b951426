"""Answer extraction and per-response correctness for PHRBench tasks.

Multiple choice (candidates numbered 1..k in the prompt): the last explicit final-answer line wins
("Answer: 3", "Final answer: (3)", "The answer is option 3"); otherwise a lone "(3)" / "3" on the last
non-empty line; otherwise the option text quoted in the final-answer line or, failing that, the only option
text that appears in the response's last paragraph. Letters A-D are accepted as 1-4 in answer lines.
Open-ended (GPQA open-ended, numeric ChemBench): the final-answer line's text is compared with the gold answer
after normalisation (case, punctuation, articles, whitespace); numbers compare with a relative tolerance of 1%
(our criterion: the paper grades open-ended GPQA by reference match; documented in docs/metrics.md).
Code: the last ```python block (or the whole reply if it has none) is the program; correctness comes from the
sandbox (phr.eval.sandbox.check_solution).
"""

from __future__ import annotations

import math
import re
import string

_ANSWER_LINE = re.compile(
    r"(?:final\s+answer|answer|correct\s+(?:answer|option|candidate)|the\s+answer\s+is|i\s+choose|option)"
    r"\s*(?:is|:|=|-)?\s*(?:option|candidate)?\s*[:\-]?\s*(.+)$",
    re.IGNORECASE,
)
_NUM_TOKEN = re.compile(r"^\(?\s*([1-9][0-9]?|[A-Za-z])\s*\)?[.)]?(?:\s|$)")
_CODE_BLOCK = re.compile(r"```(?:python|py|Python)?[ \t]*\n(.*?)```", re.DOTALL)
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


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


def open_ended_correct(response: str, gold: str, rel_tol: float = 0.01) -> bool:
    final = extract_final(response)
    if final is None:
        return False
    gnums, fnums = _NUMBER.findall(gold), _NUMBER.findall(final)
    if gnums and fnums and _NUMBER.match(gold.strip()):  # a numeric gold ("9.8 m/s^2"): its leading value
        return math.isclose(float(fnums[0]), float(gnums[0]), rel_tol=rel_tol, abs_tol=1e-12)
    ng, nf = _norm(gold), _norm(final)
    return bool(ng) and (nf == ng or f" {ng} " in f" {nf} ")


def extract_code(response: str) -> str:
    """The program in a reply: the last ```python block, else the whole reply."""
    blocks = _CODE_BLOCK.findall(response)
    return blocks[-1] if blocks else response

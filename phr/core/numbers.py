"""The one number parser: numbers in text as the leakage check (phr.validation.checks) and the open-ended
scorer (phr.eval.extract) read them, and the comparison helpers both use.

``parse_numbers("-3, 3/4 and 25% of 4.3 × 10⁻⁶ M")`` gives -3, 0.75, 0.25 (a percentage) and 4.3e-6, each a
``Number`` with its span in ``plain(text)`` and the unit written after it (``M``). Signs count (``-3`` is -3;
a hyphen after a letter, digit or bracket is no sign: ``4-methyl``, ``2-3``), fractions are divided
(``3/4``, ``\\frac{3}{4}``), percentages are fractions flagged ``percent`` (``25%`` = 0.25), thousands
separators, ``a × 10^b`` / ``a x 10^-b`` / ``a*10**b`` / ``a \\times 10^{b}``, ``1e-4``, a bare ``10^{-8}`` /
``10⁻⁸``; digits inside words (``CO2``, ``H2O``) and unit exponents (``m/s^2``, ``m/s²``) are no numbers.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["Number", "parse_numbers", "plain", "close", "same_quantity", "unit_factor"]

_SUPER = "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺"
_SUPER_RUN = re.compile(f"[{_SUPER}]+")
_FRAC_TEX = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")


def _exp(name: str) -> str:
    return r"\s*(?:\^|\*\*)\s*\{?\s*(?P<" + name + r">[-+]?\d+)\s*\}?"  # ^-8, ^{-8}, **-8


_NUM = re.compile(
    r"(?=[-+.\d])"  # every number starts so: lets the regex engine skip to such characters (about 1.4x faster)
    r"(?<![\w^.])(?P<sign>(?<![\w)\]^.])[-+])?"  # a sign, never the hyphen of a word or a range ("4-methyl", "2-3")
    r"(?:10" + _exp("pow") + r"|"  # 10^-8, 10^{-8}, 10**-8
    r"(?P<mant>\d{1,3}(?:,\d{3})+(?![\d,])(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"  # 1,234.5  12  .5
    r"(?:[eE](?P<e>[-+]?\d+)\b|\s*[x×*·]\s*10" + _exp("x") + r")?"  # 1e-4, 4.3 × 10^-6
    r"(?:\s*/\s*(?P<den>\d+(?:\.\d+)?)(?![\d.]))?)"  # 3/4
    r"(?P<pct>\s*%)?"
)
_UNIT = re.compile(r"\s*(?P<u>[µμ]?[A-Za-z]{1,4})(?![A-Za-z/^·*])")  # not a compound unit (m/s, m^2)


@dataclass(frozen=True)
class Number:
    """A number read from text: its value (a percentage as a fraction: ``25%`` is 0.25), its span in
    ``plain(text)``, the matched text and the unit word right after it ("" when none)."""

    value: float
    percent: bool = False
    start: int = 0
    end: int = 0
    text: str = ""
    unit: str = ""


def plain(text: str) -> str:
    """Unicode and LaTeX number notation as plain text (``−`` -> ``-``, ``10⁻⁵`` -> ``10^-5``, ``\\times`` ->
    ``×``, ``\\frac{a}{b}`` -> ``a/b``, ``$`` and ``\\,`` dropped)."""
    if text.isascii() and "\\" not in text and "$" not in text:
        return text  # nothing to rewrite (the common case: ASCII without LaTeX)
    text = text.replace("\u2212", "-").replace("\\times", "×").replace("\\cdot", "×").replace("\\%", "%")
    text = _FRAC_TEX.sub(r"\1/\2", text)
    for tok in ("$", "\\left", "\\right", "\\,", "\\!", "\\ "):
        text = text.replace(tok, "" if tok != "\\ " else " ")
    return _SUPER_RUN.sub(lambda m: "^" + m.group().translate(str.maketrans(_SUPER, "0123456789-+")), text)


def parse_numbers(text: str) -> list[Number]:
    """Every number in ``text``, in order (module docstring)."""
    out = []
    text = plain(text)
    for m in _NUM.finditer(text):
        try:
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
        except OverflowError:
            continue
        if m.group("sign") == "-":
            value = -value
        pct = m.group("pct") is not None
        u = _UNIT.match(text, m.end()) if not pct else None
        unit = u["u"] if u else ""
        out.append(Number(value / 100.0 if pct else value, pct, m.start(), m.end(), m.group(0).strip(), unit))
    return out


def close(a: Number, b: Number, rel_tol: float, abs_tol: float = 0.0, *, signed: bool = True) -> bool:
    """Equal within the tolerances; when exactly one side is a percentage, ``25%`` also equals ``25``;
    ``signed=False`` compares absolute values."""
    pairs = [(a.value, b.value)]
    if a.percent != b.percent:
        pairs.append((a.value * 100 if a.percent else a.value, b.value * 100 if b.percent else b.value))
    if not signed:
        pairs = [(abs(x), abs(y)) for x, y in pairs]
    return any(math.isclose(x, y, rel_tol=rel_tol, abs_tol=abs_tol) for x, y in pairs)


#: units a quantity may be restated in (SI prefixes on these bases; "min" and "h" for time)
_BASES = ("m", "g", "s", "L", "l", "J", "eV", "W", "Pa", "N", "mol", "M", "V", "A", "Hz", "C", "F", "T", "Wb")
_PREFIX = {"p": 1e-12, "n": 1e-9, "µ": 1e-6, "μ": 1e-6, "u": 1e-6, "m": 1e-3, "c": 1e-2, "d": 1e-1, "k": 1e3}
_PREFIX |= {"M": 1e6, "G": 1e9, "T": 1e12}
_SPECIAL = {"min": ("s", 60.0), "h": ("s", 3600.0), "hr": ("s", 3600.0), "ms": ("s", 1e-3)}


def unit_factor(unit: str) -> tuple[str, float] | None:
    """(base unit, factor to it) of a unit word (``cm`` -> ("m", 0.01), ``mmol`` -> ("mol", 0.001)), else None."""
    if unit in _SPECIAL:
        return _SPECIAL[unit]
    if unit in _BASES:
        return unit, 1.0
    if len(unit) > 1 and unit[0] in _PREFIX and unit[1:] in _BASES:
        return unit[1:], _PREFIX[unit[0]]
    return None


def same_quantity(a: Number, b: Number, rel_tol: float) -> bool:
    """The same value (``close``), or the same quantity in two known units (``7 m`` and ``700 cm``)."""
    if close(a, b, rel_tol):
        return True
    fa, fb = unit_factor(a.unit), unit_factor(b.unit)
    if fa is None or fb is None or fa[0] != fb[0] or a.percent or b.percent:
        return False
    return math.isclose(a.value * fa[1], b.value * fb[1], rel_tol=rel_tol)

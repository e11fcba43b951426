"""Short forms of long text for messages; submitter text made inert in Markdown."""

from __future__ import annotations

import re
import unicodedata


def clip(text: str, limit: int = 200) -> str:
    """``text`` if it fits in ``limit`` characters; else cut at the last word boundary before it, with an
    ellipsis and the full length: ``"value has 5000… (131 characters in all)"``."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    words = head.rsplit(None, 1)
    cut = head if text[limit].isspace() or len(words) < 2 else words[0]
    return f"{cut.rstrip(' ,;:')}… ({len(text)} characters in all)"


def one_line(text: object) -> str:
    """``text`` on one line: line breaks (any Unicode line separator) and other control characters become spaces."""
    return "".join(" " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch for ch in str(text))


#: the characters ``md_text`` escapes with a backslash: ``\\`` itself, the table's ``|``, the link and image syntax
#: ``[ ] ( ) !`` (no link, image or reference is ever made of submitter text) and the backtick (no code span that
#: reaches into the text around it)
_MD_ESCAPED = "\\|[]()!`"


def md_text(text: object) -> str:
    """``text`` as inert Markdown inline text, safe in a table cell and a paragraph: one line; ``\\ | [ ] ( ) !``
    and the backtick escaped with a backslash (no table cell split, no link, image or code span); ``<`` and ``>``
    as entities (no HTML, no autolink)."""
    out = "".join(f"\\{ch}" if ch in _MD_ESCAPED else ch for ch in one_line(text))
    return out.replace("<", "&lt;").replace(">", "&gt;")


def md_code(text: object) -> str:
    """``text`` as a Markdown code span on one line (its delimiter longer than any run of backticks inside)."""
    text = one_line(text)
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"

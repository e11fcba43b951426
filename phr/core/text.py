"""Short forms of long text for messages."""

from __future__ import annotations


def clip(text: str, limit: int = 200) -> str:
    """``text`` if it fits in ``limit`` characters; else cut at the last word boundary before it, with an
    ellipsis and the full length: ``"value has 5000… (131 characters in all)"``."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    words = head.rsplit(None, 1)
    cut = head if text[limit].isspace() or len(words) < 2 else words[0]
    return f"{cut.rstrip(' ,;:')}… ({len(text)} characters in all)"

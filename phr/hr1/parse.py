"""Reading the paraphraser's and the QA model's replies (Listings B.1 and B.4).

Nothing is silently dropped: a reply without a usable ``<paraphrase>`` gives ``None`` with the reason, and an
``<answer>`` reply records how the answer was taken (``tag``, ``unclosed_tag``, ``whole_reply``, ``empty``).
"""

from __future__ import annotations

import re

_PARA = re.compile(r"<paraphrase>(.*?)</paraphrase>", re.S | re.I)
_PARA_OPEN = re.compile(r"<paraphrase>", re.I)
_ANS = re.compile(r"<answer>(.*?)</answer>", re.S | re.I)
_ANS_OPEN = re.compile(r"<answer>(.*)", re.S | re.I)
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)


def _clean(text: str) -> str:
    return " ".join(text.split())


def parse_paraphrase(reply: str) -> tuple[str | None, str | None]:
    """(paraphrase, None) from the last complete ``<paraphrase>...</paraphrase>`` of the reply, or (None, reason):
    ``no <paraphrase> tag``, ``unclosed <paraphrase> tag``, ``empty <paraphrase> tag``."""
    found = _PARA.findall(reply or "")
    if found:
        text = _clean(found[-1])
        return (text, None) if text else (None, "empty <paraphrase> tag")
    if _PARA_OPEN.search(reply or ""):
        return None, "unclosed <paraphrase> tag (reply cut off?)"
    return None, "no <paraphrase> tag"


def parse_answer(reply: str) -> tuple[str, str]:
    """(answer, how): the last ``<answer>...</answer>``; else the text after an unclosed ``<answer>``; else the
    whole reply without any ``<think>`` block (``whole_reply``); ``empty`` when nothing is left."""
    reply = reply or ""
    found = _ANS.findall(reply)
    if found:
        text = _clean(found[-1])
        return (text, "tag") if text else ("", "empty")
    m = _ANS_OPEN.search(reply)
    if m:
        text = _clean(m.group(1))
        return (text, "unclosed_tag") if text else ("", "empty")
    text = _clean(_THINK.sub(" ", reply))
    return (text, "whole_reply") if text else ("", "empty")

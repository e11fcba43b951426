"""A deterministic stand-in for the Hallucination-R1 models behind the local OpenAI-protocol server (tests only).

Paraphraser (Listing B.1), sample k of a question q:
  k = 0: "Tell me: q"                 consistent; the QA model answers it like q
  k = 1: "q (asked differently)"      consistent; the QA model gets it wrong ("Nobody"); its first judge reply
                                       is not JSON (fixed by the re-ask)
  k = 2: "q and also who else?"       inconsistent (adds a question)
  k = 3: no <paraphrase> tag          recorded as a parse error
  k >= 4: "Variant k: q"              consistent; answered like q
QA model (Listing B.4): the gold answer of the question text it contains (``answers``), except for the texts
in ``wrong`` and paraphrases marked "(asked differently)"; B.3 judge: 0 equal, 1 one contains the other, 2 else.
"""

import json
import re


def paraphrase_reply(q: str, k: int) -> str:
    if k == 0:
        return f"<think>Move the request to the front.</think>\n<paraphrase>Tell me: {q}</paraphrase>"
    if k == 1:
        return f"<think>Mark it.</think><paraphrase>{q} (asked differently)</paraphrase>"
    if k == 2:
        return f"<think>Add one.</think><paraphrase>{q} and also who else?</paraphrase>"
    if k == 3:
        return "I would rather not paraphrase this question."
    return f"<paraphrase>Variant {k}: {q}</paraphrase>"


def hr1_responder(answers: dict[str, str], wrong: frozenset[str] = frozenset()):
    """``answers``: {original question text: gold answer the QA model gives}; ``wrong``: original questions it
    gets wrong (answers "Nobody")."""

    def respond(model, messages, k):
        first = messages[0][1]
        last = messages[-1][1]
        if first.startswith("Your task is to paraphrase"):
            q = re.search(r"Original question: (.*)$", first, re.S).group(1).strip()
            return paraphrase_reply(q, k)
        if first.startswith("Please help me determine"):
            para = re.search(r"paraphrased question: (.*?)\n", first).group(1)
            if "(asked differently)" in para and len(messages) == 1:
                return "The paraphrase looks fine to me."
            result = 0 if "who else" in para else 1
            return json.dumps({"think": f"checked: {para[:30]}", "result": result})
        if first.startswith("Your task is to evaluate whether"):
            ref = re.search(r"Reference Answer: (.*?)\n", first).group(1).strip().lower()
            resp = re.search(r"Model Response: (.*?)\n", first).group(1).strip().lower()
            score = 0 if ref == resp else 1 if (ref in resp or resp in ref) and resp else 2
            return json.dumps({"think": "compared", "result": score})
        if first.startswith("You are a strict question"):
            if "(asked differently)" in last:
                return "<answer>Nobody</answer>"
            for q, a in answers.items():
                if q in last:
                    return "<answer>Nobody</answer>" if q in wrong and last == q else f"<answer>{a}</answer>"
            return "<answer>I do not know</answer>"
        raise AssertionError(f"unexpected prompt: {first[:80]!r}")

    return respond

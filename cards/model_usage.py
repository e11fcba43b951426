"""The "Usage" section of a trained model's card: a runnable transformers snippet.

- A Hallucination-R1 paraphraser (GRPO): the Listing B.1 prompt as the single user turn, the Listing A.1
  sampling (do_sample, temperature 0.7, top_p 0.95, top_k 0 = off, 1024 new tokens), and the paraphrase read
  from the last ``<paraphrase>...</paraphrase>`` (none: a parse failure, as in ``phr.hr1.parse``).
- A QA model (SFT): Listing B.4 as the system turn, the (paraphrased) question as the user turn, greedy
  decoding (App. A.3) and the answer read from the last ``<answer>...</answer>``.

The snippet needs only ``transformers`` (the prompt text is written into it); ``model`` is the Hub repo id when
known, else the checkpoint folder.
"""

from __future__ import annotations

from phr.hr1.pipeline import paraphrase_prompt, qa_messages
from phr.hr1.settings import Decoding, QADecoding

EXAMPLE_QUESTION = "Where did roger marquis die?"
_WHERE = '  # once pushed: the repo id, "ORG/NAME" (phr-publish push DIR --repo ORG/NAME --repo-type model)'


def _literal(text: str) -> str:
    """A Python string literal of ``text``: triple-quoted when that is exact, else ``repr``."""
    if '"""' not in text and "\\" not in text and not text.endswith('"'):
        return '"""' + text + '"""'
    return repr(text)


def _generate(kwargs: str) -> str:
    return (
        'inputs = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)\n'
        f"out = model.generate(**inputs, {kwargs})\n"
        'reply = tok.decode(out[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)\n'
    )


def paraphraser_snippet(model: str) -> str:
    d = Decoding()
    template = paraphrase_prompt("{question}")
    return (
        "import re\n\n"
        "from transformers import AutoModelForCausalLM, AutoTokenizer\n\n"
        f"MODEL = {model!r}{_WHERE}\n"
        f"PROMPT = {_literal(template)}  # Hallucination-R1 Listing B.1\n\n"
        "tok = AutoTokenizer.from_pretrained(MODEL)\n"
        "model = AutoModelForCausalLM.from_pretrained(MODEL)\n"
        f"question = {EXAMPLE_QUESTION!r}\n"
        'messages = [{"role": "user", "content": PROMPT.replace("{question}", question)}]\n'
        + _generate(
            f"do_sample=True, temperature={d.temperature}, top_p={d.top_p}, top_k={d.top_k}, "
            f"max_new_tokens={d.max_tokens}"
        )
        + 'found = re.findall(r"<paraphrase>(.*?)</paraphrase>", reply, re.S)\n'
        "paraphrase = found[-1].strip() if found else None  # None: no complete <paraphrase> tag\n"
        "print(paraphrase)\n"
    )


def qa_snippet(model: str) -> str:
    system = qa_messages("x")[0].content
    return (
        "import re\n\n"
        "from transformers import AutoModelForCausalLM, AutoTokenizer\n\n"
        f"MODEL = {model!r}{_WHERE}\n"
        f"SYSTEM = {_literal(system)}  # Hallucination-R1 Listing B.4\n\n"
        "tok = AutoTokenizer.from_pretrained(MODEL)\n"
        "model = AutoModelForCausalLM.from_pretrained(MODEL)\n"
        f"question = {EXAMPLE_QUESTION!r}  # an original or paraphrased question\n"
        'messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]\n'
        + _generate(f"do_sample=False, max_new_tokens={QADecoding().max_tokens}")
        + 'found = re.findall(r"<answer>(.*?)</answer>", reply, re.S)\n'
        "print(found[-1].strip() if found else reply.strip())\n"
    )


def usage_section(method: str, model: str, *, adapter: bool = False) -> list[str]:
    """Markdown lines of the card's Usage section for a ``grpo`` (paraphraser) or ``sft`` (QA) checkpoint;
    ``adapter``: the folder holds a LoRA adapter (loaded with peft installed)."""
    if method == "grpo":
        lead = (
            "A paraphraser: give it the Listing B.1 prompt with a factual question as the user turn; it thinks in "
            "`<think>` and writes the paraphrase in `<paraphrase>` tags. Decoding as in training (Listing A.1):"
        )
        code = paraphraser_snippet(model)
    else:
        lead = (
            "A QA model: Listing B.4 as the system turn, the question as the user turn, greedy decoding (App. A.3); "
            "the answer is inside `<answer>` tags:"
        )
        code = qa_snippet(model)
    lines = ["## Usage", "", lead, "", "```python", *code.rstrip("\n").split("\n"), "```"]
    if adapter:
        lines += [
            "",
            "This folder holds a LoRA adapter: with `peft` installed, `from_pretrained` loads it onto its base.",
        ]
    return lines

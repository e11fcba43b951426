"""Scripted models for the harness tests, through each harness's own extension API: an lm-eval ``LM`` subclass
and inspect's ``mockllm`` provider with a callable. Both answer an instance's prompt with ``answer(prompt)``."""

from __future__ import annotations

from collections.abc import Callable

from lm_eval.api.model import LM

#: the scripted model's chat template: one user turn, then the assistant's
TEMPLATE = "<|user|>\n{}\n<|assistant|>\n"


class ScriptedLM(LM):
    """lm-eval's model interface answering each ``generate_until`` request with ``answer(prompt)`` (the user turn of
    the chat-templated context, or the context itself without ``--apply_chat_template``); records the contexts and
    generation kwargs it was asked with."""

    def __init__(self, answer: Callable[[str], str]):
        super().__init__()
        self.answer = answer
        self.asked: list[tuple[str, dict]] = []

    def generate_until(self, requests, disable_tqdm: bool = False):
        out = []
        head, tail = TEMPLATE.split("{}")
        for r in requests:
            context, gen_kwargs = r.arguments
            self.asked.append((context, gen_kwargs))
            out.append(self.answer(context.removeprefix(head).removesuffix(tail)))
        return out

    def apply_chat_template(self, chat_history, add_generation_prompt=True) -> str:
        (turn,) = chat_history
        return TEMPLATE.format(turn["content"])

    @property
    def tokenizer_name(self) -> str:
        return "scripted"

    def chat_template(self, chat_template=False) -> str:
        return TEMPLATE

    def loglikelihood(self, requests, disable_tqdm: bool = False):  # pragma: no cover - PHRBench generates
        raise NotImplementedError

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):  # pragma: no cover
        raise NotImplementedError


def inspect_model(answer: Callable[[str], str]):
    """inspect's ``mockllm/model`` answering the last user message with ``answer(text)`` (with a usage of its
    own: mockllm would count tokens with tiktoken, which downloads its encoding)."""
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    def reply(messages, tools, tool_choice, config) -> ModelOutput:
        out = ModelOutput.from_content("mockllm/model", answer(messages[-1].text))
        words = len(messages[-1].text.split()), len(out.completion.split())
        out.usage = ModelUsage(input_tokens=words[0], output_tokens=words[1], total_tokens=sum(words))
        return out

    return get_model("mockllm/model", custom_outputs=reply)

"""The CPU smoke model: a tiny random Llama with a tokenizer trained in-process on the corpus texts.

``build_tiny_model(texts, dest)`` writes a normal Hugging Face folder (``config.json``, weights, tokenizer with a
ChatML-style chat template), so TRL's chat formatting, ``AutoModelForCausalLM.from_pretrained`` and the ``hf:``
provider all load it. Nothing is downloaded: the tokenizer is a byte-level BPE trained with ``tokenizers`` on the
given texts, the weights are random (seeded). It learns nothing useful; it exists so the whole training path runs
in seconds on a laptop CPU.

``format_warmup_steps`` > 0 (the GRPO smoke recipes) first trains it for that many full-batch steps on
Hallucination-R1-mini's (Listing B.1 prompt -> ``<paraphrase>curated paraphrase</paraphrase>``) pairs
(``phr.builders.hr1_mini.format_pairs``, loss on the completion only), so the smoke policy writes the output format
and the GRPO rewards differ within a group.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from annotated_types import Ge, Gt, Interval

from phr.core.fs import atomic_dir
from phr.core.progress import progress_bar
from phr.core.threads import use_cpu_threads

if TYPE_CHECKING:  # pragma: no cover - transformers is imported where the tiny model is built
    from transformers import PreTrainedTokenizerFast

BOS, EOS, PAD = "<|begin_of_text|>", "<|im_end|>", "<|pad|>"
SPECIAL = (PAD, BOS, EOS, "<|im_start|>")
# ChatML turns; the assistant turn is opened by add_generation_prompt and closed by <|im_end|> (the EOS token).
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass(frozen=True)
class TinySettings:
    """Size of the smoke model (a recipe's ``model.tiny`` section)."""

    vocab_size: Annotated[int, Ge(1)] = 512  # BPE target; the trained vocabulary may be smaller on a small corpus
    hidden_size: Annotated[int, Ge(1)] = 32
    intermediate_size: Annotated[int, Ge(1)] = 64
    num_hidden_layers: Annotated[int, Ge(1)] = 2
    num_attention_heads: Annotated[int, Ge(1)] = 4
    num_key_value_heads: Annotated[int, Ge(1)] = 2
    max_position_embeddings: Annotated[int, Ge(1)] = 2048
    seed: Annotated[int, Interval(ge=0, lt=2**32)] = 0  # numpy's seed range (transformers.set_seed)
    format_warmup_steps: Annotated[int, Ge(0)] = 0  # next-token steps on H-R1-mini's paraphrase-format pairs (0: none)
    format_warmup_lr: Annotated[float, Gt(0)] = 1.0e-2

    def as_dict(self) -> dict:
        return asdict(self)

    def llama_shape(self) -> dict[str, Any]:
        """The model's shape: the settings ``LlamaConfig`` takes under the same names (all but the vocabulary, which
        is the trained tokenizer's)."""
        return {k: getattr(self, k) for k in LLAMA_SHAPE}


#: the TinySettings fields that are ``LlamaConfig`` keywords
LLAMA_SHAPE = (
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "max_position_embeddings",
)


FORMAT_TAGS = ("<paraphrase>", "</paraphrase>", "<think>", "</think>")  # one token each with the format warm-up


def train_tokenizer(texts: Iterable[str], vocab_size: int, tags: Iterable[str] = ()) -> PreTrainedTokenizerFast:
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on ``texts`` with the chat template set; each of
    ``tags`` is added as one (non-special) token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS, pad_token=PAD)
    fast.chat_template = CHAT_TEMPLATE
    if tags:
        fast.add_tokens(list(tags))
    return fast


def build_tiny_model(texts: Iterable[str], dest: str | Path, settings: TinySettings | None = None) -> Path:
    """Write the tiny random Llama and its tokenizer to ``dest`` (atomically). Returns ``dest``."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    s = settings or TinySettings()
    pairs = _warmup_pairs() if s.format_warmup_steps else []
    tok = train_tokenizer([*texts, *(t for pair in pairs for t in pair)], s.vocab_size, FORMAT_TAGS if pairs else ())
    torch.manual_seed(s.seed)
    special = {"bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id}
    config = LlamaConfig(vocab_size=len(tok), **s.llama_shape(), **special, tie_word_embeddings=True)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(**special)
    use_cpu_threads(model.num_parameters())  # the warm-up trains on the CPU: one thread for a tiny model
    if pairs:
        format_warmup(model, tok, pairs, s.format_warmup_steps, s.format_warmup_lr)
    with atomic_dir(dest) as tmp:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
    return Path(dest)


def _warmup_pairs() -> list[tuple[str, str]]:
    from phr.builders.hr1_mini import format_pairs

    return format_pairs()


WARMUP_CONTEXT = 64  # prompt tokens kept before each completion (the end of the prompt and the assistant header)


def format_warmup(
    model: Any, tok: Any, pairs: list[tuple[str, str]], steps: int, lr: float
) -> list[float]:  # a transformers model and its tokenizer
    """Full-batch next-token training on (user prompt, assistant completion) pairs, loss on the completion and its
    end-of-turn token only, each prompt cut to its last ``WARMUP_CONTEXT`` tokens (the format follows the
    assistant header; the shared instructions before it would only cost time); returns the loss per step."""
    import torch

    rows = []
    for prompt, completion in pairs:
        head = tok.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False
        )
        p_ids = tok(head, add_special_tokens=False)["input_ids"][-WARMUP_CONTEXT:]
        c_ids = tok(completion + EOS, add_special_tokens=False)["input_ids"]
        rows.append((p_ids + c_ids, [-100] * len(p_ids) + c_ids))
    width = max(len(ids) for ids, _ in rows)
    ids = torch.tensor([r + [tok.pad_token_id] * (width - len(r)) for r, _ in rows])
    labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in rows])
    mask = (torch.arange(width)[None, :] < torch.tensor([len(r) for r, _ in rows])[:, None]).long()
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    losses = []
    with progress_bar() as bar:  # about a second a step on a CPU: a [progress] line every 10 s in a log
        task = bar.add_task(f"format warm-up of the tiny model ({len(rows)} pairs)", total=steps)
        for _ in range(steps):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
            bar.advance(task)
    model.eval()
    return losses

"""The CPU smoke model: a tiny random Llama with a tokenizer trained in-process on the corpus texts.

``build_tiny_model(texts, dest)`` writes a normal Hugging Face folder (``config.json``, weights, tokenizer with a
ChatML-style chat template), so TRL's chat formatting, ``AutoModelForCausalLM.from_pretrained`` and the ``hf:``
provider all load it. Nothing is downloaded: the tokenizer is a byte-level BPE trained with ``tokenizers`` on the
given texts, the weights are random (seeded). It learns nothing useful; it exists so the whole training path runs
in seconds on a laptop CPU.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from phr.core.fs import atomic_dir

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

    vocab_size: int = 512  # BPE target; the trained vocabulary may be smaller on a small corpus
    hidden_size: int = 32
    intermediate_size: int = 64
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 2048
    seed: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def train_tokenizer(texts: Iterable[str], vocab_size: int):
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on ``texts`` with the chat template set."""
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
    return fast


def build_tiny_model(texts: Iterable[str], dest: str | Path, settings: TinySettings | None = None) -> Path:
    """Write the tiny random Llama and its tokenizer to ``dest`` (atomically). Returns ``dest``."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    s = settings or TinySettings()
    tok = train_tokenizer(texts, s.vocab_size)
    torch.manual_seed(s.seed)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=s.hidden_size,
        intermediate_size=s.intermediate_size,
        num_hidden_layers=s.num_hidden_layers,
        num_attention_heads=s.num_attention_heads,
        num_key_value_heads=s.num_key_value_heads,
        max_position_embeddings=s.max_position_embeddings,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id
    )
    with atomic_dir(dest) as tmp:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
    return Path(dest)

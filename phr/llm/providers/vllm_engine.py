"""``vllm:<id or path>``: the vLLM offline engine in this process (extra ``vllm``, GPU only)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from phr.core.errors import ModelNotInstalledError
from phr.llm.providers.base import BatchItem, Provider, RawCompletion

if TYPE_CHECKING:  # pragma: no cover - the extra is GPU only (without it these are Any)
    from vllm import LLM, SamplingParams

INSTALL_HINT = "vllm:<model> needs vLLM (GPU only): pip install -c constraints.txt -e '.[vllm]' in the checkout"


def _import_vllm() -> ModuleType:
    try:
        import vllm
    except ImportError as e:
        raise ModelNotInstalledError(f"{INSTALL_HINT} ({e})") from None
    return vllm


class VLLMProvider(Provider):
    """One ``vllm.LLM`` engine, built on first use; ``engine_kwargs`` go to ``vllm.LLM`` (e.g.
    ``tensor_parallel_size``, ``gpu_memory_utilization``, ``max_model_len``, ``dtype``, ``revision``)."""

    kind = "vllm"
    in_process = True

    def __init__(self, model: str, batch_size: int = 256, **engine_kwargs: Any) -> None:
        _import_vllm()  # fail at construction, before any work starts
        super().__init__(model, engine_kwargs.get("revision"))
        self.batch_size = batch_size
        self.engine_kwargs = engine_kwargs
        self._llm: LLM | None = None
        self._lock = threading.Lock()

    @property
    def cache_model_id(self) -> str:
        return f"{self.model}@{self.revision}" if self.revision else self.model

    def _engine(self) -> LLM:
        with self._lock:
            if self._llm is None:
                vllm = _import_vllm()
                self._llm = vllm.LLM(model=self.model, **self.engine_kwargs)
            return self._llm

    @staticmethod
    def _sampling_params(item: BatchItem) -> SamplingParams:
        from vllm import SamplingParams

        p = item.params
        kw: dict = {"n": 1, "temperature": p.temperature or 0.0}
        if p.top_p is not None:
            kw["top_p"] = p.top_p
        if p.top_k is not None:
            kw["top_k"] = p.top_k
        if p.max_tokens is not None:
            kw["max_tokens"] = p.max_tokens
        if p.seed is not None:
            kw["seed"] = p.seed + item.index
        if p.stop:
            kw["stop"] = list(p.stop)
        return SamplingParams(**kw)

    def complete_batch(
        self, items: list[BatchItem], progress: Callable[[float], None] | None = None
    ) -> list[RawCompletion]:
        llm = self._engine()
        conversations = [[{"role": m.role, "content": m.content} for m in it.messages] for it in items]
        outputs = llm.chat(conversations, [self._sampling_params(it) for it in items], use_tqdm=False)
        raws = []
        for out in outputs:
            o = out.outputs[0]
            raws.append(RawCompletion(o.text, o.finish_reason, len(out.prompt_token_ids or ()), len(o.token_ids)))
        return raws

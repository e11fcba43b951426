"""The license a fine-tuned checkpoint inherits from its base model (a small maintained table, with links).

A fine-tune is a derivative of its base model's weights, so the card carries the base model's license. The
table holds the models our recipes and tests use; for any other base the card says ``license: other`` with a
note to check the base model's license -- never a guessed ``apache-2.0``. Hub metadata: a license outside the
Hub's list (``qwen-research``) is written as ``license: other`` + ``license_name`` + ``license_link``, as the
base models' own cards do.
"""

from __future__ import annotations

from dataclasses import dataclass

HF = "https://huggingface.co"


@dataclass(frozen=True)
class License:
    id: str  # the Hub's identifier, or "other"
    name: str | None = None  # license_name for "other" (e.g. qwen-research)
    link: str | None = None  # the license text
    note: str | None = None  # shown on the card (unknown base models)

    def metadata(self) -> dict:
        """Keywords for ``huggingface_hub.ModelCardData``."""
        out: dict = {"license": self.id}
        if self.id == "other" and self.name:
            out["license_name"] = self.name
        if self.id == "other" and self.link:
            out["license_link"] = self.link
        return out

    def line(self) -> str:
        """One Markdown line for the card's License section."""
        label = self.name or self.id
        text = f"[{label}]({self.link})" if self.link else f"`{label}`"
        return text + (f". {self.note}" if self.note else "")


def _hf(repo: str, id: str, name: str | None = None) -> License:
    return License(id, name, f"{HF}/{repo}/blob/main/LICENSE")


# Checked against each model's own card and LICENSE file on the Hub (Qwen2.5-3B and -72B carry the Qwen
# Research / Qwen licenses; the other Qwen2.5 sizes, Qwen3 and SmolLM2 are Apache-2.0).
BASE_LICENSES: dict[str, License] = {
    "Qwen/Qwen2.5-3B-Instruct": _hf("Qwen/Qwen2.5-3B-Instruct", "other", "qwen-research"),
    "Qwen/Qwen2.5-3B": _hf("Qwen/Qwen2.5-3B", "other", "qwen-research"),
    "Qwen/Qwen2.5-1.5B-Instruct": _hf("Qwen/Qwen2.5-1.5B-Instruct", "apache-2.0"),
    "Qwen/Qwen2.5-1.5B": _hf("Qwen/Qwen2.5-1.5B", "apache-2.0"),
    "Qwen/Qwen2.5-7B-Instruct": _hf("Qwen/Qwen2.5-7B-Instruct", "apache-2.0"),
    "Qwen/Qwen3-8B": _hf("Qwen/Qwen3-8B", "apache-2.0"),
    "HuggingFaceTB/SmolLM2-135M-Instruct": _hf("HuggingFaceTB/SmolLM2-135M-Instruct", "apache-2.0"),
    # the CPU smoke model: random weights built by phr.training.tiny, under this toolkit's license
    "phr/tiny-random-llama": License("apache-2.0", note="Random weights built by `phr.training.tiny`."),
}


def base_license(base_model: str | None) -> License:
    """The license of ``base_model`` from :data:`BASE_LICENSES`, else ``other`` with a note."""
    if base_model is not None and base_model in BASE_LICENSES:
        return BASE_LICENSES[base_model]
    return License(
        "other",
        note=f"The base model `{base_model}` is not in phr.cards.model_license.BASE_LICENSES: this fine-tune "
        "inherits its license; check the base model's license before use.",
    )

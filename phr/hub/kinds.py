"""Artifact kinds: what the hub gate checks a folder's content with.

The hub knows no artifact. Each kind (PHRBench datasets, leaderboard results, model checkpoints; the
Hallucination-R1 corpora next) registers an ``ArtifactKind``: a name, its repo type, ``matches(folder, configs)``
and ``validate(folder) -> ValidationReport``. Kinds come from the ``phr.hub.kinds`` entry-point group of installed
packages (this toolkit declares its own in pyproject.toml) and from ``register_kind`` (a plugin or a test). A
folder no kind recognises is refused, with a message that says how to register one.

What a check may relax is an argument, never a registration: ``ArtifactKind.check(folder, allow_unreviewed=...)``
runs ``validate_unreviewed`` (when the kind has one) for content that awaits a manual review its build requires
(``push --allow-unreviewed``, ``validate``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import yaml

from phr.core.registry import Registry
from phr.core.report import Rejection, ValidationReport
from phr.hub.card import README, CardConfig
from phr.hub.errors import UnknownKindError

ENTRY_POINT_GROUP = "phr.hub.kinds"


@dataclass(frozen=True)
class ArtifactKind:
    """One kind of artifact the hub can publish."""

    name: str
    repo_type: str  # dataset | model
    matches: Callable[[Path, dict[str, CardConfig]], bool]  # (folder, card configs) -> is it one of these?
    validate: Callable[[Path], ValidationReport]
    #: the check when content awaiting a required manual review is allowed (None: the same as ``validate``)
    validate_unreviewed: Callable[[Path], ValidationReport] | None = None

    def check(self, folder: Path, *, allow_unreviewed: bool = False) -> ValidationReport:
        """``validate``, or ``validate_unreviewed`` with ``allow_unreviewed`` (the review policy of this check)."""
        relaxed = self.validate_unreviewed if allow_unreviewed else None
        return (relaxed or self.validate)(folder)


KINDS: Registry[ArtifactKind] = Registry("artifact kind")  # registered here; installed ones come by entry point


def register_kind(kind: ArtifactKind) -> None:
    """Add (or replace, by name) a kind; registered kinds are tried before the installed ones."""
    KINDS.add(kind.name, kind)


def installed_kinds() -> list[ArtifactKind]:
    """The kinds declared by installed packages (entry-point group ``phr.hub.kinds``), by name."""
    out = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        kind = ep.load()
        if not isinstance(kind, ArtifactKind):
            raise TypeError(f"entry point {ep.name} = {ep.value} is not a phr.hub.ArtifactKind")
        out.append(kind)
    return out


def unregister_kind(name: str) -> None:
    """Forget a kind added with ``register_kind`` (installed kinds stay)."""
    KINDS.remove(name)


def all_kinds() -> list[ArtifactKind]:
    """Registered kinds, then installed ones (a registered kind shadows an installed one of the same name)."""
    seen = dict(KINDS)
    for k in installed_kinds():
        seen.setdefault(k.name, k)
    return list(seen.values())


def kind_of(folder: Path, repo_type: str, configs: dict[str, CardConfig]) -> ArtifactKind:
    """The first kind of ``repo_type`` that recognises ``folder`` (``UnknownKindError`` when none does)."""
    candidates = [k for k in all_kinds() if k.repo_type == repo_type]
    for k in candidates:
        if k.matches(folder, configs):
            return k
    names = ", ".join(k.name for k in candidates) or "none"
    raise UnknownKindError(
        f"refusing to push {folder}: no artifact kind recognises this {repo_type} folder (known {repo_type} kinds: "
        f"{names}), so its content cannot be validated and nothing was uploaded. Build it with a phr-publish "
        f"builder, or register its kind: phr.hub.register_kind(ArtifactKind(name, {repo_type!r}, matches, "
        f"validate)), or declare one in the {ENTRY_POINT_GROUP!r} entry-point group of your package"
    )


# ---- the model kind: a checkpoint with a model card (generic Hub formats only) --------------------------------------


def model_card_rejections(folder: Path) -> ValidationReport:
    """The model card's metadata parses (model-index included) and every ``.eval_results/*.yaml`` parses."""
    from huggingface_hub import ModelCard

    report = ValidationReport()
    try:
        ModelCard.load(folder / README, ignore_metadata_errors=False).data.to_dict()
    except Exception as e:  # any parser complaint is a card failure
        report.extend([Rejection(README, "card", f"model card metadata does not parse: {e}")])
    for p in sorted((folder / ".eval_results").glob("*.yaml")):
        rel = p.relative_to(folder).as_posix()
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8"))
            if not isinstance(data, list):
                raise ValueError("expected a YAML list of results")
            try:
                from huggingface_hub import parse_eval_result_entries
            except ImportError:  # older huggingface_hub: check the documented keys by hand
                for item in data:
                    item["dataset"]["id"], item["value"]
            else:
                parse_eval_result_entries(data)
        except Exception as e:
            report.extend([Rejection(rel, "eval_results", f"does not parse as .eval_results entries: {e!r}")])
    return report


MODEL = ArtifactKind("model", "model", lambda folder, configs: True, model_card_rejections)

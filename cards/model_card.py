"""Model cards for trained checkpoints: README.md (huggingface_hub ``ModelCardData``: base_model, datasets, tags,
model-index) and ``.eval_results/<benchmark>.yaml``; pushed with ``push(dir, repo, repo_type="model")``.

Training metadata lives in the checkpoint as ``phr_training.json`` (written by training, or by
``write_model_card`` from its arguments)::

    {"schema_version": 1,
     "base_model": "Qwen/Qwen2.5-1.5B-Instruct",
     "datasets": [{"id": "ORG/hallucination-r1", "revision": "v0.1.0"}],
     "hyperparameters": {"learning_rate": 1e-6, "num_generations": 8, ...},
     "reward": {"name": "...", ...} or null,
     "local_datasets": [{"name": "hr1-grpo", "manifest_sha256": "...", "rows": 1536, ...}] (optional),
     "lora": {"r": 16, "lora_alpha": 32, ...} or null (optional),
     "method": "GRPO" (optional), "library": "trl" (optional), ...}

The license comes from the base model (``phr.cards.model_license``) unless given.

Arguments given to ``write_model_card`` override the file's values; other keys of the file are kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from phr.cards.eval_yaml import METRICS, model_eval_results_yaml
from phr.cards.model_license import License, base_license
from phr.eval.results import normalize
from phr.hub import README, PublishError

if TYPE_CHECKING:  # pragma: no cover - huggingface_hub is imported where a card is written
    from huggingface_hub import EvalResult

TRAINING_FILE = "phr_training.json"
EVAL_RESULTS_DIR = ".eval_results"
TRAINING_SCHEMA_VERSION = 1
DEFAULT_TAGS = ("phr", "post-hallucination-reasoning")


class ModelCardError(PublishError):
    pass


def load_training_metadata(checkpoint_dir: str | Path) -> dict | None:
    path = Path(checkpoint_dir) / TRAINING_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ModelCardError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ModelCardError(f"{path} must hold a JSON object")
    return data


def _datasets(items: Iterable | None) -> list[dict]:
    out = []
    for d in items or []:
        if isinstance(d, str):
            out.append({"id": d, "revision": None})
        elif isinstance(d, dict):
            out.append({"id": d["id"], "revision": d.get("revision")})
        else:
            repo_id, revision = d
            out.append({"id": repo_id, "revision": revision})
    return out


def _eval_results(results: list[dict], model_name: str) -> tuple[list[EvalResult], dict[str, list]]:
    """``EvalResult`` entries (model-index) and ``{benchmark: [entries]}`` for ``.eval_results``."""
    from huggingface_hub import EvalResult

    config_of = {m: (c, what) for m, _, c, what in METRICS}
    entries: list = []
    files: dict[str, list] = {}
    for raw in results:
        rec = normalize(raw, source="eval result")
        ds, rev = rec["dataset"]["id"], rec["dataset"]["revision"]
        for metric, value in rec["metrics"].items():
            config, what = config_of.get(metric, (None, metric))
            entries.append(
                EvalResult(
                    task_type="text-generation",
                    task_name="Post-hallucination reasoning",
                    dataset_type=ds,
                    dataset_name=ds.split("/")[-1],
                    dataset_config=config,
                    dataset_split="test",
                    dataset_revision=rev,
                    metric_type=metric,
                    metric_name=what,
                    metric_value=value,
                    source_name=(rec.get("source_name") or "PHR evaluation") if rec.get("source_url") else None,
                    source_url=rec.get("source_url"),
                )
            )
        files.setdefault(rec.get("benchmark", "phrbench"), []).extend(yaml.safe_load(model_eval_results_yaml(rec)))
    return entries, files


def _table(d: dict) -> list[str]:
    if not d:
        return ["(none recorded)"]
    rows = ["| key | value |", "|---|---|"]
    for k, v in d.items():
        shown = json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else str(v)
        rows.append(f"| {k} | {shown.replace('|', chr(92) + '|')} |")
    return rows


def _merged_metadata(
    folder: Path,
    *,
    base_model: str | None,
    datasets: list[tuple[str, str | None]] | list[dict] | None,
    hyperparameters: dict | None,
    reward_config: dict | None,
    local_datasets: list[dict] | None,
    lora: dict | None,
) -> dict[str, Any]:
    """The folder's training metadata (``phr_training.json``, or a new record) with the given values in place
    and the defaults filled in; :class:`ModelCardError` when no base model is known."""
    meta: dict[str, Any] = load_training_metadata(folder) or {"schema_version": TRAINING_SCHEMA_VERSION}
    if base_model is not None:
        meta["base_model"] = base_model
    if datasets is not None:
        meta["datasets"] = _datasets(datasets)
    if hyperparameters is not None:
        meta["hyperparameters"] = dict(hyperparameters)
    if reward_config is not None:
        meta["reward"] = dict(reward_config)
    if local_datasets is not None:
        meta["local_datasets"] = [dict(d) for d in local_datasets]
    if lora is not None:
        meta["lora"] = dict(lora)
    if not meta.get("base_model"):
        raise ModelCardError(f"base_model is required (argument, or 'base_model' in {folder / TRAINING_FILE})")
    meta.setdefault("datasets", [])
    meta.setdefault("hyperparameters", {})
    meta.setdefault("reward", None)
    meta["datasets"] = _datasets(meta["datasets"])
    return meta


def _library_name(folder: Path) -> str | None:
    """The library a checkpoint folder loads with: ``peft`` for an adapter, ``transformers`` for a model."""
    return (
        "peft"
        if (folder / "adapter_config.json").exists()
        else "transformers"
        if (folder / "config.json").exists()
        else None
    )


def _training_data_lines(meta: dict[str, Any]) -> list[str]:
    """The card's "Training data" list: the Hub datasets (with revisions) and the local corpus folders."""
    lines = [
        f"- [{d['id']}](https://huggingface.co/datasets/{d['id']})"
        + (f" at revision `{d['revision']}`" if d["revision"] else " (revision not recorded)")
        for d in meta["datasets"]
    ]
    lines += [
        f"- the local corpus folder `{d['name']}`"
        + (f" (manifest.json sha256 `{d['manifest_sha256']}`)" if d.get("manifest_sha256") else "")
        + (f", {d['rows']} rows of split `{d['split']}`" if d.get("rows") is not None and d.get("split") else "")
        for d in meta.get("local_datasets") or []
    ]
    if not meta["datasets"] and not meta.get("local_datasets"):
        lines += ["(none recorded)"]
    return lines


def _evaluation_lines(entries: list) -> list[str]:
    """The card's Evaluation section (a table of the ``EvalResult`` entries); none without entries."""
    if not entries:
        return []
    lines = ["", "## Evaluation", "", "| dataset | revision | config | metric | value |", "|---|---|---|---|---|"]
    lines += [
        f"| {e.dataset_type} | {e.dataset_revision} | {e.dataset_config or ''} | {e.metric_type} | "
        f"{e.metric_value:.4f} |"
        for e in entries
    ]
    lines += ["", f"Machine-readable: the `model-index` above and `{EVAL_RESULTS_DIR}/*.yaml`."]
    return lines


def _card_body(
    name: str, meta: dict[str, Any], lic: License, entries: list, description: str | None, usage: list[str] | None
) -> list[str]:
    """The lines of the card's Markdown body (below the metadata block)."""
    body = [
        f"# {name}",
        "",
        description
        or (
            f"Fine-tuned from [{meta['base_model']}](https://huggingface.co/{meta['base_model']})"
            + (f" with {meta['method']}" if meta.get("method") else "")
            + " to reason soundly after a hallucinated premise has entered the context."
        ),
        "",
        "## Training data",
        "",
        *_training_data_lines(meta),
    ]
    if usage:
        body += ["", *usage]
    body += ["", "## Hyperparameters", "", *_table(meta["hyperparameters"])]
    if meta.get("lora"):
        body += ["", "## LoRA", "", *_table(meta["lora"])]
    if meta["reward"]:
        body += ["", "## Reward", "", *_table(meta["reward"])]
    body += ["", "## License", "", lic.line()]
    body += _evaluation_lines(entries)
    body += ["", f"Training metadata: [`{TRAINING_FILE}`]({TRAINING_FILE}).", ""]
    return body


def _write_eval_files(folder: Path, eval_files: dict[str, list]) -> None:
    """Write ``.eval_results/<benchmark>.yaml`` for each benchmark with results."""
    if eval_files:
        (folder / EVAL_RESULTS_DIR).mkdir(exist_ok=True)
        for bench, items in eval_files.items():
            (folder / EVAL_RESULTS_DIR / f"{bench}.yaml").write_text(
                yaml.safe_dump(items, sort_keys=False, allow_unicode=True), encoding="utf-8"
            )


def write_model_card(
    checkpoint_dir: str | Path,
    *,
    base_model: str | None = None,
    datasets: list[tuple[str, str | None]] | list[dict] | None = None,
    hyperparameters: dict | None = None,
    reward_config: dict | None = None,
    eval_results: list[dict] | None = None,
    model_name: str | None = None,
    license: str | License | None = None,
    tags: list[str] | None = None,
    library_name: str | None = None,
    description: str | None = None,
    usage: list[str] | None = None,
    local_datasets: list[dict] | None = None,
    lora: dict | None = None,
) -> Path:
    """Write ``README.md`` (model card), ``.eval_results/<benchmark>.yaml`` (from ``eval_results``: result dicts
    as in docs/publishing.md) and ``phr_training.json`` (merged training metadata) into ``checkpoint_dir``.
    Returns the README path. The card is re-read with ``huggingface_hub.ModelCard`` before returning.

    ``license``: a Hub license id or a ``License``; None: the base model's (``base_license``). ``usage``:
    Markdown lines of a Usage section. ``local_datasets``: corpus folders trained on (name, hashes, rows).
    ``lora``: the LoRA settings (a LoRA section on the card). No reward section when there is no reward."""
    from huggingface_hub import ModelCard, ModelCardData

    folder = Path(checkpoint_dir)
    if not folder.is_dir():
        raise ModelCardError(f"{folder} is not a folder")
    meta = _merged_metadata(
        folder,
        base_model=base_model,
        datasets=datasets,
        hyperparameters=hyperparameters,
        reward_config=reward_config,
        local_datasets=local_datasets,
        lora=lora,
    )
    name = model_name or meta.get("model_name") or folder.name
    if library_name is None:
        library_name = _library_name(folder)
    entries, eval_files = _eval_results(eval_results or [], name)
    lic = license if isinstance(license, License) else License(license) if license else base_license(meta["base_model"])
    data = ModelCardData(
        base_model=meta["base_model"],
        datasets=[d["id"] for d in meta["datasets"]] or None,
        tags=sorted(set(DEFAULT_TAGS) | set(tags or []) | ({meta["method"].lower()} if meta.get("method") else set())),
        **lic.metadata(),
        library_name=library_name,
        model_name=name,
        eval_results=entries or None,
    )
    body = _card_body(name, meta, lic, entries, description, usage)
    card = ModelCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(body))
    (folder / TRAINING_FILE).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    _write_eval_files(folder, eval_files)
    path = folder / README
    card.save(path)
    ModelCard.load(path, ignore_metadata_errors=False)  # fails loudly if the metadata does not round-trip
    return path

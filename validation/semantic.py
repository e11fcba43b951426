"""Semantic distinctness: no two hallucinated premises of one question state the same error in other words.

Each distinct premise text is embedded once (in batches of ``batch_size``) with the offline all-MiniLM-L6-v2
sentence-transformers model; the pairs of one question whose cosine similarity is at or above the threshold
are rejected (the later premise of the pair). Cost: one forward pass per premise plus, per question, the
k x k similarities of its k premises, so linear in the number of rows for a fixed k.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import numpy as np

from phr.core.report import Rejection, ValidationReport
from phr.llm import embed as _embed

from .checks import run_checks
from .config import SemanticConfig, ValidationConfig
from .schemas import to_frame

if TYPE_CHECKING:  # pragma: no cover - sentence-transformers is imported on first use (heavy)
    from sentence_transformers import SentenceTransformer

CHECK = "semantic_distinctness"
MODEL_PACKAGE = _embed.MODEL_PACKAGE
clear_cache = _embed.clear_cache


def model_dir(cfg: SemanticConfig) -> str:
    """The model folder: ``cfg.model_dir`` or the one the offline package ships."""
    return cfg.model_dir or _embed.default_model_dir()


def load_model(cfg: SemanticConfig | None = None) -> SentenceTransformer:
    """The sentence-transformers model (loaded once per process)."""
    cfg = cfg or SemanticConfig()
    return _embed.load_model(model_dir(cfg), cfg.device)


def embed(texts: list[str], cfg: SemanticConfig | None = None) -> np.ndarray:
    """Unit-length embeddings of ``texts`` (rows in order); each distinct text is embedded once per process."""
    cfg = cfg or SemanticConfig()
    return _embed.embed(texts, model_dir(cfg), batch_size=cfg.batch_size, device=cfg.device)


def semantic_distinctness(
    augmentations: Any, config: ValidationConfig | SemanticConfig | None = None
) -> list[Rejection]:
    """Hallucinated premises of one question whose embeddings are at least ``threshold`` cosine-similar."""
    cfg = config.semantic if isinstance(config, ValidationConfig) else (config or SemanticConfig())
    if not cfg.enabled and config is not None:
        return []
    A = to_frame(augmentations)
    if not len(A) or "kind" not in A.columns:
        return []
    H = A[A["kind"].eq("hallucinated")]
    if len(H) < 2:
        return []
    ids, qids = H["id"].astype(str).tolist(), H["question_id"].astype(str).tolist()
    texts = ["" if not isinstance(t, str) else t for t in H["statement"].tolist()]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(qids):
        groups[q].append(i)
    rows = [i for members in groups.values() if len(members) > 1 for i in members]
    if not rows:
        return []
    vec = dict(zip(rows, embed([texts[i] for i in rows], cfg), strict=True))
    out: list[Rejection] = []
    for q, members in groups.items():
        if len(members) < 2:
            continue
        E = np.stack([vec[i] for i in members])
        sim = E @ E.T
        flagged: set[int] = set()
        for b in range(1, len(members)):
            a = int(np.argmax(sim[b, :b]))
            s = float(sim[b, a])
            if s >= cfg.threshold and members[b] not in flagged:
                flagged.add(members[b])
                out.append(
                    Rejection(
                        ids[members[b]],
                        CHECK,
                        f"hallucinated premises {ids[members[a]]} and {ids[members[b]]} of question {q} state the "
                        f"same error in other words (embedding cosine {s:.2f} >= {cfg.threshold})",
                    )
                )
    return out


def run_all_checks(
    questions: Any, augmentations: Any, config: ValidationConfig | dict | None = None, **kwargs: Any
) -> ValidationReport:
    """The rule checks (``checks.run_checks``), then semantic distinctness (its wall time under
    ``seconds["semantic_distinctness"]``) when ``config.semantic.enabled``."""
    cfg = config if isinstance(config, ValidationConfig) else ValidationConfig.from_dict(config)
    report = run_checks(questions, augmentations, cfg, **kwargs)
    if cfg.semantic.enabled:
        t0 = time.perf_counter()
        report.extend(semantic_distinctness(augmentations, cfg))
        report.seconds[CHECK] = time.perf_counter() - t0
    return report

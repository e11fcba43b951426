"""Result files for `analyze predictor` (tests only): judged B+H samples of two models on PHRBench-mini."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from phr.eval.dataset import load_eval_dataset
from phr.eval.scoring import SampleScore


def write_result(folder: Path, model: str, dataset, samples) -> Path:
    """A results.json naming its samples.jsonl (with its SHA-256) in ``folder``."""
    folder.mkdir(parents=True)
    body = "".join(json.dumps(s.as_dict()) + "\n" for s in samples).encode()
    (folder / "samples.jsonl").write_bytes(body)
    result = {
        "schema_version": 2,
        "model": model,
        "revision": "r1",
        "dataset": dataset.ref(),
        "metrics": {"accuracy_b": 0.5},
        "samples_file": {"path": "samples.jsonl", "sha256": hashlib.sha256(body).hexdigest()},
    }
    (folder / "results.json").write_text(json.dumps(result))
    return folder / "results.json"


def mini_results(folder: Path, mini: Path) -> list[Path]:
    """Two models' results on PHRBench-mini's B+H prompts (two samples each, every one judged Heuristic
    Correction, insightful by a fixed rule): the result files, in ``folder``/m1 and ``folder``/m2."""
    ds = load_eval_dataset(mini)
    bh = [i for i in ds.instances if i.condition == "B+H"]
    paths = []
    for m, model in enumerate(("m1", "m2")):
        samples = [
            SampleScore(
                i.id,
                k,
                i.question_id,
                "B+H",
                i.domain,
                i.subtype,
                i.task_type,
                "x",
                None,
                False,
                True,
                resolution="Heuristic Correction",
                insightful=len(i.prompt) % 3 != (k + m) % 3,
            )  # fmt: skip
            for i in bh
            for k in range(2)
        ]
        paths.append(write_result(folder / model, model, ds, samples))
    return paths

"""From per-sample scores to a model's tables (paper §4-5, Tables 2 and 5-11, Figures 4-5).

Every mean is over scored samples (each instance has the same number of samples, so this equals the mean
over instances of the per-instance mean). Missing responses count as incorrect for accuracy and are left
out of the trajectory means. Resolution proportions are over the judged B+H samples.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from statistics import fmean

from phr.eval.scoring import SampleScore

TRAJ = ("OL", "UI", "BUF", "BC")
_ATTR = {"OL": "ol", "UI": "ui", "BUF": "buf", "BC": "bc"}
SUFFIX = {"B": "b", "B+T": "bt", "B+H": "bh"}
RESOLUTIONS = ("Correction", "Compliance", "Avoidance")


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return round(fmean(vals), 6) if vals else None


def cell(scores: Sequence[SampleScore]) -> dict:
    """n, accuracy and the trajectory means of a group of samples."""
    out = {"n": len(scores), "accuracy": _mean(float(s.correct) for s in scores),
           "missing": sum(s.missing for s in scores)}
    for name, attr in _ATTR.items():
        out[name] = _mean(getattr(s, attr) for s in scores if not s.missing)
    return out


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 6)


def _h_minus_t(t: dict, h: dict) -> dict:
    return {k: _diff(h.get(k), t.get(k)) for k in ("accuracy", *TRAJ)}


def _group(scores: Iterable[SampleScore], key) -> dict[str, list[SampleScore]]:
    out: dict[str, list[SampleScore]] = defaultdict(list)
    for s in scores:
        out[key(s)].append(s)
    return dict(sorted(out.items()))


def aggregate(scores: Sequence[SampleScore]) -> dict:
    """The report tables and the flat ``metrics`` dict of a result JSON."""
    by_cond = {c: cell(g) for c, g in _group(scores, lambda s: s.condition).items()}
    by_cond = {c: by_cond[c] for c in SUFFIX if c in by_cond}

    per_domain = {}
    for dom, g in _group(scores, lambda s: s.domain).items():
        row = {c: cell(gg) for c, gg in _group(g, lambda s: s.condition).items()}
        if "B+T" in row and "B+H" in row:
            row["H-T"] = _h_minus_t(row["B+T"], row["B+H"])
        per_domain[dom] = row

    hall = [s for s in scores if s.condition == "B+H"]
    truthful_by_q = _group((s for s in scores if s.condition == "B+T"), lambda s: s.question_id)
    per_type = {}
    for mt, g in _group(hall, lambda s: s.mutation_type or "unknown").items():
        row = cell(g)
        qs = {s.question_id for s in g}
        t = cell([s for q in qs for s in truthful_by_q.get(q, [])])
        row["B+T_same_questions"] = t if t["n"] else None
        row["H-T"] = _h_minus_t(t, row) if t["n"] else None
        per_type[mt] = row

    judged = [s for s in hall if s.resolution is not None]
    resolution = {
        "judged": len(judged),
        "unjudged": sum(1 for s in hall if s.resolution is None and not s.missing),
        "proportions": {r: _mean(float(s.resolution == r) for s in judged) for r in RESOLUTIONS},
        "insightful_rate": _mean(float(bool(s.insightful)) for s in judged),
        "per_domain": {d: {r: _mean(float(s.resolution == r) for s in g) for r in RESOLUTIONS}
                       for d, g in _group(judged, lambda s: s.domain).items()},
        "per_mutation_type": {m: {r: _mean(float(s.resolution == r) for s in g) for r in RESOLUTIONS}
                              for m, g in _group(judged, lambda s: s.mutation_type or "unknown").items()},
    }
    by_resolution = {r: cell([s for s in judged if s.resolution == r]) for r in RESOLUTIONS}

    metrics: dict[str, float] = {}
    for c, row in by_cond.items():
        sfx = SUFFIX[c]
        if row["accuracy"] is not None:
            metrics[f"accuracy_{sfx}"] = row["accuracy"]
        for name in TRAJ:
            if row[name] is not None:
                metrics[f"{name}_{sfx}"] = row[name]
    for name in TRAJ:  # the leaderboard's OL/UI/BUF/BC: under B+H
        if f"{name}_bh" in metrics:
            metrics[name] = metrics[f"{name}_bh"]
        if f"{name}_bh" in metrics and f"{name}_bt" in metrics:
            metrics[f"delta_{name}"] = round(metrics[f"{name}_bh"] - metrics[f"{name}_bt"], 6)
    if judged:
        for r in RESOLUTIONS:
            metrics[f"{r.lower()}_rate"] = resolution["proportions"][r]
        metrics["insightful_rate"] = resolution["insightful_rate"]

    return {
        "metrics": metrics,
        "by_condition": by_cond,
        "per_domain": per_domain,
        "per_mutation_type": per_type,
        "resolution": resolution,
        "by_resolution": by_resolution,
        "counts": {"samples": len(scores), "missing": sum(s.missing for s in scores),
                   "instances": len({s.instance_id for s in scores}),
                   "questions": len({s.question_id for s in scores})},
    }

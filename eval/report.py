"""Write a scored run: results.json (docs/evaluation.md), samples.jsonl, report.md and PNG plots.

Everything is written into a temporary folder and swapped in, so a failed scoring leaves the previous
output (or nothing), never half of it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from phr.eval.aggregate import RESOLUTIONS, TRAJ
from phr.eval.scoring import SampleScore
from phr.core.fs import honour_umask

RESULTS_FILE = "results.json"
SAMPLES_FILE = "samples.jsonl"
REPORT_FILE = "report.md"
PLOTS_DIR = "plots"


def result_json(*, model: str, revision: str, dataset: dict, report: dict, config: dict, run_id: str | None = None,
                date: str | None = None, source_url: str | None = None, submitted_by: str | None = None,
                notes: str | None = None, samples_sha256: str | None = None) -> dict:
    """A result JSON (schema_version 1: what phr.publish.results.push_results takes) with the full tables."""
    rec = {
        "schema_version": 1,
        "benchmark": "phrbench",
        "model": model,
        "revision": revision,
        "run_id": run_id,
        "dataset": {"id": dataset["id"], "revision": dataset["revision"]},
        "metrics": report["metrics"],
        "date": date or _dt.date.today().isoformat(),
        "source_url": source_url,
        "submitted_by": submitted_by,
        "notes": notes,
        "dataset_files": dataset.get("files", {}),
        "config": config,
        "counts": report["counts"],
        "tables": {k: report[k] for k in ("by_condition", "per_domain", "per_mutation_type", "resolution",
                                          "by_resolution")},
        "samples_file": {"path": SAMPLES_FILE, "sha256": samples_sha256},
    }
    return {k: v for k, v in rec.items() if v is not None}


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_fmt(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return out + [""]


def render_report(result: dict) -> str:
    """A Markdown summary of one result JSON."""
    t = result["tables"]
    cols = ["n", "accuracy", *TRAJ]
    lines = [f"# PHRBench results: {result['model']}", "",
             f"Model revision `{result['revision']}`, dataset `{result['dataset']['id']}` @ "
             f"`{result['dataset']['revision']}`, run `{result.get('run_id', '')}`, {result['counts']['samples']} "
             f"samples ({result['counts']['missing']} missing).", "", "## By condition", ""]
    lines += _table(["condition", *cols], [[c, *(row[k] for k in cols)] for c, row in t["by_condition"].items()])
    lines += ["## By domain (Tables 5-8)", ""]
    rows = []
    for dom, r in t["per_domain"].items():
        for c in ("B", "B+T", "B+H", "H-T"):
            if c in r:
                rows.append([dom, c, *(r[c].get(k) for k in ("accuracy", *TRAJ))])
    lines += _table(["domain", "condition", "accuracy", *TRAJ], rows)
    lines += ["## By mutation type, B+H (Tables 9-11)", ""]
    lines += _table(["mutation type", "n", "accuracy", *TRAJ, "accuracy H-T"],
                    [[m, r["n"], r["accuracy"], *(r[k] for k in TRAJ), (r["H-T"] or {}).get("accuracy")]
                     for m, r in t["per_mutation_type"].items()])
    res = t["resolution"]
    lines += ["## Behavioural resolution, B+H (Table 2, Figure 4)", ""]
    if res["judged"]:
        lines += _table(["judged", *RESOLUTIONS, "insightful rate", "unjudged"],
                        [[res["judged"], *(res["proportions"][r] for r in RESOLUTIONS), res["insightful_rate"],
                          res["unjudged"]]])
        lines += ["### Trajectory metrics by resolution (Figure 5)", ""]
        lines += _table(["resolution", *cols], [[r, *(row[k] for k in cols)] for r, row in t["by_resolution"].items()])
    elif (result.get("config") or {}).get("resolution_judge"):
        lines += [f"No judgement parsed ({res['unjudged']} B+H responses unjudged).", ""]
    else:
        lines += ["Not judged (no judge given).", ""]
    return "\n".join(lines)


def write_plots(result: dict, folder: Path) -> list[Path]:
    """PNG figures: accuracy by condition and domain, resolution proportions, metrics by resolution."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = result["tables"]
    folder.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    meta = {"Software": None}

    def save(fig, name: str) -> None:
        p = folder / name
        fig.tight_layout()
        fig.savefig(p, dpi=110, metadata=meta)
        plt.close(fig)
        out.append(p)

    conds = [c for c in ("B", "B+T", "B+H") if c in t["by_condition"]]
    domains = list(t["per_domain"])
    fig, ax = plt.subplots(figsize=(1.6 + 1.4 * max(1, len(domains)), 3.4))
    width = 0.8 / max(1, len(conds))
    for j, c in enumerate(conds):
        vals = [(t["per_domain"][d].get(c) or {}).get("accuracy") or 0.0 for d in domains]
        ax.bar([i + j * width for i in range(len(domains))], vals, width, label=c)
    ax.set_xticks([i + width * (len(conds) - 1) / 2 for i in range(len(domains))], domains)
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.set_title(f"{result['model']}: accuracy by domain and condition")
    ax.legend()
    save(fig, "accuracy_by_domain.png")

    fig, axes = plt.subplots(1, len(TRAJ), figsize=(12, 3))
    for ax, name in zip(axes, TRAJ):
        ax.bar(conds, [t["by_condition"][c].get(name) or 0.0 for c in conds], color="#4c72b0")
        ax.set_title(name)
    fig.suptitle("trajectory metrics by condition")
    save(fig, "trajectory_by_condition.png")

    res = t["resolution"]
    if res["judged"]:
        fig, ax = plt.subplots(figsize=(5, 3.2))
        props = [res["proportions"][r] or 0.0 for r in RESOLUTIONS]
        ax.bar(RESOLUTIONS, props, color=["#55a868", "#c44e52", "#8172b2"])
        ax.axhline(res["insightful_rate"] or 0.0, ls="--", color="black", label="insightful rate")
        ax.set_ylim(0, 1)
        ax.set_title(f"resolution of hallucinated premises (n={res['judged']})")
        ax.legend()
        save(fig, "resolution.png")
        fig, axes = plt.subplots(1, len(TRAJ), figsize=(12, 3))
        for ax, name in zip(axes, TRAJ):
            ax.bar(RESOLUTIONS, [t["by_resolution"][r].get(name) or 0.0 for r in RESOLUTIONS], color="#dd8452")
            ax.set_title(name)
            ax.tick_params(axis="x", labelrotation=20)
        fig.suptitle("trajectory metrics by resolution group (B+H)")
        save(fig, "trajectory_by_resolution.png")
    return out


def write_results(out: str | Path, result: dict, scores: Sequence[SampleScore], *, plots: bool = True) -> Path:
    """Write results.json, samples.jsonl, report.md and plots/ into ``out`` (replacing an earlier scoring)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.tmp-"))
    try:
        body = "".join(json.dumps(s.as_dict(), ensure_ascii=False) + "\n" for s in scores).encode()
        (tmp / SAMPLES_FILE).write_bytes(body)
        result = {**result, "samples_file": {"path": SAMPLES_FILE, "sha256": hashlib.sha256(body).hexdigest()}}
        (tmp / RESULTS_FILE).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        (tmp / REPORT_FILE).write_text(render_report(result), encoding="utf-8")
        if plots:
            write_plots(result, tmp / PLOTS_DIR)
        honour_umask(tmp)  # mkdtemp makes 0700 folders
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out

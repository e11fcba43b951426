"""Verification of leaderboard results: every number re-derived from the evidence a result carries.

    datasets = Datasets(["phrbench"], hub=None)           # folders / repo ids the maintainer vouches for
    checked = verify(result, samples_bytes, datasets)   # the result with its verdict (Result.problems)

A result is verified when its evidence (``phr.eval.evidence``) re-derives its metrics, standard errors, counts,
tables and coverage exactly against the dataset it names, and its recorded code sandbox is a record this tool
writes. The dataset comes from what the maintainer gives (``--dataset``: folders or repo ids; matched by the
fingerprint), the run folder the result was scored in (``RUN/run.json``), or the repo id and revision the result
names (local hub or the Hub). See docs/leaderboard.md, "Trust".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from phr.bench.instance import Instance
from phr.core.errors import PHRError
from phr.eval.results import Result

EVIDENCE_DIR = "evidence"
#: the keys eval records about the sandbox (phr.eval.pipeline.scoring_config), and the rlimits mode's guards
_SANDBOX_KEYS = {"isolation", "best_available", "weak", "timeout_s", "memory_mb"}
_RLIMITS_KEYS = {"own_uid", "sockets_blocked", "files_confined"}
_MODES = ("bwrap", "unshare", "rlimits")


def evidence_path(res: Result) -> str | None:
    """Where a results repo keeps the result's samples file: ``evidence/<sha256>.jsonl`` (content-addressed)."""
    return None if res.evidence is None else f"{EVIDENCE_DIR}/{res.evidence.samples_sha256}.jsonl"


def sandbox_problems(res: Result) -> list[str]:
    """Why the recorded sandbox (``config.sandbox``) is not a record this tool writes (empty: it is one)."""
    box = res.sandbox
    if not box:
        return ["config.sandbox: not recorded"]
    mode, best = box.get("isolation"), box.get("best_available")
    if mode not in _MODES or best not in _MODES:
        return [f"config.sandbox.isolation: {mode!r} / best_available {best!r} is not a mode this tool records"]
    rank = {m: len(_MODES) - n for n, m in enumerate(_MODES)}
    keys = _SANDBOX_KEYS | (_RLIMITS_KEYS if mode == "rlimits" else set())
    extra, absent = set(box) - keys - {"allow_weak_sandbox"}, keys - set(box)
    out = []
    if extra or absent:
        out.append(f"config.sandbox: the keys of an {mode} record are {sorted(keys)}, got {sorted(set(box))} (edited?)")
    weak = mode == "rlimits" or rank[mode] < rank[best]
    if box.get("weak") is not weak:
        out.append(f"config.sandbox.weak: claimed {box.get('weak')!r}, recomputed {weak} ({mode}, best {best})")
    return out


@dataclass
class Datasets:
    """The datasets results are checked against: ``given`` folders or repo ids (``--dataset``), then a result's
    own run folder, then the repo id and revision it names (``hub``: a local hub, else the Hub)."""

    given: Sequence[str | Path] = ()
    hub: Path | None = None
    _loaded: dict[str, list[Instance] | str] = field(default_factory=dict)

    def _load(self, spec: str, revision: str | None = None) -> list[Instance] | str:
        """The instances of a folder or repo id (cached), or why they cannot be read."""
        from phr.eval.dataset import load_eval_dataset

        key = f"{spec}@{revision}"
        if key not in self._loaded:
            try:
                self._loaded[key] = load_eval_dataset(spec, revision=revision, hub=self.hub).instances
            except PHRError as e:
                self._loaded[key] = f"dataset {spec}{'@' + revision if revision else ''}: {e}"
        return self._loaded[key]

    def for_result(self, res: Result, near: Path | None = None) -> tuple[list[Instance] | None, str]:
        """The dataset instances to check ``res`` against, or None and why there are none. ``near``: the folder of
        the result file (a run's ``scores/``: the run's dataset folder is a candidate)."""
        from phr.eval.evidence import dataset_fingerprint

        want = res.evidence.dataset_fingerprint if res.evidence else None
        tried: list[str] = []
        for spec in self.given:
            got = self._load(str(spec))
            if isinstance(got, str):
                raise PHRError(f"--dataset {spec}: {got}")
            if dataset_fingerprint(got) == want:
                return got, ""
            tried.append(str(spec))
        if near is not None and (near.parent / "run.json").is_file():
            ran = self._run_dataset(near.parent)
            if ran is not None and dataset_fingerprint(ran) == want:
                return ran, ""
        if res.dataset.id.count("/") == 1 and not res.dataset.id.startswith("local/"):
            got = self._load(res.dataset.id, res.dataset.revision)
            if not isinstance(got, str):
                return got, ""
            return None, got
        given = f" (none of the given {', '.join(tried)} has its fingerprint)" if tried else ""
        return None, (
            f"dataset {res.dataset.id} @ {res.dataset.revision}: not available to check against{given}; pass "
            "--dataset with the folder it was scored on"
        )

    def _run_dataset(self, run: Path) -> list[Instance] | None:
        from phr.eval.pipeline import dataset_of_run
        from phr.eval.runner import load_run

        try:
            return dataset_of_run(load_run(run).meta, self.hub).instances
        except (PHRError, OSError, ValueError):
            return None


def verify(res: Result, samples: bytes | None, datasets: Datasets, near: Path | None = None) -> Result:
    """``res`` with its verdict (``Result.problems``): re-derived from ``samples`` (its evidence file's bytes;
    None: not found) against its dataset, and its sandbox record checked."""
    return res.with_verdict(check(res, samples, datasets, near).problems)


@dataclass
class Check:
    """One result checked: what it claims, what its evidence gives, and every difference."""

    problems: list[str]
    recomputed: dict[str, float] | None = None
    coverage: str | None = None


def check(res: Result, samples: bytes | None, datasets: Datasets, near: Path | None = None) -> Check:
    """``res`` re-derived (see ``verify``)."""
    from phr.eval.evidence import recompute

    if res.evidence is None:
        return Check(["evidence: none recorded (results written before evidence was kept are not ranked)"])
    if samples is None:
        return Check([f"evidence: the samples file {evidence_path(res)} is missing"])
    instances, why = datasets.for_result(res, near)
    if instances is None:
        return Check([why])
    again = recompute(res, samples, instances)
    return Check(
        again.problems + sandbox_problems(res),
        again.metrics,
        None if again.coverage is None else again.coverage.text(),
    )


def samples_near(res: Result, path: Path) -> bytes | None:
    """The samples file of a result file at ``path``: a results repo's ``evidence/<sha256>.jsonl`` (``path`` under
    its ``results/``), else the ``samples_file`` next to it; None when there is none."""
    candidates = []
    if (rel := evidence_path(res)) is not None:
        for up in path.parents:
            if (up / EVIDENCE_DIR).is_dir():
                candidates.append(up / rel)
                break
    if res.samples_file is not None and "/" not in res.samples_file.path and ".." not in res.samples_file.path:
        candidates.append(path.parent / res.samples_file.path)
    for c in candidates:
        if c.is_file():
            return c.read_bytes()
    return None

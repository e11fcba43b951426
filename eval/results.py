"""Eval's typed artifacts: the run manifest (``run.json``), the report tables and the result (``results.json``).

Eval owns these formats; the leaderboard and the publisher import them from here. The artifact models
(``RunManifest``, ``ReportTables``, ``Result``) also answer ``x["key"]``, ``x.get("key")`` and ``"key" in x``
from their JSON form, for code written against the plain dicts of toolkit 0.1.0.

``results.json`` versions (``schema_version``):

1. toolkit 0.1.0: model, revision, run_id, dataset, ``metrics``, ``counts``, ``tables``, ``config``, ...
2. adds ``standard_errors`` (metric -> standard error), ``bootstrap`` (how they were computed: resamples, seed,
   resampling unit) and ``tables.cell_errors`` (the standard error of every table figure, keyed like the
   tables). ``read_result`` reads both; a version-1 result reads as a version-2 result without standard errors
   (and keeps the run id 0.1.0 gave it). Optional keys added since, without a version change: ``settings``,
   ``coverage`` (``Coverage``: instances and questions scored against the dataset's, per condition; absent:
   "not recorded").

``run.json`` is at ``RUN_SCHEMA_VERSION`` 1 (unchanged since 0.1.0). See docs/evaluation.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    create_model,
    field_validator,
    model_serializer,
)

from phr.bench.metrics import ACCURACY, FIGURES, INSIGHTFUL, OL_WORDS, REQUIRED, rate_of
from phr.config.ops import PAPER_SCORER, Trajectory
from phr.core.errors import UsageError
from phr.core.text import clip

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)
RUN_SCHEMA_VERSION: Literal[1] = 1
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
#: table keys beside the conditions: the B+H - B+T difference, B+T over the questions of a mutation type
H_MINUS_T = "H-T"
#: a result's optional ``model_access``: the paper compares proprietary with open-source models (§5.1)
ModelAccess = Literal["proprietary", "open"]
MODEL_ACCESS: tuple[str, ...] = ("proprietary", "open")
T_SAME_QUESTIONS = "B+T_same_questions"
#: code sandboxes that isolate with namespaces (eval/sandbox.py): a result scored under another is "weak sandbox"
STRONG_ISOLATION = ("bwrap", "unshare")


class ResultsError(UsageError):
    """A result file that cannot be used as given: unreadable, invalid, partial, conflicting (exit 2)."""


class UnsafeResultError(ResultsError):
    """A result whose submitter text is refused on entry (``entry_problems``): bad input, exit 2."""


class Artifact(BaseModel):
    """A typed artifact; ``x["key"]``, ``x.get(key)`` and ``key in x`` read its JSON form (``as_json``)."""

    _drop_none: ClassVar[tuple[str, ...]] = ()  # top-level keys left out of the JSON when None ("*": all)

    def as_json(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", by_alias=True)
        drop = self._drop_none
        return {k: v for k, v in data.items() if v is not None or ("*" not in drop and k not in drop)}

    def __getitem__(self, key: str) -> Any:
        return self.as_json()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.as_json().get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.as_json()


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


_NUM: Any = (float | None, None)

# ---- the report tables -------------------------------------------------------------------------------------


class _Figures(_Strict):
    """A table cell's base: ``OL_words`` (added in toolkit 0.2) is left out of the JSON when absent, so results
    scored before it keep their exact form."""

    @model_serializer(mode="wrap")
    def _omit_absent_words(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get(OL_WORDS, 0) is None:
            data.pop(OL_WORDS)
        return data


Cell = create_model(  # field names: the catalogue's figures
    "Cell",
    __base__=_Figures,
    __doc__="A group of samples: n, the figures (accuracy, trajectory means), missing.",
    **{"n": (int, ...), ACCURACY: _NUM, "missing": (int, 0), **{f: _NUM for f in FIGURES if f != ACCURACY}},
)
Difference = create_model(
    "Difference", __base__=_Figures, __doc__="B+H minus B+T, per figure.", **{f: _NUM for f in FIGURES}
)


class MutationRow(Cell):  # type: ignore[misc, valid-type]
    """The B+H cell of one mutation type, B+T over the same questions, and their difference."""

    truthful: Cell | None = Field(None, alias=T_SAME_QUESTIONS)  # type: ignore[valid-type]
    h_minus_t: Difference | None = Field(None, alias=H_MINUS_T)  # type: ignore[valid-type]


Resolution = create_model(
    "Resolution",
    __base__=_Strict,
    __doc__="Behavioural resolution of the judged B+H samples.",
    **{
        "judged": (int, 0),
        "unjudged": (int, 0),
        "proportions": (dict[str, float | None], {}),
        rate_of(INSIGHTFUL): _NUM,
        "per_domain": (dict[str, dict[str, float | None]], {}),
        "per_mutation_type": (dict[str, dict[str, float | None]], {}),
    },
)

Errors = dict[str, float | None]  # figure (or resolution share) -> standard error


class CellErrors(_Strict):
    """The standard error of every table figure, keyed like the tables (``per_mutation_type``: "B+H",
    "B+T_same_questions", "H-T"; ``resolution``: the shares and the insightful rate)."""

    by_condition: dict[str, Errors] = {}
    per_domain: dict[str, dict[str, Errors]] = {}
    per_mutation_type: dict[str, dict[str, Errors]] = {}
    by_resolution: dict[str, Errors] = {}
    by_insightful: dict[str, Errors] = {}
    resolution: Errors = {}


class Tables(_Strict):
    """Paper Tables 2 and 5-11, Figures 4-5: cells by condition, domain, mutation type and resolution."""

    by_condition: dict[str, Cell] = {}  # type: ignore[valid-type]
    per_domain: dict[str, dict[str, Cell | Difference]] = {}  # type: ignore[valid-type]  # + "H-T"
    per_mutation_type: dict[str, MutationRow] = {}
    resolution: Resolution = Field(default_factory=Resolution)  # type: ignore[valid-type]
    by_resolution: dict[str, Cell] = {}  # type: ignore[valid-type]
    by_insightful: dict[str, Cell] = {}  # type: ignore[valid-type]  # Figure 5: insightful / non-insightful
    cell_errors: CellErrors | None = None

    @model_serializer(mode="wrap")
    def _omit_absent_errors(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if data.get("cell_errors") is None:
            data.pop("cell_errors", None)
        elif not data["cell_errors"].get("by_insightful"):
            data["cell_errors"].pop("by_insightful", None)
        if not data.get("by_insightful"):  # absent from results written before Figure 5's groups
            data.pop("by_insightful", None)
        return data

    def as_tables(self) -> Tables:
        """Just the tables (of a ``ReportTables``)."""
        return Tables(**{f: getattr(self, f) for f in Tables.model_fields})


class Counts(_Strict):
    samples: int
    missing: int
    instances: int
    questions: int


class Bootstrap(_Strict):
    """How standard errors are computed: ``resamples`` draws of the base questions with replacement, ``seed``."""

    resamples: int = Field(default=1000, ge=2)
    seed: int = 0
    unit: Literal["question_id"] = "question_id"


class ReportTables(Artifact, Tables):
    """What ``phr.eval.aggregate.aggregate`` returns: the flat metrics, their standard errors, the tables."""

    metrics: dict[str, float] = {}
    standard_errors: dict[str, float] = {}
    counts: Counts
    bootstrap: Bootstrap | None = None


# ---- the result --------------------------------------------------------------------------------------------


class DatasetRef(_Strict):
    id: str = Field(min_length=3)
    revision: str = Field(min_length=1)


class SamplesFile(_Strict):
    path: str
    sha256: str | None = None


_SHA256 = r"^[0-9a-f]{64}$"


class Evidence(_Strict):
    """What a result was computed from (docs/leaderboard.md, "Trust"): the per-sample scores the scorer wrote
    (``samples.jsonl``; in a results repo ``evidence/<samples_sha256>.jsonl``, content-addressed), the SHA-256 of
    the responses they were scored from (the run's responses.jsonl or the submission file), and the fingerprint of
    the dataset they were scored against (its instance ids and gold answers, ``phr.eval.evidence``)."""

    samples_sha256: str = Field(pattern=_SHA256)
    responses_sha256: str = Field(pattern=_SHA256)
    dataset_fingerprint: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")


def _finite(values: dict[str, float], what: str, nonnegative: bool = False) -> dict[str, float]:
    bad = [k for k, v in values.items() if not math.isfinite(v) or (nonnegative and v < 0)]
    if bad:
        raise ValueError(f"{what} {bad} are not finite{' non-negative' if nonnegative else ''} numbers")
    return values


class Truncation(_Strict):
    """Responses cut at the output limit (``finish_reason == "length"``) among those with a known finish reason."""

    responses: int = 0
    truncated: int = 0
    share: float | None = None
    warn_above: float = 0.01
    warning: bool = False


#: the trajectory choices a result written before they were recorded was scored with (the paper's)
_PAPER_CHOICES = Trajectory()


class EvaluationSettings(_Strict):
    """Every evaluation setting the numbers depend on (issue 10; docs/evaluation.md). Defaults: results of
    schema 1 and 2 written before these settings existed read with ``settings`` None."""

    preset: str | None = None
    samples: int | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    max_tokens_source: str | None = None  # "--max-tokens", "model", "default"
    reference_scorer: str | None = None
    paper_reference_scorer: str = PAPER_SCORER
    reference_scorer_is_paper: bool = False
    kl_direction: str = _PAPER_CHOICES.kl_direction
    step_rule: str = _PAPER_CHOICES.step_rule
    bc_counting: str = _PAPER_CHOICES.bc_counting
    ol_units: dict[str, str] = {"OL": "reference-scorer tokens", "OL_words": "words"}
    open_ended_rel_tol: float = 0.01
    open_ended_grader: str | None = None  # the LLM equivalence grader's spec; None: normalised match
    open_ended_grader_prompt_sha256: str | None = None
    resolution_judge: str | None = None
    resolution_prompt_version: int | None = None
    resolution_labels: list[str] = []
    truncation: Truncation | None = None


class ConditionCoverage(_Strict):
    """What a result scored of one condition, against the dataset's own counts: ``instances`` answered (at least one
    sample present), ``missing`` samples (failed calls, responses left out) among the instances scored."""

    instances: int = Field(ge=0)
    dataset_instances: int = Field(ge=0)
    questions: int = Field(ge=0)
    dataset_questions: int = Field(ge=0)
    missing: int = Field(0, ge=0)


class Coverage(_Strict):
    """How much of its dataset a result scored (docs/evaluation.md, "Coverage"): ``complete`` when every sample of
    every instance of every condition of the dataset was answered and scored (a failed call is missing, so it makes
    the result partial). A partial result (a ``--limit`` run, some conditions only, failed calls, a submission with
    instances left out) is refused by push-results, submit, leaderboard and report unless they are given
    ``--allow-partial``; then ``allow_partial`` is recorded and it is shown marked partial and unranked."""

    complete: bool
    by_condition: dict[str, ConditionCoverage]
    allow_partial: bool = False

    def totals(self) -> tuple[int, int, int, int]:
        """(instances, dataset instances, questions, dataset questions): instances summed over the conditions;
        questions counted under the condition that covers most of them."""
        cells = list(self.by_condition.values())
        best = max(cells, key=lambda c: (c.questions, c.dataset_questions), default=None)
        return (
            sum(c.instances for c in cells),
            sum(c.dataset_instances for c in cells),
            best.questions if best else 0,
            best.dataset_questions if best else 0,
        )

    @property
    def missing(self) -> int:
        """Samples missing (failed calls) among the instances scored."""
        return sum(c.missing for c in self.by_condition.values())

    def text(self) -> str:
        """``complete`` or ``partial: 10/330 instances, 2/34 questions`` (``, missing 12`` when samples are)."""
        if self.complete:
            return "complete"
        inst, ds_inst, q, ds_q = self.totals()
        missing = f", missing {self.missing}" if self.missing else ""
        return f"partial: {inst}/{ds_inst} instances, {q}/{ds_q} questions{missing}"


def coverage_of(scores: Iterable[Any], dataset: Iterable[Any]) -> Coverage:
    """The coverage of the per-sample ``scores`` (each with ``instance_id``, ``condition``, ``missing``) against all
    instances of the ``dataset``, per condition of the dataset: an instance counts when one of its samples was
    answered; a missing sample is counted (and makes the result partial)."""
    want: dict[str, list[Any]] = {}
    for inst in dataset:
        want.setdefault(str(inst.condition), []).append(inst)
    answered: dict[str, set[str]] = {}
    missing: dict[str, int] = {}
    for s in scores:
        cond = str(s.condition)
        if s.missing:
            missing[cond] = missing.get(cond, 0) + 1
        else:
            answered.setdefault(cond, set()).add(s.instance_id)
    by_condition = {}
    for cond, rows in want.items():
        got = [i for i in rows if i.id in answered.get(cond, set())]
        by_condition[cond] = ConditionCoverage(
            instances=len(got),
            dataset_instances=len(rows),
            questions=len({i.question_id for i in got}),
            dataset_questions=len({i.question_id for i in rows}),
            missing=missing.get(cond, 0),
        )
    complete = all(c.instances == c.dataset_instances and not c.missing for c in by_condition.values())
    return Coverage(complete=complete and bool(by_condition), by_condition=by_condition)


class PartialResultError(ResultsError):
    """A partial result given where complete results are required (exit 2)."""


class Result(Artifact):
    """One scored run or submission (``results.json``, schema_version 2). Further top-level keys are kept."""

    model_config = ConfigDict(extra="allow")
    _drop_none: ClassVar[tuple[str, ...]] = ("*",)

    schema_version: int = SCHEMA_VERSION
    benchmark: str = "phrbench"
    model: str = Field(min_length=1)
    revision: str = Field(min_length=1)
    run_id: str | None = None
    dataset: DatasetRef
    metrics: dict[str, float]
    standard_errors: dict[str, float] = {}
    bootstrap: Bootstrap | None = None
    date: str | None = None
    source_url: str | None = None
    submitted_by: str | None = None
    notes: str | None = None
    model_access: ModelAccess | None = None
    dataset_files: dict[str, str] | None = None
    config: dict[str, Any] | None = None
    counts: Counts | None = None
    tables: Tables | None = None
    samples_file: SamplesFile | None = None
    settings: EvaluationSettings | None = None
    #: how much of the dataset was scored; None in results written before coverage was recorded
    coverage: Coverage | None = None
    #: what the numbers are recomputed from (None: written before evidence was recorded; never ranked)
    evidence: Evidence | None = None
    #: set by push-results when the maintainer took a result scored under a weak code sandbox
    allow_weak_sandbox: bool | None = None

    #: what re-deriving it from its evidence found (phr.leaderboard.verify); never read from a file. None: not
    #: checked (a result handed to the renderers by the caller), []: verified, else one line per problem
    _problems: list[str] | None = PrivateAttr(default=None)

    @property
    def partial(self) -> bool:
        """Scored only part of its dataset (a result without a recorded coverage is not known to be partial)."""
        return self.coverage is not None and not self.coverage.complete

    def with_verdict(self, problems: list[str]) -> Result:
        """This result with what its verification found (``problems`` empty: verified)."""
        out = self.model_copy()
        out._problems = list(problems)
        return out

    @property
    def problems(self) -> list[str] | None:
        """What its verification found: None when not checked, [] when verified."""
        return None if self._problems is None else list(self._problems)

    @property
    def unverified(self) -> bool:
        """Checked, and its numbers are not what its evidence gives (or it has none)."""
        return bool(self._problems)

    @property
    def sandbox(self) -> dict[str, Any]:
        """The code sandbox it was scored in, as recorded (``config.sandbox``; {} when not recorded)."""
        value = (self.config or {}).get("sandbox")
        return value if isinstance(value, dict) else {}

    @property
    def weak_sandbox(self) -> bool:
        """Recorded as scored under a sandbox weaker than bwrap / unshare (one not recorded is unverified)."""
        return bool(self.sandbox) and self.sandbox.get("isolation") not in STRONG_ISOLATION

    def tags(self) -> tuple[str, ...]:
        """What a reader must see next to the model name: partial (or ``missing N``), unverified, weak sandbox."""
        out = []
        if self.partial and self.coverage is not None:
            out += ["partial", *([f"missing {self.coverage.missing}"] if self.coverage.missing else [])]
        if self.unverified:
            out.append("unverified")
        if self._problems is not None and self.weak_sandbox:
            out.append("weak sandbox")
        return tuple(out)

    @property
    def ranked(self) -> bool:
        """Ranked on a leaderboard: complete, and verified when checked."""
        return not self.partial and not self.unverified

    def coverage_text(self) -> str:
        """``complete``, ``partial: ...`` or ``not recorded`` (results written before coverage was recorded)."""
        return self.coverage.text() if self.coverage is not None else "not recorded"

    def check_complete(self, *, allow_partial: bool, source: str = "result") -> Result:
        """This result, refused (``PartialResultError``) if it is partial and neither ``allow_partial`` nor its
        recorded coverage allows it; a partial result allowed here comes back with ``allow_partial`` recorded."""
        if not self.partial or self.coverage is None:
            return self
        if allow_partial:
            return self.model_copy(update={"coverage": self.coverage.model_copy(update={"allow_partial": True})})
        if self.coverage.allow_partial:
            return self
        raise PartialResultError(
            f"{source} is a partial result ({self.coverage.text()} of {self.dataset.id}): only complete results "
            "are ranked; pass --allow-partial to show it marked partial and unranked"
        )

    @field_validator("schema_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != SCHEMA_VERSION:
            raise ValueError(f"expected {SCHEMA_VERSION} (read older versions with read_result)")
        return v

    @field_validator("run_id", "benchmark")
    @classmethod
    def _ident(cls, v: str | None) -> str | None:
        if v is not None and not ID_PATTERN.match(v):
            raise ValueError("letters, digits, '.', '_', '-' only (at most 128)")
        return v

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, m: dict[str, float]) -> dict[str, float]:
        return _finite(m, "metric(s)")

    @field_validator("standard_errors")
    @classmethod
    def _errors(cls, m: dict[str, float]) -> dict[str, float]:
        return _finite(m, "standard error(s)", nonnegative=True)

    def leaderboard_problems(self) -> list[str]:
        """Why this result is not a leaderboard entry (empty: it is one)."""
        missing = [k for k in REQUIRED if k not in self.metrics]
        if missing:  # the result's fault, not the tool's: say which conditions it covers
            from phr.bench.conditions import leaderboard_coverage_problem
            from phr.bench.metrics import metric

            covered = [metric(k).condition or "" for k in REQUIRED if k not in missing]
            why = leaderboard_coverage_problem(covered, "the result")
            return [f"{why}; missing required metric(s) {missing}"]
        out = [k for k in REQUIRED if not 0.0 <= self.metrics[k] <= 1.0]
        return [f"metrics: accuracy metric(s) {out} must be fractions in [0, 1]"] if out else []


class _ResultV1(BaseModel):
    """results.json as toolkit 0.1.0 wrote and validated it (kept to read it and to reproduce its run ids)."""

    model_config = ConfigDict(extra="allow")
    schema_version: Literal[1] = 1
    benchmark: str = "phrbench"
    model: str = Field(min_length=1)
    revision: str = Field(min_length=1)
    run_id: str | None = None
    dataset: DatasetRef
    metrics: dict[str, float]
    date: str | None = None
    source_url: str | None = None
    submitted_by: str | None = None
    notes: str | None = None


def _content_id(data: dict) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _invalid(source: str, e: ValidationError) -> ResultsError:
    errs = "; ".join(f"{'.'.join(map(str, er['loc'])) or '(top)'}: {er['msg']}" for er in e.errors())
    return ResultsError(f"{source} is not a valid result JSON (docs/publishing.md): {errs}")


def read_result(data: Result | Mapping[str, Any], *, source: str = "result") -> Result:
    """A result of any readable version as a current ``Result`` (``run_id`` filled in: a hash of the content
    when it has none, computed as 0.1.0 did for a version-1 result). ``ResultsError`` names ``source``."""
    if isinstance(data, Result):
        return data if data.run_id else data.model_copy(update={"run_id": _content_id(data.as_json())})
    if not isinstance(data, Mapping):
        raise ResultsError(f"{source} is not a JSON object")
    version = data.get("schema_version", 1)
    if version not in READABLE_VERSIONS:
        raise ResultsError(
            f"{source}: unsupported schema_version {version!r} (this toolkit reads "
            f"{', '.join(map(str, READABLE_VERSIONS))})"
        )
    try:
        if version == 1:
            old = _ResultV1.model_validate(data).model_dump(exclude_none=True)
            data = {**data, "schema_version": SCHEMA_VERSION, "run_id": old.get("run_id") or _content_id(old)}
        res = Result.model_validate(data)
    except ValidationError as e:
        raise _invalid(source, e) from None
    return res if res.run_id else res.model_copy(update={"run_id": _content_id(res.as_json())})


def leaderboard_result(data: Result | Mapping[str, Any], *, source: str = "result") -> Result:
    """``read_result``, refused (``ResultsError``) unless it is a leaderboard entry (B, B+T and B+H accuracy)."""
    res = read_result(data, source=source)
    problems = res.leaderboard_problems()
    if problems:
        raise ResultsError(f"{source} is not a leaderboard entry (docs/publishing.md): {'; '.join(problems)}")
    return res


def normalize(data: Result | Mapping[str, Any], *, source: str = "result") -> dict[str, Any]:
    """A leaderboard entry's JSON form (``leaderboard_result(...).as_json()``)."""
    return leaderboard_result(data, source=source).as_json()


def read_json(path: Path) -> Any:
    """The parsed content of a result JSON file (``ResultsError`` naming it when it cannot be read)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ResultsError(f"cannot read result JSON {path}: {e}") from None


def read_result_file(path: str | Path) -> Result:
    """A ``results.json`` of any readable version (no leaderboard requirement)."""
    return read_result(read_json(Path(path)), source=str(path))


def load_result(path: str | Path) -> Result:
    """A result JSON file that is a leaderboard entry."""
    return leaderboard_result(read_json(Path(path)), source=str(path))


# ---- submitter text, checked on entry (submit, push-results) -------------------------------------------------

#: a model spec as eval records a run's model (``local:smollm2``, ``hf:ORG/NAME@REV``, ``openai:gpt-4o``)
_MODEL_SPEC = re.compile(r"^[a-z][a-z0-9-]*:[A-Za-z0-9._/@#:+=~-]{1,256}$")
_GIT_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/+-]{0,127}$")
_HTTP_URL = re.compile(r"^https?://[^\s\x00-\x1f\x7f\"'<>`\\]+$", re.IGNORECASE)
#: the longest text a result's field holds (characters); TEXT_LIMIT for the others (notes, further keys)
TEXT_LIMITS = {"submitted_by": 200, "date": 64, "dataset.id": 200, "dataset.revision": 200}
TEXT_LIMIT = 2000
#: bidirectional overrides and isolates: they make text display in another order than it is written
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
#: how eval names a plain dataset folder in results (``local/<folder name>``, eval/dataset.py)
LOCAL_DATASET = "local/"
_LOCAL_NAME = re.compile(r"^[A-Za-z0-9._-]{1,96}$")
#: how eval names the revision of a plain dataset folder: a digest of its data files (eval/dataset.py)
_FOLDER_DIGEST = re.compile(r"^sha256:[0-9a-f]{12,64}$")


def _shown(value: str) -> str:
    return clip(repr(value), 80)


def model_name_problem(model: str) -> str | None:
    """Why ``model`` is no model name (a Hub model id NAME or ORG/NAME, or a model spec PROVIDER:MODEL written
    with letters, digits and ``. _ - / : @ # + = ~``, never ``..``: no path out of a folder), or None."""
    from phr.hub.repo import repo_id_problem

    if ".." in model:
        return f"must not hold '..' (a path out of a folder, not a model), got {_shown(model)}"
    if _MODEL_SPEC.fullmatch(model) or repo_id_problem(model, namespace=False) is None:
        return None
    return (
        f"must be a Hub model id (NAME or ORG/NAME) or a model spec PROVIDER:MODEL (letters, digits and "
        f"'. _ - / : @ # + = ~'), got {_shown(model)}"
    )


def revision_problem(revision: str) -> str | None:
    """Why ``revision`` is no git revision (a commit hash, tag or branch: letters, digits, ``. _ - / +``, at most
    128 characters, starting with a letter or digit), or None."""
    if _GIT_REVISION.fullmatch(revision):
        return None
    return (
        "must be a git revision (a commit hash, tag or branch: letters, digits, '.', '_', '-', '/', '+', at most "
        f"128 characters), got {_shown(revision)}"
    )


def text_problem(text: str, limit: int = TEXT_LIMIT) -> str | None:
    """Why ``text`` is no short plain text (one line, no control characters, no '<' or '>': no HTML), or None."""
    if len(text) > limit:
        return f"has {len(text)} characters (at most {limit})"
    if any(unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in _BIDI_CONTROLS for ch in text):
        return f"must be one line of text (no line breaks or control characters), got {_shown(text)}"
    if "<" in text or ">" in text:
        return f"must be plain text (no '<' or '>': no HTML), got {_shown(text)}"
    return None


def url_problem(url: str) -> str | None:
    """Why ``url`` is no plain http(s) URL (no whitespace, quotes, backticks or angle brackets), or None."""
    return (
        None
        if _HTTP_URL.fullmatch(url)
        else f"must be an http(s) URL without spaces, quotes or '<>', got {_shown(url)}"
    )


def date_problem(date: str) -> str | None:
    """Why ``date`` is no ISO 8601 date or date-time (``2025-06-01``, ``2025-06-01T12:30:00+00:00``), or None."""
    import datetime as _dt

    if len(date) <= TEXT_LIMITS["date"]:
        for parse in (_dt.date.fromisoformat, _dt.datetime.fromisoformat):
            try:
                parse(date)
                return None
            except ValueError:
                pass
    return f"must be an ISO date or date-time (2025-06-01, 2025-06-01T12:30:00Z), got {_shown(date)}"


def dataset_id_problem(dataset_id: str) -> str | None:
    """Why ``dataset_id`` is neither a Hub dataset repo id (ORG/NAME) nor the local name eval gives a plain folder
    (``local/<folder>``: letters, digits, ``. _ -``), or None."""
    from phr.hub.repo import repo_id_problem

    if dataset_id.startswith(LOCAL_DATASET):
        name = dataset_id.removeprefix(LOCAL_DATASET)
        if _LOCAL_NAME.fullmatch(name) and name.strip(".") != "":
            return None
    elif repo_id_problem(dataset_id) is None:
        return None
    return (
        f"must be a Hub dataset repo id ORG/NAME or a local name {LOCAL_DATASET}<folder> (letters, digits, '.', "
        f"'_', '-'), got {_shown(dataset_id)}"
    )


def dataset_revision_problem(revision: str) -> str | None:
    """Why ``revision`` is neither a git revision (``revision_problem``) nor the ``sha256:<hex>`` eval records for a
    plain folder, or None."""
    if _FOLDER_DIGEST.fullmatch(revision) or revision_problem(revision) is None:
        return None
    return (
        "must be a git revision (a commit hash, tag or branch: letters, digits, '.', '_', '-', '/', '+', at most "
        f"128 characters) or a folder's sha256:<hex>, got {_shown(revision)}"
    )


def entry_problems(res: Result) -> list[str]:
    """Why the submitter text of ``res`` is refused on entry to a leaderboard, one line per field (empty: none).
    The model is a model name, the revision a git revision, the link an http(s) URL, the date an ISO date, the
    dataset a Hub repo id or local name at a git revision or folder digest, every other text field (and top-level
    string kept as is) short plain text; what is rendered is escaped as well (``phr.core.text``)."""
    text: dict[str, str | None] = {"submitted_by": res.submitted_by, "notes": res.notes}
    text |= {k: v for k, v in (res.model_extra or {}).items() if isinstance(v, str)}
    found = {
        "model": model_name_problem(res.model),
        "revision": revision_problem(res.revision),
        "source_url": url_problem(res.source_url) if res.source_url is not None else None,
        "date": date_problem(res.date) if res.date is not None else None,
        "dataset.id": dataset_id_problem(res.dataset.id),
        "dataset.revision": dataset_revision_problem(res.dataset.revision),
    }
    found |= {k: text_problem(v, TEXT_LIMITS.get(k, TEXT_LIMIT)) for k, v in text.items() if v is not None}
    return [f"{name}: {why}" for name, why in found.items() if why]


def model_slug(model: str) -> str:
    """``ORG/name`` -> ``ORG--name`` (a folder name)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "--", model).strip("-.") or "model"
    return slug[:96]


def estimate_text(value: Any, se: float | None = None, *, signed: bool = False) -> str:
    """``0.512`` / ``0.512 ± 0.021`` (``+0.050 ± 0.010`` signed); '' for None; non-floats as ``str``."""
    if value is None:
        return ""
    if not isinstance(value, float):
        return str(value)
    text = f"{value:+.3f}" if signed else f"{value:.3f}"
    return text if se is None else f"{text} ± {se:.3f}"


# ---- the run manifest --------------------------------------------------------------------------------------


class RunDataset(DatasetRef):
    path: str
    files: dict[str, str] = {}


class Generation(_Strict):
    temperature: float
    top_p: float | None = None
    max_tokens: int
    seed: int | None = None
    system_prompt: str | None = None

    @classmethod
    def of(cls, settings: RunSettings) -> Generation:
        """The generation settings among a run's ``settings`` (the fields of this model, as they are there)."""
        return cls.model_validate(settings.model_dump(include=set(cls.model_fields)))


class RunSettings(_Strict):
    """The generation settings of a run (run.json ``config``): what ``phr.ops.eval_phrbench`` resolved from its
    ``EvalPhrbenchConfig`` and ``phr.eval.runner.generate_run`` ran."""

    model: str
    dataset: str
    dataset_revision: str | None = None
    dataset_id: str | None = None
    conditions: list[str]
    samples: int
    temperature: float
    top_p: float | None = None
    max_tokens: int
    seed: int | None = None
    limit: int | None = None
    shard: list[int] | None = None
    system_prompt: str | None = None


class RunManifest(Artifact):
    """``run.json``: what a run generated (model and revision, dataset and its files, settings, instances)."""

    model_config = ConfigDict(extra="forbid")
    _drop_none: ClassVar[tuple[str, ...]] = ("merged_from", "settings")

    schema_version: Literal[1] = RUN_SCHEMA_VERSION
    run_id: str
    model: str
    model_revision: str
    dataset: RunDataset
    config: RunSettings
    generation: Generation
    samples: int = Field(ge=1)
    conditions: list[str]
    shard: list[int] | None = None
    instance_ids: list[str]
    responses: int
    failures: int
    date: str
    versions: dict[str, str] = {}
    merged_from: list[str] | None = None
    #: the resolved `eval phrbench` config the run was started with (phr.config.ops), its max_tokens source and
    #: rerun command: `eval merge` and `eval score` continue with these settings
    settings: dict | None = None


def read_run_manifest(data: Any, *, source: str = "run.json") -> RunManifest:
    """``run.json`` content as a ``RunManifest``; ``ValueError`` naming ``source`` and the fields otherwise."""
    try:
        return RunManifest.model_validate(data)
    except ValidationError as e:
        errs = "; ".join(f"{'.'.join(map(str, er['loc'])) or '(top)'}: {er['msg']}" for er in e.errors())
        raise ValueError(f"{source} is not a valid run manifest: {errs}") from None

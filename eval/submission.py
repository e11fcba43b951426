"""Leaderboard submissions: a JSONL file of responses plus model metadata, checked against PHRBench.

    meta = load_meta(submission="sub.jsonl", model="my-model", revision="abc123")   # + sub.meta.json
    sub = validate_submission("sub.jsonl", load_eval_dataset("phrbench"), meta)
    sub.responses[("mmlu-...-B", 0)]                                                 # -> the response text

One line per response: ``{"instance_id": str, "sample": int, "response": str}``; the output of a harness run (an
lm-evaluation-harness ``--log_samples`` file, an inspect_ai log) is read as those lines (``phr.eval.harness_logs``). ``validate_submission``
reads the file once, in binary, and either returns the whole ``Submission`` or raises ``SubmissionError``
listing every problem found (never a half-loaded submission).

Safety: a submission is only ever parsed as JSON. Nothing in it is unpickled, imported, evaluated or
executed here; code answers are run only by the scorer, inside the sandbox (``phr.eval.sandbox``).
See docs/submissions.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, NoReturn
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, ValidationError

from phr.core.errors import UsageError
from phr.core.fs import honour_umask
from phr.core.text import clip
from phr.eval.dataset import CONDITIONS, DatasetError, EvalDataset, check_conditions
from phr.eval.results import (
    MODEL_ACCESS,
    TEXT_LIMIT,
    TEXT_LIMITS,
    ModelAccess,
    revision_problem,
    text_problem,
    url_problem,
)
from phr.hub.repo import repo_id_problem

KEYS = ("instance_id", "sample", "response")
MISSING_SHOWN = 5  # missing responses named in the coverage message
_BOM = b"\xef\xbb\xbf"


class SubmissionError(UsageError):
    """A rejected submission or metadata; ``problems`` holds the listed reasons, ``total`` counts all."""

    def __init__(self, message: str, problems: list[str] | None = None, total: int | None = None):
        super().__init__(message)
        self.problems = problems if problems is not None else [message]
        self.total = total if total is not None else len(self.problems)


# ---- metadata -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SubmissionMeta:
    """Who and what a submission is: validated on construction (errors name the field)."""

    model: str
    revision: str
    link: str | None = None
    samples: int = 1
    conditions: tuple[str, ...] = CONDITIONS
    submitted_by: str | None = None
    notes: str | None = None
    model_access: ModelAccess | None = None  # proprietary | open (paper §5.1 compares the two)

    def __post_init__(self) -> None:
        for name in ("model", "revision"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v.strip():
                raise _meta_error(name, "is required (a non-empty string)")
        problem = repo_id_problem(self.model, namespace=False)
        if problem:
            raise _meta_error(
                "model", f"must be a Hub model id (NAME or ORG/NAME, as the Hub names repos): {self.model!r}: {problem}"
            )
        self._check_link()
        if isinstance(self.samples, bool) or not isinstance(self.samples, int) or self.samples < 1:
            raise _meta_error("samples", f"must be an integer >= 1, got {self.samples!r}")
        try:
            conditions = check_conditions(self.conditions)
        except (DatasetError, AttributeError, TypeError) as e:
            raise _meta_error("conditions", str(e) if isinstance(e, DatasetError) else f"bad value {self.conditions!r}")
        object.__setattr__(self, "conditions", conditions)
        if problem := revision_problem(self.revision):
            raise _meta_error("revision", problem)
        self._check_free_text()
        if self.model_access is not None and self.model_access not in MODEL_ACCESS:
            raise _meta_error("model_access", f"must be one of {', '.join(MODEL_ACCESS)}, got {self.model_access!r}")

    def _check_link(self) -> None:
        """``link``, when given, is an http(s) URL the results accept."""
        if self.link is not None:
            u = urlparse(self.link) if isinstance(self.link, str) else None
            if u is None or u.scheme not in ("http", "https") or not u.netloc or any(c.isspace() for c in self.link):
                raise _meta_error("link", f"must be an http(s) URL, got {self.link!r}")
            if problem := url_problem(self.link):
                raise _meta_error("link", problem)

    def _check_free_text(self) -> None:
        """``submitted_by`` and ``notes``, when given, are strings within their length limits."""
        for name in ("submitted_by", "notes"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise _meta_error(name, "must be a string")
            if value is not None and (problem := text_problem(value, TEXT_LIMITS.get(name, TEXT_LIMIT))):
                raise _meta_error(name, problem)

    def as_dict(self) -> dict:
        return {**asdict(self), "conditions": list(self.conditions)}


def _meta_error(name: str, what: str) -> SubmissionError:
    return SubmissionError(f"submission metadata: field {name!r} {what}")


class _MetaFile(BaseModel):
    """The sidecar JSON's schema (unknown keys are errors, to catch typos)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    model: str | None = None
    revision: str | None = None
    link: str | None = None
    samples: int | None = None
    conditions: list[str] | str | None = None
    submitted_by: str | None = None
    notes: str | None = None
    model_access: str | None = None


def default_meta_path(submission: str | os.PathLike) -> Path:
    """``sub.jsonl`` -> ``sub.meta.json`` (next to it)."""
    return Path(submission).with_suffix(".meta.json")


def load_meta(
    path: str | os.PathLike | None = None, *, submission: str | os.PathLike | None = None, **overrides: Any
) -> SubmissionMeta:
    """Metadata from the sidecar JSON ``path`` (default: ``default_meta_path(submission)`` if it exists),
    with ``overrides`` (e.g. command-line options; ``None`` values are ignored) winning."""
    unknown = sorted(set(overrides) - set(_MetaFile.model_fields))
    if unknown:
        raise SubmissionError(f"submission metadata: unknown field(s) {', '.join(map(repr, unknown))}")
    if path is None and submission is not None and default_meta_path(submission).is_file():
        path = default_meta_path(submission)
    values: dict = {}
    if path is not None:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise SubmissionError(f"cannot read metadata file {p}: {e}") from None
        try:
            values = _MetaFile.model_validate_json(text).model_dump(exclude_none=True)
        except ValidationError as e:
            raise SubmissionError(
                f"metadata file {p}: " + "; ".join(_pydantic_reason(err) for err in e.errors())
            ) from None
    values.update({k: v for k, v in overrides.items() if v is not None})
    for name in ("model", "revision"):
        if name not in values:
            raise _meta_error(name, "is required (a non-empty string)")
    if isinstance(values.get("conditions"), list):
        values["conditions"] = tuple(values["conditions"])
    return SubmissionMeta(**values)


def _pydantic_reason(err: Mapping[str, Any]) -> str:
    name = ".".join(str(x) for x in err.get("loc", ())) or "(file)"
    if err.get("type") == "extra_forbidden":
        return f"field {name!r}: unknown key (allowed: {', '.join(_MetaFile.model_fields)})"
    if err.get("type") == "json_invalid":
        return f"not valid JSON ({err.get('msg')})"
    return f"field {name!r}: {err.get('msg')}"


# ---- the submission file --------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 256 * 1024 * 1024
    max_line_bytes: int = 1024 * 1024  # a line's bytes, without its "\n"
    max_response_chars: int = 100_000
    max_errors_listed: int = 20


@dataclass
class Submission:
    meta: SubmissionMeta
    responses: dict[tuple[str, int], str]  # (instance_id, sample) -> response, in file order
    path: Path
    sha256: str  # of the file's bytes
    lines: int  # non-blank lines read

    def __len__(self) -> int:
        return len(self.responses)


@dataclass
class _Problems:
    limit: int
    listed: list[str] = field(default_factory=list)
    total: int = 0

    def add(self, msg: str) -> None:
        self.total += 1
        if len(self.listed) < self.limit:
            self.listed.append(msg)


class _BadConstant(ValueError):
    pass


def _reject_constant(name: str) -> NoReturn:
    raise _BadConstant(name)


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise _BadConstant(f"key {k!r} appears twice")
        out[k] = v
    return out


def _kind(v: object) -> str:
    kind = {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}
    s = json.dumps(v, ensure_ascii=True)
    return f"{kind.get(type(v), 'null')} {s if len(s) <= 40 else s[:37] + '...'}"


def _surrogate(s: str) -> str | None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"contains a lone surrogate (\\u{ord(s[e.start]):04x}) at character {e.start}"
    return None


def _open_regular(path: Path, limits: Limits) -> BinaryIO:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise SubmissionError(f"{path}: no such file") from None
    except OSError as e:
        raise SubmissionError(f"{path}: cannot read ({e.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise SubmissionError(f"{path} is a directory, not a submission file")
    if not stat.S_ISREG(st.st_mode):
        raise SubmissionError(f"{path} is not a regular file")
    try:
        f = open(path, "rb")  # noqa: SIM115 - returned to the caller's `with`
    except OSError as e:
        raise SubmissionError(f"{path}: cannot read ({e.strerror})") from None
    size = os.fstat(f.fileno()).st_size  # the file actually opened
    if size > limits.max_file_bytes:
        f.close()
        raise SubmissionError(f"{path}: file is {size} bytes, over the limit of {limits.max_file_bytes} bytes")
    return f


@dataclass
class _FileRead:
    """One reading of a submission file: the sha256 of its bytes, the bytes read (a file that grows past the
    size limit while it is read is refused) and its lines that count (non-blank, or not parsed)."""

    path: Path
    limits: Limits
    digest: Any = field(default_factory=hashlib.sha256)
    read: int = 0
    lines: int = 0

    def take(self, raw: bytes) -> None:
        """Account for ``raw``, just read."""
        self.digest.update(raw)
        self.read += len(raw)
        if self.read > self.limits.max_file_bytes:  # grew while reading
            raise SubmissionError(f"{self.path}: file is over the limit of {self.limits.max_file_bytes} bytes")


def _text_lines(f: BinaryIO, r: _FileRead, problems: _Problems) -> Iterator[tuple[int, str]]:
    """The non-blank lines of the file (line number, text), read once: a line over the size limit or not UTF-8
    is a problem (counted, not parsed); a byte order mark is a problem and is dropped."""
    lineno = 0
    while True:
        raw = f.readline(r.limits.max_line_bytes + 1)
        if not raw:
            break
        lineno += 1
        r.take(raw)
        if len(raw) > r.limits.max_line_bytes and not (raw.endswith(b"\n") and len(raw) == r.limits.max_line_bytes + 1):
            while not raw.endswith(b"\n"):  # skip the rest of the line unparsed
                raw = f.readline(1 << 20)
                if not raw:
                    break
                r.take(raw)
            r.lines += 1
            problems.add(f"line {lineno}: line is over {r.limits.max_line_bytes} bytes; not parsed")
            continue
        line = raw[:-1] if raw.endswith(b"\n") else raw
        if lineno == 1 and line.startswith(_BOM):
            problems.add("line 1: file starts with a UTF-8 byte order mark (BOM); write UTF-8 without a BOM")
            line = line[len(_BOM) :]
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as e:
            r.lines += 1
            problems.add(f"line {lineno}: not valid UTF-8 (byte offset {e.start})")
            continue
        if not text.strip(" \t\r"):
            continue
        r.lines += 1
        yield lineno, text


def _coverage_problem(
    dataset: EvalDataset, meta: SubmissionMeta, responses: dict[tuple[str, int], str], *, allow_partial: bool
) -> str | None:
    """The problem of the responses the submission lacks (every sample of every instance of the declared
    conditions; with ``allow_partial``, of the instances it answers at all), or None."""
    wanted = meta.conditions
    selected = dataset.select(wanted)
    answered = {i for i, _ in responses}
    covered = [i for i in selected if i.id in answered]
    expected = covered if allow_partial else selected
    missing = [(i.id, s) for i in expected for s in range(meta.samples) if (i.id, s) not in responses]
    if not missing:
        return None
    shown = ", ".join(f"{i} sample {s}" for i, s in missing[:MISSING_SHOWN])
    more = ", ..." if len(missing) > MISSING_SHOWN else ""
    return (
        f"missing {len(missing)} responses (conditions {', '.join(wanted)}, samples={meta.samples}): "
        f"{shown}{more}" + _coverage_hint(len(covered), len(selected), allow_partial)
    )


def _rejection(path: Path, problems: _Problems) -> SubmissionError:
    """The error listing a rejected submission's problems (the first ``max_errors_listed``, then a count)."""
    listed = list(problems.listed)
    lines = [f"{path}: submission rejected, {problems.total} problem{'s' if problems.total > 1 else ''}:"]
    lines += [f"  {p}" for p in listed]
    if problems.total > len(listed):
        lines.append(f"  ... and {problems.total - len(listed)} more")
    return SubmissionError("\n".join(lines), listed, problems.total)


def validate_submission(
    path: str | os.PathLike,
    dataset: EvalDataset,
    meta: SubmissionMeta,
    limits: Limits = Limits(),
    *,
    allow_partial: bool = False,
) -> Submission:
    """Check ``path`` against ``dataset`` and ``meta`` in one pass; raise ``SubmissionError`` listing every problem.
    ``allow_partial``: instances with no response at all are left out (the result is partial) instead of missing."""
    path = Path(path)
    wanted = meta.conditions
    by_id = dataset.by_id()
    problems = _Problems(limits.max_errors_listed)
    responses: dict[tuple[str, int], str] = {}
    first_line: dict[tuple[str, int], int] = {}
    r = _FileRead(path, limits)
    with _open_regular(path, limits) as f:
        for where, lineno, text, problem in _entries(path, f, r, problems, by_id):
            if problem is not None or text is None:
                problems.add(f"{where}: {problem}")
                continue
            for msg in _check_line(text, lineno, meta, wanted, by_id, limits, responses, first_line):
                problems.add(f"{where}: {msg}")
    if r.lines == 0:
        problems.add("file is empty: no responses")
    elif (missing := _coverage_problem(dataset, meta, responses, allow_partial=allow_partial)) is not None:
        problems.add(missing)
    if problems.total:
        raise _rejection(path, problems)
    return Submission(meta, responses, path, r.digest.hexdigest(), r.lines)


def _entries(
    path: Path, f: BinaryIO, r: _FileRead, problems: _Problems, by_id: Mapping[str, Any]
) -> Iterator[tuple[str, int, str | None, str | None]]:
    """The file's submission lines as (where, line number, text, problem): its own lines, or the responses of a
    harness's output (an lm-eval samples file, an inspect log: ``phr.eval.harness_logs``; the text each sent
    must be its instance's prompt)."""
    from phr.eval import harness_logs as logs

    kind = logs.kind_of(path, f.peek(4096)[:4096] if hasattr(f, "peek") else b"")
    lines = _text_lines(f, r, problems)
    if kind is None:
        return ((f"line {n}", n, text, None) for n, text in lines)
    prompts = {iid: inst.prompt for iid, inst in by_id.items()}
    if kind == "lm-eval":
        return logs.lm_eval_entries(lines, prompts)
    for chunk in iter(lambda: f.read(1 << 20), b""):  # the digest and size of its bytes: inspect reads the file itself
        r.take(chunk)
    r.lines = 1
    try:
        return iter(list(logs.inspect_entries(path, prompts)))
    except logs.HarnessLogError as e:
        raise SubmissionError(str(e)) from None


def _coverage_hint(covered: int, selected: int, allow_partial: bool) -> str:
    """What a submission with instances left out covers, and how to score it anyway."""
    if allow_partial or covered == selected:
        return ""
    return (
        f"; coverage: partial, {covered} of {selected} instances answered (--allow-partial scores the answered "
        "instances as a partial result, shown unranked)"
    )


def _parse_object(text: str) -> tuple[Any, str | None]:
    """(the JSON value of a line, None), or (None, why the line is not valid JSON: NaN, Infinity and a key
    given twice are refused)."""
    try:
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicate_keys), None
    except _BadConstant as e:
        msg = str(e)
        return None, msg if msg.startswith("key ") else f"{msg} is not allowed (JSON has no NaN or Infinity)"
    except json.JSONDecodeError as e:
        return None, f"not valid JSON ({e.msg} at column {e.colno})"
    except RecursionError:
        return None, "not valid JSON (nested too deeply)"
    except ValueError as e:
        return None, f"not valid JSON ({clip(str(e), 160)})"


def _key_problems(obj: dict) -> list[str]:
    """The keys a line's object lacks, and those it has that are not ``KEYS``."""
    out: list[str] = []
    missing = [k for k in KEYS if k not in obj]
    extra = [k for k in obj if k not in KEYS]
    if missing:
        out.append(f"missing key{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}")
    if extra:
        out.append(
            f"unknown key{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))} (allowed: {', '.join(KEYS)})"
        )
    return out


def _instance_problem(iid: object, by_id: dict, wanted: tuple[str, ...]) -> str | None:
    """What is wrong with a line's ``instance_id`` (a string naming an instance of a declared condition)."""
    if not isinstance(iid, str):
        return f"field 'instance_id' must be a string, got {_kind(iid)}"
    if (bad := _surrogate(iid)) is not None:
        return f"field 'instance_id' {bad}"
    if iid not in by_id:
        return f"unknown instance_id {iid!r}"
    if by_id[iid].condition not in wanted:
        return (
            f"instance_id {iid!r} is condition {by_id[iid].condition}, which the submission does not "
            f"declare (conditions: {', '.join(wanted)})"
        )
    return None


def _sample_problem(sample: object, samples: int) -> str | None:
    """What is wrong with a line's ``sample`` (an integer in 0..samples-1)."""
    if isinstance(sample, bool) or not isinstance(sample, int):
        return f"field 'sample' must be an integer, got {_kind(sample)}"
    if not 0 <= sample < samples:
        return f"sample {sample} is out of range 0..{samples - 1} (declared samples={samples})"
    return None


def _response_problem(response: object, limits: Limits) -> str | None:
    """What is wrong with a line's ``response`` (a string within the length limit)."""
    if not isinstance(response, str):
        return f"field 'response' must be a string, got {_kind(response)}"
    if len(response) > limits.max_response_chars:
        return f"field 'response' has {len(response)} characters, over the limit of {limits.max_response_chars}"
    if (bad := _surrogate(response)) is not None:
        return f"field 'response' {bad}"
    return None


def _none_or_listed(out: list[str], problem: str | None) -> bool:
    """Whether there is no ``problem``; one there is goes to ``out``."""
    if problem is not None:
        out.append(problem)
    return problem is None


def _check_line(
    text: str,
    lineno: int,
    meta: SubmissionMeta,
    wanted: tuple[str, ...],
    by_id: dict,
    limits: Limits,
    responses: dict,
    first_line: dict,
) -> list[str]:
    """The problems of one line; records its response when it has none."""
    obj, problem = _parse_object(text)
    if problem is not None:
        return [problem]
    if not isinstance(obj, dict):
        return [f"expected a JSON object, got {_kind(obj).split()[0]}"]
    out = _key_problems(obj)
    iid, sample, response = obj.get("instance_id"), obj.get("sample"), obj.get("response")
    ok_id = "instance_id" in obj and _none_or_listed(out, _instance_problem(iid, by_id, wanted))
    ok_sample = "sample" in obj and _none_or_listed(out, _sample_problem(sample, meta.samples))
    ok_response = "response" in obj and _none_or_listed(out, _response_problem(response, limits))
    if ok_id and ok_sample:
        key = (iid, sample)
        if key in first_line:
            out.append(f"duplicate response for {iid!r} sample {sample} (first on line {first_line[key]})")
        else:
            first_line[key] = lineno
            if ok_response and not out:
                responses[key] = response
    return out


def write_submission(
    path: str | os.PathLike, responses: Iterable[tuple[str, int, str]], meta: SubmissionMeta | None = None
) -> int:
    """Write ``(instance_id, sample, response)`` triples as canonical JSONL, atomically (temp file +
    ``os.replace``), in the order given; with ``meta``, also its sidecar ``<name>.meta.json``. Returns the count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            for iid, sample, response in responses:
                f.write(
                    json.dumps(
                        {"instance_id": iid, "sample": sample, "response": response},
                        ensure_ascii=False,
                        allow_nan=False,
                    )
                    + "\n"
                )
                n += 1
            f.flush()
            os.fsync(f.fileno())
        honour_umask(tmp)  # mkstemp makes 0600 files
        os.replace(tmp, path)
    except UnicodeEncodeError as e:
        os.unlink(tmp)
        raise SubmissionError(f"response {n} cannot be written as UTF-8 ({e.reason}): lone surrogate?") from None
    except BaseException:
        os.unlink(tmp)
        raise
    if meta is not None:
        side = default_meta_path(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{side.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({k: v for k, v in meta.as_dict().items() if v is not None}, f, ensure_ascii=False, indent=2)
            f.write("\n")
        honour_umask(tmp)
        os.replace(tmp, side)
    return n

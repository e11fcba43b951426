"""Hallucination-R1 source loaders: SimpleQuestions (Wikidata-mapped), PopQA and TruthfulQA -> ``HQuestion``.

Each loader reads the benchmark's released files from ``source_dir`` (a folder or one file) or, with
``online=True``, the Hub copy named by HUB; rows keep their source id, split and license. Errors name the file
and row (``MalformedSourceError``); rows a benchmark cannot use (a SimpleQuestions object without an English
label) are skipped, counted in ``LoadResult.skipped`` and listed by ``collect_rejected``. docs/hr1.md.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from phr.config.ops import StandIn
from phr.core.registry import Registry
from phr.hr1.ids import content_id
from phr.hr1.records import HQuestion

from .sources import _common as c

LICENSES = {
    "simplequestions": "CC-BY-3.0",  # questions; answer labels are Wikidata labels (CC0)
    "popqa": "MIT",
    "truthfulqa": "Apache-2.0",
}
TITLES = {"simplequestions": "SimpleQuestions (Wikidata)", "popqa": "PopQA", "truthfulqa": "TruthfulQA"}
HUB = {  # (hub id, config, {our split: hub split})
    "simplequestions": ("s-nlp/sqwd", "answerable", {"train": "train", "valid": "valid", "test": "test"}),
    "popqa": ("akariasai/PopQA", None, {"test": "test"}),
    "truthfulqa": ("truthfulqa/truthful_qa", "generation", {"validation": "validation"}),
}
SQ_FILES = {
    "train": "annotated_wd_data_train_answerable.txt",
    "valid": "annotated_wd_data_valid_answerable.txt",
    "test": "annotated_wd_data_test_answerable.txt",
}
SQ_LABELS = "reverse_vocab_wikidata_en.json"
POPQA_FILES = {"test": "popQA.tsv"}
TQA_FILES = {"validation": "TruthfulQA.csv"}
# the columns each loader reads (released name first, then the Hub's): missing ones are named at header level
POPQA_COLUMNS = ("question", "possible_answers")
TQA_COLUMNS = (("Question", "question"), ("Best Answer", "best_answer"), ("Correct Answers", "correct_answers"))


class Loader(Protocol):
    """A source loader: the released files at ``source_dir`` (a folder or one file), or the Hub copy."""

    def __call__(self, source_dir: str | Path | None = None, *, online: bool = False) -> LoadResult: ...


#: the loaders by source name (``@LOADERS.register(NAME)``); ``load_hr1_source`` reads them
LOADERS: Registry[Loader] = Registry("Hallucination-R1 source")


@dataclass
class LoadResult:
    """The questions of one load, and what was skipped ({reason: count}) with examples."""

    source: str
    questions: list[HQuestion]
    skipped: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    origin: str = ""
    stand_in: str | None = None  # the stand-in split rule applied, if any

    def head(self, n: int) -> LoadResult:
        """The same load with its first ``n`` questions."""
        return replace(self, questions=self.questions[:n])

    def summary(self) -> str:
        extra = "; ".join(f"{n} {why}" for why, n in self.skipped.items())
        return f"{TITLES[self.source]}: {len(self.questions)} questions from {self.origin}" + (
            f" ({extra})" if extra else ""
        )


def _q(
    source: str, split: str, row_id: str, question: str, answers: Sequence[str], key: str | None = None, **meta: object
) -> HQuestion:
    """One question; its id from its content (``phr.hr1.ids.content_id``: source, text, the source's own
    ``key``), the same in every file; ``row_id`` is where it sits in this file."""
    text = " ".join(str(question).split())
    return HQuestion(
        id=content_id(source, text, key),
        source=source,
        split=split,
        source_row_id=row_id,
        question=text,
        answers=tuple(dict.fromkeys(a.strip() for a in answers if a and a.strip())),
        license=LICENSES[source],
        meta={k: str(v) for k, v in meta.items() if v is not None and str(v) != ""},
    )


def _answers_or_problem(answers: list[str], what: str) -> list[str]:
    if not any(a.strip() for a in answers):
        raise c.RowProblem(f"no {what}")
    return answers


# ---- SimpleQuestions ------------------------------------------------------------------------------------


def _sq_labels(folder: Path) -> dict[str, list[str]]:
    path = folder / SQ_LABELS
    if not path.is_file():
        raise c.SourceNotFoundError(
            f"{path} not found: SimpleQuestions (Wikidata) has ids only; its answer text comes from the English "
            f"label file {SQ_LABELS} ({{label: QID}}) next to the question files"
        )
    try:
        data = json.loads(c.read_text(path))
    except json.JSONDecodeError as e:
        raise c.MalformedSourceError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(data, dict):
        raise c.MalformedSourceError(f"{path}: expected one JSON object {{label: QID}}")
    out: dict[str, list[str]] = {}
    for label, qid in data.items():
        out.setdefault(str(qid), []).append(str(label))
    return out


def _sq_row(row: list[str] | dict, split: str, i: int, labels: dict[str, list[str]] | None) -> HQuestion:
    if isinstance(row, dict):  # Hub rows
        subj, prop, obj, question = (c.text(row, k) for k in ("subject", "property", "object", "question"))
        answers = [str(row.get("object_label") or "")]
    else:
        if len(row) != 4:
            raise c.RowProblem(f"{len(row)} fields; expected 4 (subject, property, object, question)")
        subj, prop, obj, question = (x.strip() for x in row)
        answers = (labels or {}).get(obj, [])
    if not question:
        raise c.RowProblem("empty question")
    if not any(a.strip() for a in answers):
        raise c.RowRejected(f"object {obj} has no English label")
    return _q(
        "simplequestions",
        split,
        str(i),
        question,
        answers,
        f"{subj} {prop} {obj}",
        subject=subj,
        property=prop,
        object=obj,
    )


def _sq_parser(split: str, labels: dict[str, list[str]] | None) -> Callable[[c.Row, int], HQuestion]:
    """The row parser of one SimpleQuestions split file."""
    return lambda row, i: _sq_row(row, split, i, labels)


@LOADERS.register("simplequestions")
def load_simplequestions(
    source_dir: str | Path | None = None, *, online: bool = False, splits: str | Sequence[str] | None = None
) -> LoadResult:
    """SimpleQuestions (Wikidata-mapped, Diefenbach et al. 2017): TSV ``subject, property, object, question``
    without header; the answer is the object's English label from ``reverse_vocab_wikidata_en.json``.
    Rows whose object has no label are skipped and counted. Ids: the text with subject, property and object
    (``phr.hr1.ids.content_id``); ``source_row_id``: the 0-based line index."""
    wanted = c.wanted_list(splits)
    out: list[HQuestion] = []
    ids = c.RowIndex(TITLES["simplequestions"], dedupe=True)
    with c.collect_rejected() as rejected:
        if source_dir is not None:
            files = c.source_files(
                source_dir, SQ_FILES, wanted, key="simplequestions", on_missing=_missing("simplequestions")
            )
            labels = _sq_labels(files[0][1].parent)
            for split, path in files:
                out += c.parse_rows(
                    str(path), c.csv_rows(path, delimiter="\t", header=False), _sq_parser(split, labels), ids
                )
            origin = str(Path(source_dir))
        elif online:
            for split in wanted or list(HUB["simplequestions"][2]):
                origin = _hub_split(out, "simplequestions", split, (), lambda r, s, i: _sq_row(r, s, i, None), ids)
        else:
            raise _missing("simplequestions")("")
    return _result("simplequestions", out, rejected, origin)


# ---- PopQA ------------------------------------------------------------------------------------------------


def _popqa_row(row: dict, split: str, i: int) -> HQuestion:
    raw = row.get("possible_answers")
    if isinstance(raw, str):
        try:
            answers = json.loads(raw)
        except json.JSONDecodeError:
            raise c.RowProblem(f"possible_answers is not a JSON list: {raw[:60]!r}") from None
    else:
        answers = raw
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise c.RowProblem("possible_answers must be a JSON list of strings")
    answers = _answers_or_problem(answers, "possible_answers")
    own = None if row.get("id") in (None, "") else str(row.get("id"))
    meta = {k: row.get(k) for k in ("subj", "prop", "obj", "s_pop", "o_pop", "subj_id", "prop_id", "obj_id")}
    return _q("popqa", split, own or str(i), c.text(row, "question"), answers, own, **meta)


@LOADERS.register("popqa")
def load_popqa(source_dir: str | Path | None = None, *, online: bool = False) -> LoadResult:
    """PopQA (Mallen et al. 2023): ``popQA.tsv`` (or a parquet export with the same columns): ``question``,
    ``possible_answers`` (a JSON list of aliases), ``subj``, ``prop``, ``obj``, popularity ``s_pop``/``o_pop``.
    One split, ``test``. Ids: the text with the ``id`` column when there is one (``phr.hr1.ids.content_id``);
    ``source_row_id``: the ``id`` column, else the 0-based row index."""
    out: list[HQuestion] = []
    ids = c.RowIndex(TITLES["popqa"], dedupe=True)
    with c.collect_rejected() as rejected:
        if source_dir is not None:
            path = Path(source_dir)
            if path.is_dir():
                cands = [path / "popQA.tsv", *sorted(path.glob("*.parquet")), *sorted((path / "popqa").glob("*"))]
                path = next((p for p in cands if p.is_file()), path / "popQA.tsv")
            if not path.is_file():
                raise _missing("popqa")(f"{path} does not exist")
            rows = (
                _parquet_rows(path, POPQA_COLUMNS)
                if path.suffix == ".parquet"
                else c.csv_rows(path, delimiter="\t", required=POPQA_COLUMNS)
            )
            out += c.parse_rows(str(path), rows, lambda r, i: _popqa_row(r, "test", i), ids)
            origin = str(path)
        elif online:
            origin = _hub_split(out, "popqa", "test", POPQA_COLUMNS, _popqa_row, ids)
        else:
            raise _missing("popqa")("")
    return _result("popqa", out, rejected, origin)


def _parquet_rows(path: Path, required: Sequence[c.Column] = ()) -> Iterator[c.Located]:
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(path)
        c.check_columns(path, file.schema_arrow.names, required)  # before reading: names must be unique
        table = file.read()
    except c.MalformedSourceError:
        raise
    except Exception as e:  # noqa: BLE001 - any unreadable file
        raise c.MalformedSourceError(f"{path}: not a readable parquet file ({e})") from None
    for i, row in enumerate(table.to_pylist()):
        yield f"row {i + 1}", row


# ---- TruthfulQA --------------------------------------------------------------------------------------------


def _split_answers(value: object) -> list[str]:
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if str(v).strip()]
    return [a.strip() for a in str(value or "").split(";") if a.strip()]


def _tqa_row(row: dict, split: str, i: int) -> HQuestion:
    best = c.text(row, "Best Answer" if "Best Answer" in row else "best_answer")
    correct = _split_answers(row.get("Correct Answers", row.get("correct_answers")))
    answers = [best, *[a for a in correct if a != best]]
    return _q(
        "truthfulqa",
        split,
        str(i),
        c.text(row, "Question" if "Question" in row else "question"),
        answers,
        type=row.get("Type", row.get("type")),
        category=row.get("Category", row.get("category")),
    )


@LOADERS.register("truthfulqa")
def load_truthfulqa(source_dir: str | Path | None = None, *, online: bool = False) -> LoadResult:
    """TruthfulQA (Lin et al. 2022), generation task: ``TruthfulQA.csv`` (``Type, Category, Question, Best
    Answer, Correct Answers, Incorrect Answers, Source``; answer lists ``; ``-separated). Reference answer:
    ``Best Answer`` first, then the other correct answers (the paper does not say which it used, docs/hr1.md).
    Split ``validation`` (the only one); ids: the text (``phr.hr1.ids.content_id``); ``source_row_id``: the
    0-based data row index."""
    out: list[HQuestion] = []
    ids = c.RowIndex(TITLES["truthfulqa"], dedupe=True)
    with c.collect_rejected() as rejected:
        if source_dir is not None:
            files = c.source_files(source_dir, TQA_FILES, None, key="truthfulqa", on_missing=_missing("truthfulqa"))
            for _part, path in files:  # one split: any file name (e.g. a sample) is the validation split
                rows = c.csv_rows(path, required=TQA_COLUMNS)
                out += c.parse_rows(str(path), rows, lambda r, i: _tqa_row(r, "validation", i), ids)
            origin = str(Path(source_dir))
        elif online:
            origin = _hub_split(out, "truthfulqa", "validation", TQA_COLUMNS, _tqa_row, ids)
        else:
            raise _missing("truthfulqa")("")
    return _result("truthfulqa", out, rejected, origin)


# ---- shared -------------------------------------------------------------------------------------------------


def _hub_split(
    out: list[HQuestion],
    source: str,
    split: str,
    required: Sequence[c.Column],
    parse: Callable[[dict, str, int], HQuestion | None],
    ids: c.RowIndex,
) -> str:
    """Append the ``split`` of ``source``'s Hub dataset to ``out``, each row parsed by ``parse(row, split, i)``
    (the ``required`` columns checked first); the origin it names (``hf://datasets/<id>``)."""
    hub_id, config, split_map = HUB[source]
    data = c.hub_load(hub_id, TITLES[source], config, split_map[split])
    origin = f"hf://datasets/{hub_id}"
    rows = c.hub_rows(data, required=required, origin=origin)
    out += c.parse_rows(origin, rows, lambda r, i: parse(r, split, i), ids)
    return origin


def _missing(source: str) -> Callable[[str], c.SourceNotFoundError]:
    expected = {
        "simplequestions": f"{', '.join(SQ_FILES.values())} and {SQ_LABELS}",
        "popqa": "popQA.tsv (or a parquet file with its columns)",
        "truthfulqa": "TruthfulQA.csv",
    }[source]

    def make(detail: str = "") -> c.SourceNotFoundError:
        return c.not_found(TITLES[source], HUB[source][0], expected, None, detail)

    return make


def _result(source: str, questions: list[HQuestion], rejected: list[str], origin: str) -> LoadResult:
    skipped: Counter = Counter()
    for r in rejected:
        if "has no English label" in r:
            skipped["objects without an English label"] += 1
        elif c.DUPLICATE_ROW in r:
            skipped["duplicate rows (kept once)"] += 1
        else:
            skipped[r.rsplit(": ", 1)[-1]] += 1
    return LoadResult(source, questions, skipped, rejected[:5], origin)


def load_hr1_source(name: str, source_dir: str | Path | None = None, *, online: bool = False) -> LoadResult:
    """``LOADERS[name](source_dir, online=online)``; an unknown name is a usage error naming the known."""
    if name not in LOADERS:
        raise c.SourceOptionError(f"unknown Hallucination-R1 source {name!r}; known: {', '.join(LOADERS)}")
    return LOADERS[name](source_dir, online=online)


def stand_in_split(result: LoadResult, rule: StandIn = "even-train-odd-test") -> tuple[LoadResult, LoadResult]:
    """Split one released split into a stand-in train and evaluation pair, for when only one split is at hand
    (the SimpleQuestions copy in ../shared/data is the test split): ``even-train-odd-test`` puts rows with an
    even 0-based index in ``train`` and odd ones in ``test``. Ids stay (they come from the content);
    ``meta['stand_in']`` names the rule and the released split, and corpora built from them say so on their card."""
    if rule != "even-train-odd-test":
        raise c.SourceOptionError(f"unknown stand-in split rule {rule!r}; known: even-train-odd-test")
    parts: dict[str, list[HQuestion]] = {"train": [], "test": []}
    for q in result.questions:
        new = "train" if int(q.source_row_id) % 2 == 0 else "test"
        meta = {**q.meta, "stand_in": f"{rule} of released split {q.split}"}
        parts[new].append(q.model_copy(update={"split": new, "meta": meta}))
    return tuple(  # type: ignore[return-value]
        LoadResult(result.source, parts[s], result.skipped, result.examples, result.origin, f"{rule} ({s})")
        for s in ("train", "test")
    )

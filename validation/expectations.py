"""Dataset-level expectations of a built PHRBench folder, as a Great Expectations suite that ships with it.

The row-level checks (``phr.validation.checks``) look at one premise at a time; this module pins what the
dataset as a whole looked like when it was built, so a download that lost, gained or changed rows is caught:

- per config (baseline / truthful / hallucinated): the exact row count, the column set, unique ids (and
  augmentation ids; question ids under B and B+T), no nulls in the required columns, the fixed condition,
  the id suffix (``-B`` / ``-T`` / ``-H<k>``), domain / task type / mutation type in their vocabularies,
  non-empty question, prompt and premise, the domain (and mutation type) distribution (KL divergence 0);
- per config, on small derived frames of group counts (one row per group: ``group``, ``rows``): the exact set
  of groups and the exact count of each, per domain, per (domain, subtype) and, under B+H, per
  (domain, mutation_type) and per mutation_type.

``build_suite(rows_by_config)`` derives the suites from the built rows; ``write_suite(folder, rows_by_config)``
writes them to ``validation/expectations.json`` inside the dataset folder (deterministic JSON: sorted keys, no
ids, timestamps or versions); ``run_suite(folder)`` runs the shipped suite with Great Expectations (ephemeral
context, pandas data source) on the folder's parquet files and turns each failed expectation into a
``Rejection("data/<config>", "expectations", "<expectation type> on <column>: <observed vs expected>")``.

The JSON is Great Expectations' own serialisation of an ``ExpectationSuite`` (``name``, ``expectations`` of
``{"type", "kwargs"}``) with one addition: ``meta.frame.group_by`` names the frame the suite runs on (``[]``:
the config's rows; otherwise the count-per-group frame). Building the JSON needs no Great Expectations import
(a build stays fast); running it does, and rejects any expectation GX cannot load.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from phr.bench.conditions import CONDITIONS, ConditionSpec, condition_spec
from phr.bench.folder import data_file
from phr.bench.instance import NOT_NULL
from phr.bench.records import Domain, MutationType, TaskType
from phr.core.report import Rejection

if TYPE_CHECKING:  # pragma: no cover - imported where they run (a build stays fast)
    import pandas as pd
    from great_expectations.data_context.types.base import ProgressBarsConfig
    from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

SUITE_FILE = "validation/expectations.json"
FORMAT = "phr-expectations/1"
CHECK = "expectations"

CONFIG_CONDITION = {c.config: c.value for c in CONDITIONS}
ID_SUFFIX = {c.config: c.id_regex for c in CONDITIONS}
DOMAINS = tuple(sorted(d.value for d in Domain))
MUTATION_TYPES = tuple(sorted(m.value for m in MutationType))
TASK_TYPES = tuple(sorted(t.value for t in TaskType))
REQUIRED = NOT_NULL


def _premise_columns(c: ConditionSpec) -> tuple[str, ...]:
    return (("premise", "augmentation_id") if c.premise else ()) + (("mutation_type",) if c.mutation else ())


REQUIRED_BY_CONFIG = {c.config: (*REQUIRED, *_premise_columns(c)) for c in CONDITIONS}
NULL_BY_CONFIG = {
    c.config: tuple(x for x in ("augmentation_id", "premise", "mutation_type") if x not in REQUIRED_BY_CONFIG[c.config])
    for c in CONDITIONS
}
UNIQUE_BY_CONFIG = {
    c.config: ("id", *(() if c.mutation else ("question_id",)), *(("augmentation_id",) if c.premise else ()))
    for c in CONDITIONS
}
NONEMPTY_BY_CONFIG = {c.config: ("question", "prompt", *(("premise",) if c.premise else ())) for c in CONDITIONS}
GROUPS_BY_CONFIG = {
    c.config: (("domain",), ("domain", "mutation_type"), ("domain", "subtype"), ("mutation_type",))
    if c.mutation
    else (("domain",), ("domain", "subtype"))
    for c in CONDITIONS
}
DISTRIBUTIONS_BY_CONFIG = {c.config: ("domain", *(("mutation_type",) if c.mutation else ())) for c in CONDITIONS}
KL_THRESHOLD = 1e-9  # "the built share ± 0", up to float rounding
GROUP_SEP = " / "
NULL_KEY = "(null)"
GROUP_COL, COUNT_COL = "group", "rows"


# ---- building the suite -------------------------------------------------------------------------------------------


def _e(type_: str, **kwargs: Any) -> dict:
    return {"type": type_, "kwargs": kwargs}


def group_key(row: dict, by: Iterable[str]) -> str:
    """``"Physics / Rule Contradiction"``: the group of a row, nulls as ``(null)``."""
    return GROUP_SEP.join(NULL_KEY if row.get(c) is None else str(row.get(c)) for c in by)


def group_counts(rows: list[dict], by: Iterable[str]) -> dict[str, int]:
    by = tuple(by)
    return dict(sorted(Counter(group_key(r, by) for r in rows).items()))


def _frame_name(config: str, by: tuple[str, ...]) -> str:
    return f"phrbench.{config}" + (f".count_per_{'_'.join(by)}" if by else "")


def _row_expectations(config: str, rows: list[dict]) -> list[dict]:
    columns = sorted({k for r in rows for k in r}) if rows else []
    out = [_e("expect_table_row_count_to_equal", value=len(rows))]
    if columns:
        out.append(_e("expect_table_columns_to_match_set", column_set=columns, exact_match=True))
    out += [_e("expect_column_values_to_be_unique", column=c) for c in UNIQUE_BY_CONFIG[config]]
    out += [_e("expect_column_values_to_not_be_null", column=c) for c in REQUIRED_BY_CONFIG[config]]
    out += [_e("expect_column_values_to_be_null", column=c) for c in NULL_BY_CONFIG[config]]
    out += [
        _e("expect_column_values_to_be_in_set", column="condition", value_set=[CONFIG_CONDITION[config]]),
        _e("expect_column_values_to_match_regex", column="id", regex=ID_SUFFIX[config]),
        _e("expect_column_values_to_be_in_set", column="domain", value_set=list(DOMAINS)),
        _e("expect_column_values_to_be_in_set", column="task_type", value_set=list(TASK_TYPES)),
    ]
    if condition_spec(config).mutation:
        out.append(_e("expect_column_values_to_be_in_set", column="mutation_type", value_set=list(MUTATION_TYPES)))
    out += [_e("expect_column_value_lengths_to_be_between", column=c, min_value=1) for c in NONEMPTY_BY_CONFIG[config]]
    for col in DISTRIBUTIONS_BY_CONFIG[config]:
        counts = group_counts(rows, (col,))
        if counts:
            n = sum(counts.values())
            out.append(
                _e(
                    "expect_column_kl_divergence_to_be_less_than",
                    column=col,
                    threshold=KL_THRESHOLD,
                    partition_object={"values": list(counts), "weights": [c / n for c in counts.values()]},
                )
            )
    return out


def _count_expectations(counts: dict[str, int]) -> list[dict]:
    return [
        _e("expect_table_row_count_to_equal", value=len(counts)),
        _e("expect_column_distinct_values_to_equal_set", column=GROUP_COL, value_set=list(counts)),
        _e(
            "expect_column_pair_values_to_be_in_set",
            column_A=GROUP_COL,
            column_B=COUNT_COL,
            value_pairs_set=[[k, n] for k, n in counts.items()],
        ),
    ]


def build_suite(rows_by_config: dict[str, list[dict]]) -> dict:
    """Expectation suites of each config (baseline / truthful / hallucinated present in ``rows_by_config``),
    derived from the built rows: ``{config: {"rows": n, "suites": [GX suite dict, ...]}}``. JSON-serialisable and
    deterministic (no ids, timestamps or versions)."""
    out: dict = {}
    for config in CONFIG_CONDITION:
        if config not in rows_by_config:
            continue
        rows = list(rows_by_config[config])
        suites = [
            {
                "name": _frame_name(config, ()),
                "meta": {"frame": {"group_by": []}},
                "expectations": _row_expectations(config, rows),
            }
        ]
        for by in GROUPS_BY_CONFIG[config]:
            suites.append(
                {
                    "name": _frame_name(config, by),
                    "meta": {"frame": {"group_by": list(by)}},
                    "expectations": _count_expectations(group_counts(rows, by)),
                }
            )
        out[config] = {"rows": len(rows), "suites": suites}
    return out


def suite_json(rows_by_config: dict[str, list[dict]]) -> str:
    doc = {"format": FORMAT, "engine": "great_expectations>=1", "configs": build_suite(rows_by_config)}
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def write_suite(folder: str | Path, rows_by_config: dict[str, list[dict]]) -> Path:
    """Write ``validation/expectations.json`` inside the dataset folder (byte-identical for the same rows)."""
    path = Path(folder) / SUITE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(suite_json(rows_by_config), encoding="utf-8")
    return path


# ---- running it ---------------------------------------------------------------------------------------------------


def _quiet_logs() -> None:
    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("great_expectations."):
            logging.getLogger(name).setLevel(logging.NOTSET)  # inherit ERROR from the package logger


def _gx() -> tuple[ModuleType, type[ProgressBarsConfig], type[ExpectationConfiguration]]:
    """Import Great Expectations quietly: no usage statistics, no progress bars, errors only in the logs."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    _quiet_logs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig
        from great_expectations.expectations.expectation_configuration import ExpectationConfiguration
    _quiet_logs()
    return gx, ProgressBarsConfig, ExpectationConfiguration


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return repr(v)


def _ids(result: dict, limit: int = 5) -> str:
    idx = result.get("partial_unexpected_index_list") or result.get("unexpected_index_list") or []
    names = list(dict.fromkeys(str(i.get("id", i.get(GROUP_COL))) if isinstance(i, dict) else str(i) for i in idx))
    if not names:
        return ""
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return f" ({'id' if len(names) == 1 else 'ids'} {', '.join(names[:limit])}{more})"


def _values(result: dict, limit: int = 5) -> str:
    vals = result.get("partial_unexpected_counts") or []
    items = [f"{_fmt(v['value'])} x{v['count']}" if v.get("count", 1) > 1 else _fmt(v["value"]) for v in vals[:limit]]
    return f"; found {', '.join(items)}" if items else ""


def _shares(part: dict | None) -> str:
    if not part:
        return "?"
    return "{" + ", ".join(f"{v}: {w:.3f}" for v, w in zip(part.get("values", []), part.get("weights", []))) + "}"


def describe_failure(type_: str, kwargs: dict, result: dict, group_by: list[str]) -> str:
    """``"<expectation type> on <column>: <observed vs expected>"`` for one failed expectation."""
    frame = f"count per ({', '.join(group_by)})" if group_by else None
    column = kwargs.get("column")
    if column is None and "column_A" in kwargs:
        column = f"{kwargs['column_A']}, {kwargs['column_B']}"
    where = frame or column or "table"
    obs = result.get("observed_value")
    if type_ == "expect_table_row_count_to_equal":
        what = "groups" if frame else "rows"
        detail = f"observed {obs} {what}, expected {kwargs.get('value')}"
    elif type_ in ("expect_table_columns_to_match_set", "expect_table_columns_to_match_ordered_list"):
        expected = kwargs.get("column_set") or kwargs.get("column_list") or []
        found = obs or []
        missing = [c for c in expected if c not in found]
        extra = [c for c in found if c not in expected]
        detail = f"missing columns {missing}, unexpected columns {extra}"
    elif type_ == "expect_column_distinct_values_to_equal_set":
        extra = result.get("partial_unexpected_list") or []
        missing = result.get("partial_missing_list") or []
        if obs is not None and not (extra or missing):
            expected = kwargs.get("value_set") or []
            extra = [v for v in obs if v not in expected]
            missing = [v for v in expected if v not in obs]
        detail = f"unexpected values {extra}, missing values {missing}"
    elif type_ == "expect_column_pair_values_to_be_in_set":
        expected = {str(k): v for k, v in (kwargs.get("value_pairs_set") or [])}
        pairs = result.get("partial_unexpected_list") or []
        if frame:
            parts = [f"{k!r}: observed {n}, expected {expected.get(str(k), 0)}" for k, n in pairs]
            detail = "; ".join(parts) or f"{result.get('unexpected_count')} groups off"
        else:
            detail = f"{result.get('unexpected_count')} pairs not in the expected set: {pairs[:5]}"
    elif type_ == "expect_column_kl_divergence_to_be_less_than":
        d = result.get("details") or {}
        kl = "infinite (a value outside the built ones)" if obs is None else _fmt(obs)
        detail = (
            f"KL divergence {kl} >= {kwargs.get('threshold')}: observed shares "
            f"{_shares(d.get('observed_partition'))} vs built {_shares(d.get('expected_partition'))}"
        )
    elif "unexpected_count" in result:
        expect = {
            "expect_column_values_to_be_unique": "unique values",
            "expect_column_values_to_not_be_null": "no nulls",
            "expect_column_values_to_be_null": "nulls only",
            "expect_column_values_to_be_in_set": f"values in {kwargs.get('value_set')}",
            "expect_column_values_to_match_regex": f"values matching {kwargs.get('regex')!r}",
            "expect_column_value_lengths_to_be_between": f"lengths in [{kwargs.get('min_value')}, {kwargs.get('max_value', '')}]".replace(
                ", ]", ", ...]"
            ),
        }.get(type_, f"{type_} to hold")
        n, total = result.get("unexpected_count"), result.get("element_count")
        found = "" if type_ == "expect_column_values_to_not_be_null" else _values(result)
        detail = f"{n} of {total} rows fail{_ids(result)}{found}; expected {expect}"
    else:
        detail = f"observed {_fmt(obs)}, expected {json.dumps(kwargs, sort_keys=True, default=str)}"
    return f"{type_} on {where}: {detail}"


def _load(folder: Path) -> tuple[dict | None, list[Rejection]]:
    path = folder / SUITE_FILE
    if not path.exists():
        return None, [Rejection(SUITE_FILE, CHECK, "missing: the dataset ships no expectation suite")]
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        configs = doc["configs"]
        if doc.get("format") != FORMAT or not isinstance(configs, dict):
            raise ValueError(f"format {doc.get('format')!r}, expected {FORMAT!r}")
    except Exception as e:  # unreadable suite = a failed check, not a crash
        return None, [Rejection(SUITE_FILE, CHECK, f"suite does not parse: {e}")]
    return doc, []


def _frame(rows: list[dict], by: list[str]) -> pd.DataFrame:
    import pandas as pd

    counts = group_counts(rows, by)
    return pd.DataFrame({GROUP_COL: list(counts), COUNT_COL: list(counts.values())})


def run_suite(folder: str | Path) -> list[Rejection]:
    """Run the folder's shipped suite on its parquet files; one Rejection per failed expectation."""
    import pyarrow.parquet as pq

    folder = Path(folder)
    doc, problems = _load(folder)
    if doc is None:
        return problems
    gx, ProgressBarsConfig, ExpectationConfiguration = _gx()
    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    source = ctx.data_sources.add_pandas("phr")
    out: list[Rejection] = []
    for config in sorted(doc["configs"]):
        where = f"data/{config}"
        path = data_file(folder, config)
        if path is None:
            out.append(Rejection(where, CHECK, f"no data file data/{config}-*.parquet for the suite's config"))
            continue
        table = pq.read_table(path)
        rows, df = table.to_pylist(), table.to_pandas()
        for k, spec in enumerate(doc["configs"][config].get("suites", [])):
            by = list((spec.get("meta") or {}).get("frame", {}).get("group_by") or [])
            try:
                exps = [
                    ExpectationConfiguration(type=e["type"], kwargs=e.get("kwargs", {})).to_domain_obj()
                    for e in spec.get("expectations", [])
                ]
                suite = gx.ExpectationSuite(name=spec.get("name") or f"{config}-{k}", expectations=exps)
            except Exception as e:
                out.append(Rejection(where, CHECK, f"suite {spec.get('name')!r} does not load: {e}"))
                continue
            frame = _frame(rows, by) if by else df
            batch = (
                source.add_dataframe_asset(f"{config}-{k}")
                .add_batch_definition_whole_dataframe("all")
                .get_batch(batch_parameters={"dataframe": frame})
            )
            index_col = GROUP_COL if by else "id"
            fmt: dict[str, Any] = {"result_format": "COMPLETE"}
            if index_col in frame.columns:
                fmt["unexpected_index_column_names"] = [index_col]
            result = batch.validate(suite, result_format=fmt)
            for r in result.results:
                if r.success:
                    continue
                cfg = r.expectation_config
                info = r.exception_info or {}
                if info.get("raised_exception"):
                    msg = str(info.get("exception_message") or "error").splitlines()[0]
                    out.append(
                        Rejection(
                            where,
                            CHECK,
                            f"{cfg.type} on {cfg.kwargs.get('column', 'table')}: could not be evaluated: {msg}",
                        )
                    )
                else:
                    out.append(
                        Rejection(where, CHECK, describe_failure(cfg.type, dict(cfg.kwargs), dict(r.result or {}), by))
                    )
    return out


__all__ = [
    "SUITE_FILE",
    "build_suite",
    "write_suite",
    "run_suite",
    "suite_json",
    "describe_failure",
    "group_counts",
    "KL_THRESHOLD",
]

"""Eval's typed artifacts (phr.eval.results) and the metric catalogue (phr.bench.metrics): results.json written by
toolkit 0.1.0 (schema_version 1) still loads, renders in the report and on the leaderboard, and publishes.

tests/fixtures/results_v1/ holds what 0.1.0 wrote for `phr-publish eval phrbench --model local:smollm2 --samples 2
--limit 3 --max-tokens 24` on PHRBench-mini: run.json, scores/results.json and scores/report.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from phr.bench.metrics import (
    CATALOGUE,
    CONDITION_SUFFIX,
    INSIGHTFUL,
    LEADERBOARD,
    REQUIRED,
    RESOLUTIONS,
    label,
    metric,
    name_of,
    rate_of,
    section,
)
from phr.config.ops import PushResultsConfig
from phr.eval.report import render_report
from phr.eval.results import (
    SCHEMA_VERSION,
    Result,
    ResultsError,
    RunManifest,
    load_result,
    normalize,
    read_result,
    read_result_file,
    read_run_manifest,
)
from phr.leaderboard.page import render_html, render_markdown, write_leaderboard
from phr.leaderboard.repo import collect_results, push_results, render_card, result_path

V1 = Path(__file__).parent / "fixtures" / "results_v1"


def test_a_v1_result_reads_as_a_typed_v2_result():
    raw = json.loads((V1 / "results.json").read_text())
    assert raw["schema_version"] == 1 and "standard_errors" not in raw
    res = read_result_file(V1 / "results.json")
    assert isinstance(res, Result) and res.schema_version == SCHEMA_VERSION == 2
    assert res.run_id == "4576569d6e87" and res.metrics == raw["metrics"] and res.standard_errors == {}
    assert res.tables.by_condition["B+H"].n == 18 and res.tables.by_condition["B"].OL == 23.833333
    assert res.tables.per_mutation_type["State Distortion"].h_minus_t.UI == -0.339642
    assert res.tables.cell_errors is None and res.bootstrap is None
    assert res.counts.questions == 3 and res.config["reference_scorer"]["spec"] == "local:smollm2"
    # everything 0.1.0 wrote is kept; only the version changes
    again = res.as_json()
    assert {k: v for k, v in again.items() if k not in ("schema_version", "standard_errors")} == {
        k: v for k, v in raw.items() if k != "schema_version"
    }
    assert read_result(again) == res
    # the old key access keeps working
    assert res["metrics"]["accuracy_bh"] == 0.166667 and res.get("nope") is None and "tables" in res


def test_a_v1_result_renders_the_report_0_1_0_wrote():
    assert render_report(read_result_file(V1 / "results.json")) == (V1 / "report.md").read_text()


def test_a_v1_result_loads_and_renders_on_the_leaderboard(tmp_path):
    [rec] = collect_results([V1 / "results.json"])
    assert rec.model == "local:smollm2" and rec.run_id == "4576569d6e87"
    md = render_markdown([rec])
    row = next(ln for ln in md.splitlines() if "local:smollm2" in ln)
    assert (
        row == "| 1 | local:smollm2 | 30fc7cc64f0d | 0.000 | 0.167 | +0.167 |  | 0.167 | -0.167 | +0.000 | 21.667 "
        "| 1.841 | 0.611 | 0.000 |  |  |  |  | 2026-11-30 | not recorded | [json](results/local--smollm2/4576569d6e87.json) |"
    )  # T, H, H - T, retention (none: T is 0), B, T - B, H - B, OL..BC, no resolution judged
    assert "±" not in md  # no standard errors in a 0.1.0 result
    assert 'data-value="0.166667">0.167</td>' in render_html([rec])
    paths = write_leaderboard([rec], tmp_path / "lb")
    [row] = pq.read_table(paths["parquet"]).to_pylist()
    assert row["accuracy_bh"] == 0.166667 and row["accuracy_bh_se"] is None and row["delta_bt"] == -0.166667
    assert "| 1 | local:smollm2 |" in render_card([rec])


def test_a_v1_result_is_read_under_its_0_1_0_path_but_not_published_without_evidence(tmp_path):
    """A result of 0.1.0 keeps its run id and path, but carries no evidence: push-results refuses it (issue 32),
    and the leaderboard shows it unverified and unranked."""
    assert result_path(load_result(V1 / "results.json")) == "results/local--smollm2/4576569d6e87.json"
    hub = tmp_path / "hub"
    with pytest.raises(ResultsError, match="evidence: none recorded"):
        push_results(PushResultsConfig(results=[V1 / "results.json"], repo="org/results", hub=hub))
    assert not (hub / "datasets").exists()
    from phr.leaderboard.table import entries
    from phr.leaderboard.verify import Datasets

    (rec,) = collect_results([V1 / "results.json"], datasets=Datasets())
    (entry,) = entries([rec])
    assert rec.unverified and not entry.ranked and "unverified" in entry.tags


def test_v1_run_ids_are_those_0_1_0_gave():
    """A version-1 result without a run id gets the content hash 0.1.0 computed (9215194d3bba: computed with
    0.1.0's normalize), so resubmitting it maps to the same results-repo file."""
    data = {
        "schema_version": 1,
        "model": "org/m",
        "revision": "abc1234",
        "dataset": {"id": "org/phrbench", "revision": "v0.1.0"},
        "metrics": {"accuracy_b": 0.7, "accuracy_bt": 0.72, "accuracy_bh": 0.4, "OL": 0.2},
        "date": "2025-06-01",
        "generation": {"temperature": 0.7, "top_p": None},
    }
    assert normalize(data)["run_id"] == "9215194d3bba"
    assert result_path(data) == "results/org--m/9215194d3bba.json"
    assert normalize({k: v for k, v in data.items() if k != "schema_version"})["run_id"] == "9215194d3bba"


def test_bad_results_are_refused_with_the_field(tmp_path):
    good = json.loads((V1 / "results.json").read_text())
    with pytest.raises(ResultsError, match="unsupported schema_version 3"):
        read_result({**good, "schema_version": 3})
    with pytest.raises(ResultsError, match=r"tables\.by_condition\.B\.n"):
        read_result({**good, "tables": {**good["tables"], "by_condition": {"B": {"accuracy": 0.5}}}})
    with pytest.raises(ResultsError, match="standard_errors"):
        read_result({**good, "schema_version": 2, "standard_errors": {"accuracy_b": -0.1}})
    bh_only = {**good, "metrics": {"accuracy_bh": 0.5}}
    assert read_result(bh_only).metrics == {"accuracy_bh": 0.5}  # a result, not a leaderboard entry
    path = tmp_path / "r.json"
    path.write_text(json.dumps(bh_only))
    with pytest.raises(ResultsError, match=r"r\.json.*missing required metric.*accuracy_b"):
        load_result(path)


def test_run_manifest_of_0_1_0():
    m = read_run_manifest(json.loads((V1 / "run.json").read_text()))
    assert isinstance(m, RunManifest) and m.samples == 2 and m.config.limit == 3 and m.shard is None
    assert m.dataset.files and m.generation.max_tokens == 24 and m["run_id"] == "4576569d6e87"
    assert m.as_json() == json.loads((V1 / "run.json").read_text())
    with pytest.raises(ValueError, match="run.json is not a valid run manifest: samples"):
        read_run_manifest({**m.as_json(), "samples": 0})


def test_the_catalogue_names_every_metric_once():
    assert REQUIRED == ("accuracy_b", "accuracy_bt", "accuracy_bh")
    rates = tuple(rate_of(r) for r in (*RESOLUTIONS, INSIGHTFUL))
    assert LEADERBOARD == (
        "accuracy_bt", "accuracy_bh", "delta_accuracy", "retention",
        "accuracy_b", "delta_bt", "delta_bh", "OL", "UI", "BUF", "BC", *rates,
    )  # fmt: skip
    # readable names and paper sections for the page; a difference against B is never the paper's accuracy drop
    assert [label(n) for n in ("accuracy_bt", "delta_accuracy", "retention", "delta_bh", "OL")] == [
        "Acc (T)", "Acc H − T", "Retention H / T", "Acc H − B", "OL (H)",
    ]  # fmt: skip
    assert section("delta_accuracy").startswith("§5.1") and "accuracy drop" in section("delta_accuracy")
    assert "not the paper's accuracy drop" in section("delta_bh") and section("retention") == "§5.1 (Figure 3)"
    assert [label(rate_of(r)) for r in RESOLUTIONS] == list(RESOLUTIONS)  # read from the catalogue
    for m in CATALOGUE.values():  # per-condition names follow <figure>_<suffix>
        if m.kind in ("accuracy", "trajectory") and m.same_as is None:
            assert m.name == f"{m.figure}_{CONDITION_SUFFIX[m.condition]}" == name_of(m.figure, m.condition)
        if m.difference:
            assert all(p in CATALOGUE for p in m.difference)
    assert metric("accuracy_bh").better == "higher" and metric("compliance_rate").better == "lower"
    assert metric("OL").better is None and metric("OL").same_as == "OL_bh"
    assert metric("accuracy_b").se == "accuracy_b_se"
    with pytest.raises(KeyError, match="unknown PHRBench metric 'accuracy'"):
        metric("accuracy")
    fixture_metrics = json.loads((V1 / "results.json").read_text())["metrics"]
    assert set(fixture_metrics) <= set(CATALOGUE)

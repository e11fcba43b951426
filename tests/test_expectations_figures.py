"""Dataset-level expectations (Great Expectations), card figures and the Hub eval.yaml of a built PHRBench-mini."""

from __future__ import annotations

import json
import shutil
import struct
import zlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from phr.bench.folder import data_file
from phr.bench.folder import read_rows as load_rows
from phr.cards.eval_yaml import METRICS, eval_results_yaml, eval_yaml, write_eval_yaml
from phr.cards.figures import CAPTIONS, markdown, write_figures
from phr.core.parquet import write_parquet
from phr.core.report import Rejection
from phr.validation.expectations import (
    SUITE_FILE,
    build_suite,
    run_suite,
    suite_json,
    write_suite,
)
from phr.validation.folder import validate_folder

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def built(mini_folder, tmp_path_factory):
    out = shutil.copytree(mini_folder, tmp_path_factory.mktemp("gx") / "phrbench")  # write_suite writes into it
    rows = load_rows(out)
    if (out / SUITE_FILE).exists():  # the build ships the suite: derived from its rows = derived from the parquet
        assert (out / SUITE_FILE).read_text(encoding="utf-8") == suite_json(rows)
    write_suite(out, rows)
    return out, rows


@pytest.fixture
def copy(built, tmp_path):
    folder, _ = built
    dst = tmp_path / "phrbench"
    shutil.copytree(folder, dst)
    return dst


def keys(obj) -> set[str]:
    if isinstance(obj, dict):
        return set(obj) | {k for v in obj.values() for k in keys(v)}
    if isinstance(obj, list):
        return {k for v in obj for k in keys(v)}
    return set()


def edit(folder, config, change):
    path = data_file(folder, config)
    schema = pq.read_schema(path)
    rows = pq.read_table(path).to_pylist()
    rows = change(rows)
    write_parquet(pa.Table.from_pylist(rows, schema=schema), path)
    return rows


# ---- expectations -------------------------------------------------------------------------------------------------


def test_suite_passes_on_the_built_folder_and_is_deterministic(built, tmp_path):
    folder, rows = built
    assert run_suite(folder) == []
    first = (folder / SUITE_FILE).read_bytes()
    again = write_suite(tmp_path / "other", rows)
    assert again.read_bytes() == first
    text = first.decode()
    doc = json.loads(text)
    assert not keys(doc) & {"id", "great_expectations_version", "run_time", "notes", "rendered_content"}
    assert text == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert set(doc["configs"]) == {"baseline", "truthful", "hallucinated"}
    # derived from the build: exact row counts and counts per (domain, mutation_type)
    suite = build_suite(rows)
    assert suite["hallucinated"]["rows"] == len(rows["hallucinated"])
    by_dm = next(
        s for s in suite["hallucinated"]["suites"] if s["meta"]["frame"]["group_by"] == ["domain", "mutation_type"]
    )
    pairs = next(e for e in by_dm["expectations"] if e["type"] == "expect_column_pair_values_to_be_in_set")
    assert sum(n for _, n in pairs["kwargs"]["value_pairs_set"]) == len(rows["hallucinated"])
    assert ["Code / State Distortion", 24] in pairs["kwargs"]["value_pairs_set"]


def test_duplicate_id_is_reported(copy):
    rows = edit(copy, "hallucinated", lambda rs: [rs[0], {**rs[1], "id": rs[0]["id"]}, *rs[2:]])
    out = run_suite(copy)
    hit = [r for r in out if r.reason.startswith("expect_column_values_to_be_unique on id:")]
    assert len(hit) == 1 and hit[0].row_id == "data/hallucinated" and hit[0].check == "expectations"
    assert rows[0]["id"] in hit[0].reason and "2 of 102 rows fail" in hit[0].reason
    assert {r.row_id for r in out} == {"data/hallucinated"}


def test_unknown_domain_is_reported(copy):
    edit(copy, "truthful", lambda rs: [{**rs[0], "domain": "Astrology"}, *rs[1:]])
    reasons = [r.reason for r in run_suite(copy) if r.row_id == "data/truthful"]
    assert any(x.startswith("expect_column_values_to_be_in_set on domain:") and "'Astrology'" in x for x in reasons)
    assert any(x.startswith("expect_column_kl_divergence_to_be_less_than on domain:") for x in reasons)
    assert any(
        x.startswith("expect_column_distinct_values_to_equal_set on count per (domain):")
        and "unexpected values ['Astrology']" in x
        for x in reasons
    )


def test_dropped_row_is_reported(copy, built):
    dropped = built[1]["baseline"][0]
    rows = edit(copy, "baseline", lambda rs: rs[1:])
    out = run_suite(copy)
    assert (
        Rejection(
            "data/baseline",
            "expectations",
            f"expect_table_row_count_to_equal on table: observed {len(rows)} rows, expected {len(rows) + 1}",
        )
        in out
    )
    counts = [
        r.reason for r in out if r.reason.startswith("expect_column_pair_values_to_be_in_set on count per (domain):")
    ]
    assert len(counts) == 1 and counts[0].startswith(
        f"expect_column_pair_values_to_be_in_set on count per (domain): '{dropped['domain']}': observed "
    )
    assert all(r.row_id == "data/baseline" for r in out)


def test_validate_folder_includes_the_expectations(copy):
    assert validate_folder(copy).ok
    edit(copy, "hallucinated", lambda rs: rs[:-1])
    report = validate_folder(copy)
    assert report.by_check().get("expectations", 0) >= 1
    assert "data/hallucinated" in report.rejected_ids("expectations")
    (copy / SUITE_FILE).unlink()
    report = validate_folder(copy)
    assert Rejection(SUITE_FILE, "expectations", "missing: the dataset ships no expectation suite") in report.rejections
    (copy / SUITE_FILE).write_text("{not json", encoding="utf-8")
    assert [r.row_id for r in run_suite(copy)] == [SUITE_FILE]


# ---- figures ------------------------------------------------------------------------------------------------------


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    (length,) = struct.unpack(">I", data[8:12])
    crc = struct.unpack(">I", data[16 + length : 20 + length])[0]
    assert zlib.crc32(data[12 : 16 + length]) == crc
    return struct.unpack(">II", data[16:24])


def test_figures_are_valid_and_byte_identical(built, tmp_path):
    _, rows = built
    a = write_figures(tmp_path / "a", rows)
    b = write_figures(tmp_path / "b", rows)
    assert (
        a
        == b
        == ["figures/counts_domain_mutation.png", "figures/subtypes_per_domain.png", "figures/premise_length.png"]
    )
    for p in a:
        data = (tmp_path / "a" / p).read_bytes()
        w, h = png_size(data)
        assert 400 <= w <= 1200 and 200 <= h <= 1200 and len(data) > 5000
        assert data.endswith(b"IEND\xaeB`\x82") and b"Software" not in data
        assert data == (tmp_path / "b" / p).read_bytes(), p
    md = markdown(a)
    assert md.count("![") == 3 and f"![{CAPTIONS[a[0]]}]({a[0]})" in md


# ---- eval.yaml ----------------------------------------------------------------------------------------------------


def test_eval_yaml_names_configs_split_and_metrics(built, tmp_path):
    _, rows = built
    path = write_eval_yaml(tmp_path)
    assert path.name == "eval.yaml" and path.read_text(encoding="utf-8") == eval_yaml()
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert doc["name"] == "PHRBench" and doc["description"] and doc["evaluation_framework"] == "inspect-ai"
    tasks = {t["id"]: t for t in doc["tasks"]}
    assert {t["config"] for t in tasks.values()} == {"baseline", "truthful", "hallucinated", "all"}
    assert all(t["split"] == "test" for t in tasks.values())
    assert {m for t in tasks.values() for m in t["metrics"]} == {
        "accuracy_b",
        "accuracy_bt",
        "accuracy_bh",
        "OL",
        "UI",
        "BUF",
        "BC",
    }
    assert tasks["accuracy_bh"]["config"] == "hallucinated" and tasks["ol"]["config"] == "all"
    for t in tasks.values():  # inspect-ai requires these three
        assert t["field_spec"]["input"] in rows["baseline"][0] and t["field_spec"]["target"] in rows["baseline"][0]
        assert t["solvers"] and t["scorers"]
    plain = yaml.safe_load(eval_yaml(evaluation_framework="math-arena", metrics=False))
    assert all(set(t) == {"id", "config", "split"} for t in plain["tasks"])
    results = yaml.safe_load(eval_results_yaml("org/phrbench", {"accuracy_bh": 0.5, "BUF": 0.25}, date="2026-01-02"))
    assert results == [
        {"dataset": {"id": "org/phrbench", "task_id": "accuracy_bh"}, "value": 0.5, "date": "2026-01-02"},
        {"dataset": {"id": "org/phrbench", "task_id": "buf"}, "value": 0.25, "date": "2026-01-02"},
    ]
    assert {t for _, t, _, _ in METRICS} == set(tasks)
    with pytest.raises(ValueError, match="unknown PHRBench metric"):
        eval_results_yaml("org/phrbench", {"accuracy": 1.0})

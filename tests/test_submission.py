"""Leaderboard submissions (phr.eval.submission): the valid case and every rejection reason."""

import json
import re

import pytest

from phr.core.errors import PHRError
from phr.eval.dataset import load_eval_dataset
from phr.eval.submission import (
    Limits,
    Submission,
    SubmissionError,
    SubmissionMeta,
    load_meta,
    validate_submission,
    write_submission,
)


@pytest.fixture(scope="session")
def dataset(mini_folder):
    return load_eval_dataset(mini_folder)


META = SubmissionMeta(model="m", revision="r1", samples=2)


def rows(dataset, samples=2, conditions=("B", "B+T", "B+H")):
    return [
        {"instance_id": i.id, "sample": s, "response": f"answer {i.id} {s}"}
        for i in dataset.select(conditions)
        for s in range(samples)
    ]


def dump(path, records):
    """Write records (dicts, or raw str/bytes lines) one per line."""
    out = b""
    for r in records:
        if isinstance(r, bytes):
            out += r
        elif isinstance(r, str):
            out += r.encode("utf-8")
        else:
            out += json.dumps(r, ensure_ascii=False).encode("utf-8")
        out += b"\n"
    path.write_bytes(out)
    return path


def reject(path, dataset, meta=META, limits=None) -> SubmissionError:
    with pytest.raises(SubmissionError) as e:
        validate_submission(path, dataset, meta, limits or Limits())
    assert isinstance(e.value, PHRError)
    return e.value


def with_line(dataset, tmp_path, bad, at=6):
    """A full valid submission whose line ``at`` (1-based) is replaced by ``bad``."""
    recs = rows(dataset)
    recs[at - 1] = bad
    return dump(tmp_path / "sub.jsonl", recs)


# ---- the valid case --------------------------------------------------------------------------------


def test_valid_submission(dataset, tmp_path):
    recs = rows(dataset)
    path = dump(tmp_path / "sub.jsonl", recs[:10] + [""] + recs[10:])  # a blank line is ignored
    sub = validate_submission(path, dataset, META)
    assert isinstance(sub, Submission)
    assert len(sub.responses) == len(sub) == 170 * 2 == sub.lines
    assert sub.responses[(recs[3]["instance_id"], recs[3]["sample"])] == recs[3]["response"]
    import hashlib

    assert sub.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert sub.meta == META and sub.path == path


def test_write_submission_roundtrip(dataset, tmp_path):
    triples = [(r["instance_id"], r["sample"], r["response"] + ' é ✓\n"x"') for r in rows(dataset)]
    path = tmp_path / "out" / "resp.txt"  # any name: .jsonl is not required
    assert write_submission(path, triples, meta=META) == 340
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]
    assert "é ✓" in path.read_text(encoding="utf-8")  # ensure_ascii=False
    sub = validate_submission(path, dataset, load_meta(submission=path))
    assert sub.responses == {(i, s): r for i, s, r in triples}
    assert load_meta(submission=path) == META


def test_conditions_subset(dataset, tmp_path):
    meta = SubmissionMeta(model="m", revision="r", samples=1, conditions=("hallucinated",))
    assert meta.conditions == ("B+H",)
    path = dump(tmp_path / "s.jsonl", rows(dataset, samples=1, conditions=("B+H",)))
    assert len(validate_submission(path, dataset, meta).responses) == 102


# ---- one test per defect ---------------------------------------------------------------------------


def test_invalid_utf8(dataset, tmp_path):
    e = reject(with_line(dataset, tmp_path, b'{"instance_id": "x\xff"}'), dataset)
    assert "line 6: not valid UTF-8 (byte offset 18)" in str(e)


def test_not_json(dataset, tmp_path):
    e = reject(with_line(dataset, tmp_path, "{instance_id: 1}"), dataset)
    assert re.search(r"line 6: not valid JSON \(.*column 2\)", str(e))


def test_array_not_object(dataset, tmp_path):
    e = reject(with_line(dataset, tmp_path, '["a", 0, "b"]'), dataset)
    assert "line 6: expected a JSON object, got array" in str(e)


def test_missing_key(dataset, tmp_path):
    r = rows(dataset)[5]
    del r["response"]
    e = reject(with_line(dataset, tmp_path, r), dataset)
    assert "line 6: missing key 'response'" in str(e)


def test_extra_key(dataset, tmp_path):
    r = {**rows(dataset)[5], "score": 1}
    e = reject(with_line(dataset, tmp_path, r), dataset)
    assert "line 6: unknown key 'score' (allowed: instance_id, sample, response)" in str(e)


def test_duplicate_json_key(dataset, tmp_path):
    r = rows(dataset)[5]
    e = reject(with_line(dataset, tmp_path, json.dumps(r)[:-1] + ', "sample": 1}'), dataset)
    assert "line 6: key 'sample' appears twice" in str(e)


@pytest.mark.parametrize(
    "field,value,reason",
    [
        ("sample", "0", "field 'sample' must be an integer, got string \"0\""),
        ("sample", True, "field 'sample' must be an integer, got boolean true"),
        ("sample", 1.0, "field 'sample' must be an integer, got number 1.0"),
        ("response", 5, "field 'response' must be a string, got number 5"),
        ("instance_id", None, "field 'instance_id' must be a string, got null"),
    ],
)
def test_wrong_types(dataset, tmp_path, field, value, reason):
    r = {**rows(dataset)[5], field: value}
    e = reject(with_line(dataset, tmp_path, r), dataset)
    assert f"line 6: {reason}" in str(e)


@pytest.mark.parametrize("const", ["NaN", "Infinity", "-Infinity"])
def test_nan(dataset, tmp_path, const):
    r = rows(dataset)[5]
    e = reject(with_line(dataset, tmp_path, json.dumps(r)[:-1] + f', "x": {const}}}'), dataset)
    assert f"line 6: {const} is not allowed (JSON has no NaN or Infinity)" in str(e)


def test_sample_out_of_range(dataset, tmp_path):
    e = reject(with_line(dataset, tmp_path, {**rows(dataset)[5], "sample": 3}, at=7), dataset)
    assert "line 7: sample 3 is out of range 0..1 (declared samples=2)" in str(e)
    e = reject(with_line(dataset, tmp_path, {**rows(dataset)[5], "sample": -1}), dataset)
    assert "line 6: sample -1 is out of range 0..1" in str(e)


def test_duplicate(dataset, tmp_path):
    recs = rows(dataset)
    e = reject(dump(tmp_path / "s.jsonl", recs + [recs[2]]), dataset)
    iid = recs[2]["instance_id"]
    assert f"line 341: duplicate response for {iid!r} sample 0 (first on line 3)" in str(e)
    assert e.total == 1


def test_unknown_id(dataset, tmp_path):
    recs = rows(dataset) + [{"instance_id": "nope-B", "sample": 0, "response": "x"}]
    e = reject(dump(tmp_path / "s.jsonl", recs), dataset)
    assert "line 341: unknown instance_id 'nope-B'" in str(e)


def test_undeclared_condition(dataset, tmp_path):
    meta = SubmissionMeta(model="m", revision="r", samples=2, conditions=("B+H",))
    recs = rows(dataset, conditions=("B+H",))
    b = dataset.select(("B",))[0].id
    e = reject(dump(tmp_path / "s.jsonl", recs + [{"instance_id": b, "sample": 0, "response": "x"}]), dataset, meta)
    assert (
        f"line 205: instance_id {b!r} is condition B, which the submission does not declare (conditions: B+H)"
    ) in str(e)
    assert e.total == 1  # B instances are not required


def test_missing_coverage(dataset, tmp_path):
    recs = rows(dataset)
    kept = [r for r in recs if not (r["sample"] == 1 and r["instance_id"].endswith("-B"))]
    e = reject(dump(tmp_path / "s.jsonl", kept[:-1]), dataset)
    first_b = dataset.select(("B",))[0].id
    assert e.total == 1
    assert (f"missing 35 responses (conditions B, B+T, B+H, samples=2): {first_b} sample 1, ") in str(e)
    assert str(e).rstrip().endswith(", ...")


def test_oversized_line(dataset, tmp_path):
    r = {**rows(dataset)[5], "response": "x" * 300}
    e = reject(with_line(dataset, tmp_path, r), dataset, limits=Limits(max_line_bytes=200))
    assert "line 6: line is over 200 bytes; not parsed" in str(e)
    assert e.total == 2  # + the response it held is missing
    assert "missing 1 responses" in str(e)


def test_line_exactly_at_limit(dataset, tmp_path):
    recs = rows(dataset)
    path = dump(tmp_path / "s.jsonl", recs)
    longest = max(len(line) for line in path.read_bytes().splitlines())
    validate_submission(path, dataset, META, Limits(max_line_bytes=longest))
    e = reject(path, dataset, limits=Limits(max_line_bytes=longest - 1))
    assert "bytes; not parsed" in str(e)


def test_oversized_response(dataset, tmp_path):
    e = reject(
        with_line(dataset, tmp_path, {**rows(dataset)[5], "response": "é" * 51}),
        dataset,
        limits=Limits(max_response_chars=50),
    )
    assert "line 6: field 'response' has 51 characters, over the limit of 50" in str(e)


def test_oversized_file(dataset, tmp_path):
    path = dump(tmp_path / "s.jsonl", rows(dataset))
    e = reject(path, dataset, limits=Limits(max_file_bytes=1000))
    assert f"file is {path.stat().st_size} bytes, over the limit of 1000 bytes" in str(e)


def test_lone_surrogate(dataset, tmp_path):
    r = rows(dataset)[5]
    line = json.dumps({**r, "response": "ok"}).replace('"ok"', '"a\\ud800b"')
    e = reject(with_line(dataset, tmp_path, line), dataset)
    assert "line 6: field 'response' contains a lone surrogate (\\ud800) at character 1" in str(e)


def test_bom(dataset, tmp_path):
    path = dump(tmp_path / "s.jsonl", rows(dataset))
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    e = reject(path, dataset)
    assert "line 1: file starts with a UTF-8 byte order mark (BOM)" in str(e)
    assert e.total == 1  # the line itself is still read


def test_empty_file(dataset, tmp_path):
    for content in (b"", b"\n  \n"):
        (tmp_path / "e.jsonl").write_bytes(content)
        e = reject(tmp_path / "e.jsonl", dataset)
        assert e.problems == ["file is empty: no responses"]


def test_directory_and_missing_file(dataset, tmp_path):
    assert "is a directory, not a submission file" in str(reject(tmp_path, dataset))
    assert "no such file" in str(reject(tmp_path / "nope.jsonl", dataset))


def test_multiple_defects_together(dataset, tmp_path):
    recs = rows(dataset)
    recs[1] = {**recs[1], "sample": "1"}
    recs[4] = "not json"
    recs[9] = {**recs[9], "extra": 1}
    e = reject(dump(tmp_path / "s.jsonl", recs), dataset)
    msg = str(e)
    assert e.total == 4
    assert msg.startswith(f"{tmp_path / 's.jsonl'}: submission rejected, 4 problems:")
    for needle in (
        "line 2: field 'sample' must be",
        "line 5: not valid JSON",
        "line 10: unknown key 'extra'",
        "missing 3 responses",
    ):
        assert needle in msg
    assert msg.index("line 2:") < msg.index("line 5:") < msg.index("line 10:") < msg.index("missing 3")


def test_report_truncation(dataset, tmp_path):
    recs = rows(dataset)
    for n in range(30):
        recs[n] = {**recs[n], "sample": 7}
    e = reject(dump(tmp_path / "s.jsonl", recs), dataset, limits=Limits(max_errors_listed=5))
    assert e.total == 31 and len(e.problems) == 5
    assert str(e).rstrip().endswith("... and 26 more")
    assert str(e).count("out of range") == 5


# ---- metadata --------------------------------------------------------------------------------------


def test_meta_sidecar_and_overrides(tmp_path):
    sub = tmp_path / "sub.jsonl"
    (tmp_path / "sub.meta.json").write_text(
        json.dumps(
            {
                "model": "m",
                "revision": "r",
                "link": "https://x.org/m",
                "samples": 2,
                "conditions": ["baseline", "B+H"],
                "submitted_by": "me",
            }
        )
    )
    meta = load_meta(submission=sub, revision="r2", notes=None)
    assert meta == SubmissionMeta("m", "r2", "https://x.org/m", 2, ("B", "B+H"), "me")
    assert load_meta(model="a", revision="b") == SubmissionMeta("a", "b")
    assert load_meta(tmp_path / "sub.meta.json").revision == "r"


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"revision": "r"}, "model"),
        ({"model": " ", "revision": "r"}, "model"),
        ({"model": "m"}, "revision"),
        ({"model": "m", "revision": "r", "link": "javascript:x"}, "link"),
        ({"model": "m", "revision": "r", "link": "ftp://x.org"}, "link"),
        ({"model": "m", "revision": "r", "samples": 0}, "samples"),
        ({"model": "m", "revision": "r", "samples": True}, "samples"),
        ({"model": "m", "revision": "r", "conditions": ("B", "X")}, "conditions"),
    ],
)
def test_meta_errors(kw, field):
    with pytest.raises(SubmissionError, match=f"field '{re.escape(field)}'"):
        load_meta(**kw)


def test_meta_sidecar_errors(tmp_path):
    side = tmp_path / "s.meta.json"
    side.write_text(json.dumps({"model": "m", "revision": "r", "modle": "typo"}))
    with pytest.raises(SubmissionError, match=r"field 'modle': unknown key"):
        load_meta(side)
    side.write_text(json.dumps({"model": "m", "revision": "r", "samples": "2"}))
    with pytest.raises(SubmissionError, match=r"field 'samples'"):
        load_meta(side)
    side.write_text(json.dumps({"model": "m", "revision": "r", "samples": 0}))
    with pytest.raises(SubmissionError, match=r"field 'samples' must be an integer >= 1"):
        load_meta(side)
    side.write_text("{nope")
    with pytest.raises(SubmissionError, match="not valid JSON"):
        load_meta(side)
    with pytest.raises(SubmissionError, match="unknown field"):
        load_meta(model="m", revision="r", sample=2)


# ---- model names: the Hub's repo-id rule (they name result folders and model repos) ----------------------


@pytest.mark.parametrize(
    "model,reason",
    [
        ("../../../outside/evil", "expected NAME or ORG/NAME"),
        ("../evil", "'..' must use ASCII letters"),
        ("org/x.git", "'x.git' cannot end with '.git'"),
        ("org/x--y", "cannot hold '--' or '..'"),
        ("my model", "'my model' must use ASCII letters"),
        ("openai:gpt-4o", "must use ASCII letters"),
        ("/abs", "'' must use ASCII letters"),
    ],
)
def test_model_name_follows_the_hub_repo_id_rule(model, reason):
    with pytest.raises(SubmissionError, match=f"field 'model' must be a Hub model id.*{re.escape(reason)}"):
        load_meta(model=model, revision="r")


def test_model_names_the_hub_accepts():
    for model in ("m", "my-model", "org/gold", "Org-1/Foo_Bar.v1"):
        assert load_meta(model=model, revision="r").model == model


@pytest.mark.parametrize("command", ["score", "submit"])
def test_cli_refuses_a_path_as_model_and_writes_nothing(mini_folder, dataset, tmp_path, command):
    from typer.testing import CliRunner

    from phr.cli import app

    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    sub = dump(work / "sub.jsonl", rows(dataset, samples=1))
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    args = [command, str(sub), "--dataset", str(mini_folder), "--model", "../../../outside/evil"]
    args += ["--model-revision", "1", "--scorer", "none"]
    args += ["--no-plots"] if command == "score" else ["--repo", "org/results", "--hub", str(work / "hub")]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2, r.output
    assert "error: submission metadata: field 'model' must be a Hub model id" in r.output
    assert "'../../../outside/evil'" in r.output and "Traceback" not in r.output
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_submit_refuses_a_submission_that_does_not_cover_every_condition(mini_folder, dataset, tmp_path):
    """A B-only submission is no leaderboard entry: `submit` says it is the submission's fault (before scoring,
    nothing written); `score` scores it; its results.json pushed is refused with the same reason, never as an
    invalid result JSON (the tool's output)."""
    from typer.testing import CliRunner

    from phr.cli import app
    from phr.eval.results import ResultsError, load_result

    sub = dump(tmp_path / "sub.jsonl", rows(dataset, samples=1, conditions=("B",)))
    base = [str(sub), "--dataset", str(mini_folder), "--model", "org/m", "--model-revision", "1", "--conditions", "B"]
    base += ["--scorer", "none", "--no-plots", "--allow-weak-sandbox"]
    r = CliRunner().invoke(app, ["submit", *base, "--repo", "org/results", "--hub", str(tmp_path / "hub")])
    assert r.exit_code == 2, r.output
    assert r.stderr.splitlines() == [
        f"error: {sub}: the submission covers only condition B: a leaderboard entry needs all three conditions B, "
        "B+T, B+H (missing B+T, B+H); `phr-publish score` scores it without publishing"
    ]
    assert not (tmp_path / "sub.scored").exists() and not (tmp_path / "hub").exists()
    r = CliRunner().invoke(app, ["score", *base])
    assert r.exit_code == 0, r.output
    with pytest.raises(ResultsError) as e:
        load_result(tmp_path / "sub.scored" / "results.json")
    assert str(e.value).startswith(
        f"{tmp_path / 'sub.scored' / 'results.json'} is not a leaderboard entry (docs/publishing.md): the result "
        "covers only condition B: a leaderboard entry needs all three conditions B, B+T, B+H (missing B+T, B+H); "
        "missing required metric(s) ['accuracy_bt', 'accuracy_bh']"
    ), str(e.value)
    assert "not a valid result JSON" not in str(e.value)

"""PHRBench-mini: the offline main job, end to end."""

import pyarrow.parquet as pq
import pytest

from phr.builders.phrbench import build_mini
from phr.core.fs import OutputExistsError
from phr.core.parquet import write_parquet
from tests.support.cli import invoke


@pytest.fixture(scope="module")
def built(mini_build):
    return mini_build.out, mini_build


def test_counts_and_layout(built):
    out, res = built
    assert res.counts == {"baseline": 34, "truthful": 34, "hallucinated": 102}
    names = sorted(p.name for p in (out / "data").iterdir())
    assert [n.split("-")[0] for n in names] == ["baseline", "hallucinated", "truthful"]
    assert all(len(n.split("-")[1]) == len("0123456789ab.parquet") for n in names)
    assert (out / "README.md").exists() and (out / "manifest.json").exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp folders left
    from phr.bench.folder import data_file

    hall = pq.read_table(data_file(out, "hallucinated")).to_pylist()
    by_domain = {}
    for r in hall:
        by_domain.setdefault(r["domain"], set()).add(r["mutation_type"])
    assert by_domain["Code"] == {"State Distortion"}
    for d in ("Chemistry", "Biomedicine", "Physics"):
        assert by_domain[d] == {"Rule Contradiction", "State Distortion", "Pseudoscientific Entanglement"}
    base = pq.read_table(data_file(out, "baseline")).to_pylist()
    assert all(r["premise"] is None and r["condition"] == "B" for r in base)
    h1 = next(r for r in hall if r["id"].endswith("-H1"))
    b1 = next(r for r in base if r["question_id"] == h1["question_id"])
    assert h1["prompt"] == f"Premise: {h1['premise']}\n\n{b1['prompt']}"  # question unchanged


def test_load_dataset_every_config(built):
    from datasets import load_dataset

    out, res = built
    for name, n in [("all", 170), ("baseline", 34), ("truthful", 34), ("hallucinated", 102)]:
        ds = load_dataset(str(out), name)
        assert list(ds) == ["test"] and ds["test"].num_rows == n


def test_card_metadata_parses(built):
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard

    out, _ = built
    card = DatasetCard.load(out / "README.md")
    configs = MetadataConfigs.from_dataset_card_data(card.data)
    assert set(configs) == {"all", "baseline", "truthful", "hallucinated"}
    assert "| **all** | 34 | 34 |" in card.text and "curated" in card.text


def test_rebuild_is_byte_identical_and_refuses_existing(built, tmp_path):
    out, _ = built
    again = build_mini(tmp_path / "phrbench")
    names = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert names == sorted(str(p.relative_to(again.out)) for p in again.out.rglob("*") if p.is_file())
    for name in names:
        if name != "manifest.json":
            assert (out / name).read_bytes() == (again.out / name).read_bytes(), name
    with pytest.raises(OutputExistsError, match="pass overwrite=True to replace it"):
        build_mini(tmp_path / "phrbench")
    build_mini(tmp_path / "phrbench", overwrite=True)


def test_cli_build_validate_then_leak_is_caught(tmp_path, monkeypatch):
    """The commands in this process (tests/support/cli.invoke); the entry point's own process is tested in
    test_cli.py and test_publish_acceptance.py."""
    from datasets import load_dataset

    env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    r = invoke("build", "phrbench", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert "170 instances" in r.stdout
    monkeypatch.chdir(tmp_path)
    assert load_dataset("phrbench", "all")["test"].num_rows == 170
    r = invoke("validate", "phrbench", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    # edit one hallucinated premise to leak its gold answer
    from phr.bench.folder import data_file

    path = data_file(tmp_path / "phrbench", "hallucinated")
    table = pq.read_table(path)
    rows = table.to_pylist()
    victim = next(r for r in rows if r["task_type"] == "multiple_choice" and len(r["answer"]) > 8)
    victim["premise"] = f"{victim['premise']} The correct answer is {victim['answer']}."
    write_parquet(table.from_pylist(rows, schema=table.schema), path)
    r = invoke("validate", "phrbench", cwd=tmp_path, env=env)
    assert r.returncode == 1
    assert victim["id"] in r.stdout and "leak" in r.stdout.lower()


def test_rebuild_with_other_rows_never_loads_stale_cache(tmp_path, monkeypatch):
    """datasets caches by the card's data file paths: content-hashed names keep a rebuild fresh."""
    from importlib import resources

    from datasets import load_dataset

    monkeypatch.chdir(tmp_path)
    build_mini("phrbench")
    assert load_dataset("phrbench", "baseline")["test"].num_rows == 34
    lines = resources.files("phr.builders").joinpath("curated/mini.jsonl").read_text().splitlines()
    fewer = tmp_path / "fewer.jsonl"
    fewer.write_text("\n".join(lines[:-1]) + "\n")
    build_mini("phrbench", overwrite=True, curated=fewer)
    assert load_dataset("phrbench", "baseline")["test"].num_rows == 33


def test_validate_names_malformed_rows_instead_of_crashing(built, tmp_path):
    import shutil

    from phr.bench.folder import data_file
    from phr.validation.folder import validate_folder

    out, _ = built
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    for name, field, value in (("baseline", "question", None), ("hallucinated", "mutation_type", "Astrology")):
        path = data_file(copy, name)
        table = pq.read_table(path)
        rows = table.to_pylist()
        rows[3][field] = value
        write_parquet(table.from_pylist(rows, schema=table.schema), path)
    report = validate_folder(copy)
    assert not report.ok
    text = report.render()
    base = pq.read_table(data_file(copy, "baseline")).to_pylist()[3]["id"]
    hall = pq.read_table(data_file(copy, "hallucinated")).to_pylist()[3]["id"]
    assert base in text and hall in text and "mutation_type" in text

"""Names (issue 26, item 7): a repo name ending in '.git' in any case is refused before anything is written, and a
source header naming a column twice is an error naming the column and the file (a row would keep one field)."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from phr.builders.hr1_sources import load_popqa
from phr.builders.sources import MalformedSourceError
from phr.cli import app
from phr.hub.repo import repo_id_problem
from tests.support.bbbp_faults import malformed_bbbp
from tests.support.paper_fixtures import write_sources


@pytest.mark.parametrize("repo", ["org/x.GIT", "org/x.Git", "org/x.gIt", "Org.GIT/x"])
def test_git_suffix_in_any_case_is_refused(repo):
    part = next(p for p in repo.split("/") if p.lower().endswith(".git"))
    assert repo_id_problem(repo) == f"{part!r} cannot end with '.git' in any case (the Hub refuses such names)"


def test_push_to_an_upper_case_git_name_writes_nothing(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "README.md").write_text("# x\n")
    hub = tmp_path / "hub"
    r = CliRunner().invoke(app, ["push", str(folder), "--repo", "org/x.GIT", "--hub", str(hub)])
    assert r.exit_code == 2, r.output
    assert "error: invalid repo id 'org/x.GIT': 'x.GIT' cannot end with '.git' in any case" in r.output
    assert not hub.exists() or not list(hub.rglob("x.GIT"))


def test_a_bbbp_header_with_a_duplicate_column_names_the_column_and_file(tmp_path):
    path, message = malformed_bbbp(tmp_path, "num,name,p_np,smiles,p_np\n1,aspirin,1,CCO,0\n")
    assert message == f"duplicate column name 'p_np' (columns 3, 5) in header of {path}: rename one of them"


def test_a_parquet_source_with_a_duplicate_column_is_named_too(tmp_path):
    parquet = tmp_path / "pq" / "popqa.parquet"
    parquet.parent.mkdir()
    table = pa.Table.from_arrays([pa.array([1]), pa.array(["q?"]), pa.array(["q2?"]), pa.array(['["a"]'])],
                                 names=["id", "question", "question", "possible_answers"])  # fmt: skip
    pq.write_table(table, parquet)
    with pytest.raises(MalformedSourceError, match=r"duplicate column name 'question' \(columns 2, 3\) in header of"):
        load_popqa(parquet.parent)


def test_cli_build_with_a_duplicate_bbbp_column_exits_2_with_one_line_and_writes_nothing(tmp_path):
    src = write_sources(tmp_path / "src", n=60)
    path = src / "bbbp" / "BBBP.csv"
    head, rest = path.read_text().split("\n", 1)
    path.write_text(head.replace("smiles", "num", 1) + "\n" + rest)
    out = tmp_path / "out"
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-0123456789", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
           "PHR_CACHE": str(tmp_path / "calls.sqlite"), "COLUMNS": "300"}  # fmt: skip
    args = ["build", "phrbench", "--recipe", "paper", "--source-dir", str(src), "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-c", "from phr.cli import main; main()", *args, "--generator", "openai:gpt-4o",
         "--judge", "none"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        f"error: duplicate column name 'num' (columns 1, 4) in header of {path}: rename one of them"
    ), proc.stderr
    assert not out.exists() and not list(tmp_path.glob(".out*"))

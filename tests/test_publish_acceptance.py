"""Issue acceptance for the publishers, as a user runs it: the CLI in subprocesses, then load_dataset."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import EXE
from tests.support.hub_server import HubServer

TOKEN = "hf_acceptance_token_0123456789"
LOAD = (
    "import json, sys; from datasets import load_dataset; ds = load_dataset(sys.argv[1], 'all')['test']; "
    "print(json.dumps(sorted(ds['id'])))"
)


@pytest.fixture
def folder(mini_folder):
    return mini_folder


def _ids(folder: Path) -> list[str]:
    import pyarrow.parquet as pq

    return sorted(r for f in (folder / "data").glob("*.parquet") for r in pq.read_table(f)["id"].to_pylist())


def test_push_to_local_hub_then_load_and_idempotent(folder, tmp_path):
    hubdir = tmp_path / "hub"
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "PHR_HUB_DIR")}
    args = [EXE, "push", str(folder), "--repo", "org/phrbench", "--hub", str(hubdir), "--tag", "v0.1.0"]
    first = subprocess.run(args, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    repo = hubdir / "datasets" / "org" / "phrbench"
    count = lambda: subprocess.run(
        ["git", "-C", str(repo), "rev-list", "--count", "main"],  # noqa: E731
        capture_output=True,
        text=True,
    ).stdout.strip()
    n = count()
    second = subprocess.run(args, env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    assert count() == n  # no new commit
    loaded = subprocess.run([sys.executable, "-c", LOAD, str(repo)], env=env, capture_output=True, text=True)
    assert json.loads(loaded.stdout) == _ids(folder), loaded.stderr


def test_push_to_hub_endpoint_then_load_dataset_through_it(folder, tmp_path):
    with HubServer(tokens={TOKEN: "org"}) as hub:
        env = hub.client_env(tmp_path / "home")
        env["HF_TOKEN"] = TOKEN
        env.pop("PHR_HUB_DIR", None)
        args = [EXE, "push", str(folder), "--repo", "org/phrbench", "--tag", "v0.1.0", "--endpoint", hub.url]
        r = subprocess.run(args, env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        n = len(hub.commits("dataset", "org/phrbench"))
        r2 = subprocess.run(args, env=env, capture_output=True, text=True)
        assert r2.returncode == 0 and len(hub.commits("dataset", "org/phrbench")) == n
        loaded = subprocess.run([sys.executable, "-c", LOAD, "org/phrbench"], env=env, capture_output=True, text=True)
        assert json.loads(loaded.stdout) == _ids(folder), loaded.stderr
        assert TOKEN not in r.stdout + r.stderr + r2.stdout + r2.stderr
        assert hub.errors == []

"""Evaluating a published PHRBench: by repo id from a local hub and from a Hub endpoint (HubServer)."""

import json
import subprocess

import pytest

from phr.config.ops import PushConfig
from phr.eval.dataset import DatasetError, load_eval_dataset
from phr.hub import push
from tests.support.cli import EXE
from tests.support.hub_server import HubServer
from tests.support.protocol_server import ProtocolServer


def run(*args, env):
    return subprocess.run([EXE, *args], env=env, capture_output=True, text=True, timeout=300)


TOKEN = "hf_evalTESTtoken0123456789"


def test_local_hub_repo_at_a_tag(mini_folder, tmp_path):
    hub = tmp_path / "hub"
    push(PushConfig(folder=mini_folder, repo="org/phrbench", hub=hub, tag="v0.1.0"))
    local = load_eval_dataset(mini_folder)
    ds = load_eval_dataset("org/phrbench", revision="v0.1.0", hub=hub)
    assert ds.id == "org/phrbench" and len(ds.revision) == 40 and ds.files == local.files
    assert [i.id for i in ds.instances] == [i.id for i in local.instances]
    with pytest.raises(DatasetError, match="v9"):
        load_eval_dataset("org/phrbench", revision="v9", hub=hub)
    with pytest.raises(DatasetError):
        load_eval_dataset("org/nothing", hub=hub)


def test_cli_eval_on_a_hub_dataset(mini_folder, tmp_path):
    with HubServer(tokens={TOKEN: "org"}) as hub, ProtocolServer(responder=lambda m, msgs, k: "Answer: 1") as llm:
        env = hub.client_env(tmp_path / "home")
        env.pop("PHR_HUB_DIR", None)
        r = run(
            "push",
            str(mini_folder),
            "--repo",
            "org/phrbench",
            "--tag",
            "v0.1.0",
            "--endpoint",
            hub.url,
            env={**env, "HF_TOKEN": TOKEN},
        )
        assert r.returncode == 0, r.stderr
        env.update(OPENAI_API_KEY="sk-test-0123456789", OPENAI_BASE_URL=llm.url + "/v1")
        r = run(
            "--cache",
            str(tmp_path / "c.sqlite"),
            "eval",
            "phrbench",
            "--model",
            "openai:gpt-4o",
            "--dataset",
            "org/phrbench",
            "--revision",
            "v0.1.0",
            "--limit",
            "3",
            "--samples",
            "1",
            "--scorer",
            "none",
            "--out",
            str(tmp_path / "run"),
            env=env,
        )
        assert r.returncode == 0, r.stderr[-3000:]
        res = json.loads((tmp_path / "run" / "scores" / "results.json").read_text())
        assert res["dataset"]["id"] == "org/phrbench" and len(res["dataset"]["revision"]) == 40
        assert res["dataset_files"] == load_eval_dataset(mini_folder).files
        assert res["counts"]["questions"] == 3 and hub.errors == []
        r = run("eval", "phrbench", "--model", "openai:gpt-4o", "--dataset", "org/missing", "--scorer", "none", env=env)
        assert r.returncode == 2 and "org/missing" in r.stderr and "Traceback" not in r.stderr

"""The fake Hub (tests.support.hub_server) driven by the real huggingface_hub and datasets clients."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    HfApi,
    HfFileSystem,
    hf_hub_download,
    snapshot_download,
)
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from tests.support.hub_server import HubServer, validate_card

TOKEN = "hf_alice_secret_token_0123456789"
BOB = "hf_bob_secret_token_9876543210"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))

README = textwrap.dedent("""\
    ---
    license: mit
    tags: [test]
    configs:
    - config_name: default
      data_files:
      - split: train
        path: data/train.parquet
    ---
    # Tiny dataset
    """)


def parquet_bytes(rows: dict) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table(rows), buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def hub():
    with HubServer(tokens={TOKEN: "alice", BOB: "bob"}, orgs={"org": ["alice"]}) as server:
        yield server
        assert server.errors == [], server.errors[0]


@pytest.fixture(scope="module", autouse=True)
def _clients(hub):
    # conftest sets HF_HUB_OFFLINE=1 before huggingface_hub is imported and hf_xet is installed: undo both for
    # this module (both are read at call time). endpoint=False: every call below passes endpoint= itself.
    with hub.patch_clients(endpoint=False):
        yield


@pytest.fixture(scope="module")
def api(hub):
    return HfApi(endpoint=hub.url, token=TOKEN)


def add(api: HfApi, repo: str, files: dict[str, bytes], message: str, **kw):
    """One commit of the real client adding ``files`` (path -> bytes) to the dataset ``repo``; its CommitInfo."""
    ops = [CommitOperationAdd(path, data) for path, data in files.items()]
    return api.create_commit(repo, ops, commit_message=message, repo_type="dataset", **kw)


@pytest.fixture(scope="module")
def dataset_repo(hub, api):
    """org/tiny (dataset): README with configs + a parquet file, uploaded with upload_folder."""
    api.create_repo("org/tiny", repo_type="dataset")
    return "org/tiny"


def test_whoami_and_tokens(hub, api):
    assert api.whoami()["name"] == "alice"
    with pytest.raises(HfHubHTTPError) as e:
        HfApi(endpoint=hub.url, token="hf_unknown").whoami()
    assert e.value.response.status_code == 401


def test_create_repo_types_and_conflicts(hub, api):
    url = api.create_repo("org/both", repo_type="dataset")
    assert (url.repo_id, url.repo_type) == ("org/both", "dataset")
    api.create_repo("org/both", repo_type="dataset", exist_ok=True)
    with pytest.raises(HfHubHTTPError) as e:
        api.create_repo("org/both", repo_type="dataset")
    assert e.value.response.status_code == 409

    # same id, another type: a separate repo; a type mismatch is a RepositoryNotFoundError
    api.create_repo("org/only-dataset", repo_type="dataset")
    with pytest.raises(RepositoryNotFoundError, match="a dataset repo with this id exists"):
        api.model_info("org/only-dataset")
    api.create_repo("org/both", repo_type="model")
    assert api.model_info("org/both").id == api.dataset_info("org/both").id == "org/both"
    assert api.repo_exists("org/both") and not api.repo_exists("org/nothing-here")

    # new repos get the Hub's initial commit with .gitattributes
    assert api.list_repo_files("org/both") == [".gitattributes"]
    assert [c.title for c in api.list_repo_commits("org/both")] == ["initial commit"]

    # write permissions follow `orgs`; private repos are invisible to others
    with pytest.raises(HfHubHTTPError) as e:
        HfApi(endpoint=hub.url, token=BOB).create_repo("org/bobs", repo_type="dataset")
    assert e.value.response.status_code == 403
    api.create_repo("org/secret", repo_type="dataset", private=True)
    assert api.dataset_info("org/secret").private is True
    for other in (HfApi(endpoint=hub.url, token=BOB), HfApi(endpoint=hub.url, token=False)):
        with pytest.raises(RepositoryNotFoundError):
            other.dataset_info("org/secret")


def test_upload_download_roundtrip(hub, api, dataset_repo, tmp_path):
    folder = tmp_path / "up"
    (folder / "data").mkdir(parents=True)
    (folder / "README.md").write_text(README)
    (folder / "data" / "train.parquet").write_bytes(parquet_bytes({"q": ["a", "b", "c"], "n": [1, 2, 3]}))
    (folder / "images").mkdir()
    (folder / "images" / "x.png").write_bytes(PNG)
    info = api.upload_folder(folder_path=folder, repo_id=dataset_repo, repo_type="dataset", commit_message="data")
    assert info.oid == hub.head("dataset", dataset_repo)
    assert api.list_repo_files(dataset_repo, repo_type="dataset") == [
        ".gitattributes",
        "README.md",
        "data/train.parquet",
        "images/x.png",
    ]

    # parquet and png went through LFS (batch + PUT), the README as a regular base64 blob
    by_path = {
        f.path: f
        for f in api.get_paths_info(
            dataset_repo, ["README.md", "data/train.parquet", "images/x.png"], repo_type="dataset"
        )
    }
    assert by_path["README.md"].lfs is None
    assert by_path["data/train.parquet"].lfs is not None and by_path["images/x.png"].lfs is not None
    assert any(r["method"] == "PUT" and r["path"].startswith("/_lfs/upload/") for r in hub.requests)

    cache = tmp_path / "cache"
    p = hf_hub_download(
        dataset_repo, "data/train.parquet", repo_type="dataset", endpoint=hub.url, cache_dir=cache, token=False
    )
    assert pq.read_table(p).to_pydict() == {"q": ["a", "b", "c"], "n": [1, 2, 3]}
    snap = snapshot_download(dataset_repo, repo_type="dataset", endpoint=hub.url, cache_dir=cache, token=False)
    assert (Path(snap) / "images" / "x.png").read_bytes() == PNG
    assert (Path(snap) / "README.md").read_text() == README

    # card data, commit history, server-side helpers
    ds = api.dataset_info(dataset_repo)
    assert ds.card_data.configs[0]["config_name"] == "default" and "license:mit" in ds.tags
    assert [c.title for c in api.list_repo_commits(dataset_repo, repo_type="dataset")] == ["data", "initial commit"]
    assert hub.commits("dataset", dataset_repo)[0]["title"] == "data"
    assert hub.files("dataset", dataset_repo)["images/x.png"] == PNG

    # a binary file is LFS in a model repo too (no *.png rule there); HfFileSystem range reads work
    api.create_repo("org/model", repo_type="model")
    api.create_commit(
        "org/model",
        [CommitOperationAdd("logo.png", PNG), CommitOperationAdd("config.json", b"{}")],
        commit_message="model files",
    )
    files = {f.path: f for f in api.list_repo_tree("org/model", recursive=True)}
    assert files["logo.png"].lfs is not None and files["config.json"].lfs is None
    fs = HfFileSystem(endpoint=hub.url, token=False, skip_instance_cache=True)
    with fs.open("org/model/logo.png", "rb", block_size=8) as f:
        f.seek(10)
        assert f.read(6) == PNG[10:16]


def test_tags_refs_and_revisions(hub, api, tmp_path):
    api.create_repo("org/tagged", repo_type="dataset")
    add(api, "org/tagged", {"a.txt": b"v1"}, "one")
    api.create_tag("org/tagged", tag="v1.0", repo_type="dataset")
    add(api, "org/tagged", {"a.txt": b"v2"}, "two")
    refs = api.list_repo_refs("org/tagged", repo_type="dataset")
    assert [(t.name, t.ref) for t in refs.tags] == [("v1.0", "refs/tags/v1.0")]
    assert refs.branches[0].target_commit == hub.head("dataset", "org/tagged") != refs.tags[0].target_commit
    old = hf_hub_download(
        "org/tagged", "a.txt", repo_type="dataset", revision="v1.0", endpoint=hub.url, cache_dir=tmp_path, token=False
    )
    assert Path(old).read_bytes() == b"v1"
    assert api.dataset_info("org/tagged", revision="v1.0").sha == refs.tags[0].target_commit

    with pytest.raises(HfHubHTTPError) as e:
        api.create_tag("org/tagged", tag="v1.0", repo_type="dataset")
    assert e.value.response.status_code == 409
    api.create_tag("org/tagged", tag="v1.0", repo_type="dataset", exist_ok=True)

    api.create_branch("org/tagged", branch="dev", repo_type="dataset")
    api.delete_file("a.txt", "org/tagged", repo_type="dataset", revision="dev")
    assert api.list_repo_files("org/tagged", repo_type="dataset", revision="dev") == [".gitattributes"]
    assert "a.txt" in api.list_repo_files("org/tagged", repo_type="dataset")


def test_pull_request(hub, api, tmp_path):
    api.create_repo("org/pr", repo_type="dataset")
    head = hub.head("dataset", "org/pr")
    info = api.create_commit(
        "org/pr",
        [CommitOperationAdd("new.txt", b"proposal\n")],
        commit_message="Propose",
        commit_description="please merge",
        repo_type="dataset",
        create_pr=True,
    )
    assert info.pr_revision == "refs/pr/1" and info.pr_num == 1
    assert info.pr_url.endswith("/datasets/org/pr/discussions/1")
    assert hub.head("dataset", "org/pr") == head  # main did not move
    assert "new.txt" in api.list_repo_files("org/pr", repo_type="dataset", revision=info.pr_revision)
    p = hf_hub_download(
        "org/pr",
        "new.txt",
        repo_type="dataset",
        revision=info.pr_revision,
        endpoint=hub.url,
        cache_dir=tmp_path,
        token=False,
    )
    assert Path(p).read_bytes() == b"proposal\n"

    [d] = api.get_repo_discussions("org/pr", repo_type="dataset")
    assert (d.num, d.title, d.is_pull_request, d.author) == (1, "Propose", True, "alice")
    details = api.get_discussion_details("org/pr", 1, repo_type="dataset")
    assert details.target_branch == "refs/heads/main" and "+proposal" in details.diff
    assert [e.type for e in details.events] == ["comment", "commit"]
    assert details.events[0].content == "please merge"
    prs = api.list_repo_refs("org/pr", repo_type="dataset", include_pull_requests=True).pull_requests
    assert [(r.ref, r.target_commit) for r in prs] == [("refs/pr/1", info.oid)]

    # pushing to the PR ref moves the PR, not main
    add(api, "org/pr", {"more.txt": b"x"}, "More", revision=info.pr_revision)
    assert hub.head("dataset", "org/pr") == head
    assert len(api.get_discussion_details("org/pr", 1, repo_type="dataset").events) == 3


def test_parent_commit_and_errors(hub, api, tmp_path):
    api.create_repo("org/errs", repo_type="dataset")
    first = add(api, "org/errs", {"a.txt": b"1"}, "c1")
    add(api, "org/errs", {"b.txt": b"2"}, "c2", parent_commit=first.oid)
    head = hub.head("dataset", "org/errs")
    with pytest.raises(HfHubHTTPError) as e:  # stale parent
        add(api, "org/errs", {"c.txt": b"3"}, "c3", parent_commit=first.oid)
    assert e.value.response.status_code == 412
    assert hub.head("dataset", "org/errs") == head

    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info("org/does-not-exist")
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download(
            "org/does-not-exist", "a.txt", repo_type="dataset", endpoint=hub.url, cache_dir=tmp_path, token=False
        )
    with pytest.raises(RevisionNotFoundError):
        api.dataset_info("org/errs", revision="no-such-branch")
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(
            "org/errs", "missing.txt", repo_type="dataset", endpoint=hub.url, cache_dir=tmp_path, token=False
        )
    assert not api.file_exists("org/errs", "missing.txt", repo_type="dataset")
    with pytest.raises(EntryNotFoundError):  # deleting a file that isn't there
        api.create_commit("org/errs", [CommitOperationDelete("missing.txt")], commit_message="rm", repo_type="dataset")

    # injected faults: the request gets the status, nothing else happens
    hub.fail_next("/api/whoami-v2", 503)
    with pytest.raises(HfHubHTTPError) as e:
        api.whoami()
    assert e.value.response.status_code == 503
    assert api.whoami()["name"] == "alice"


def test_validate_yaml(hub, api):
    errors, _ = validate_card("---\nconfigs:\n- config_name: x\n---\n", "dataset")
    assert errors == ['"configs[0]".data_files is required']
    assert validate_card("---\n- a\n- b\n---\n")[0]  # metadata must be a mapping
    assert validate_card("---\nkey: [unclosed\n---\n")[0]  # YAML syntax
    assert validate_card(README, "dataset") == ([], [])

    api.create_repo("org/yaml", repo_type="dataset")
    n_requests = len(hub.requests)
    bad = "---\nconfigs:\n- data_files: data/*.parquet\n---\n"
    with pytest.raises(ValueError, match="config_name is required"):
        api.create_commit(
            "org/yaml",
            [
                CommitOperationAdd("README.md", bad.encode()),
                CommitOperationAdd("data/x.parquet", parquet_bytes({"a": [1]})),
            ],
            commit_message="bad card",
            repo_type="dataset",
        )
    # the client stopped after validate-yaml: nothing was uploaded, the repo is unchanged
    assert [r["path"] for r in hub.requests[n_requests:]] == ["/api/validate-yaml"]
    assert api.list_repo_files("org/yaml", repo_type="dataset") == [".gitattributes"]


def test_failed_commit_after_lfs_upload_leaves_repo_unchanged(hub, api):
    api.create_repo("org/atomic", repo_type="dataset")
    api.create_commit(
        "org/atomic", [CommitOperationAdd("README.md", README.encode())], commit_message="card", repo_type="dataset"
    )
    head, files = hub.head("dataset", "org/atomic"), api.list_repo_files("org/atomic", repo_type="dataset")
    data = parquet_bytes({"q": ["lost"], "n": [0]})
    ops = [CommitOperationAdd("data/train.parquet", data)]

    hub.fail_after_uploads(1)  # the commit POST fails once one LFS object has been uploaded
    with pytest.raises(HfHubHTTPError) as e:
        api.create_commit("org/atomic", ops, commit_message="will fail", repo_type="dataset")
    assert e.value.response.status_code == 500
    oid = ops[0].upload_info.sha256.hex()
    assert oid in hub.lfs_objects("dataset", "org/atomic")  # uploaded ...
    assert hub.head("dataset", "org/atomic") == head  # ... but not committed
    assert api.list_repo_files("org/atomic", repo_type="dataset") == files
    assert len(hub.commits("dataset", "org/atomic")) == 2

    # a retry commits without uploading the object again (the batch API says it is already there)
    n_requests = len(hub.requests)
    api.create_commit(
        "org/atomic", [CommitOperationAdd("data/train.parquet", data)], commit_message="retry", repo_type="dataset"
    )
    assert not any(r["method"] == "PUT" for r in hub.requests[n_requests:])
    assert hub.files("dataset", "org/atomic")["data/train.parquet"] == data


def test_tree_pagination(hub, api):
    api.create_repo("org/many", repo_type="model")
    api.create_commit(
        "org/many", [CommitOperationAdd(f"d{i % 2}/f{i}.txt", b"x") for i in range(7)], commit_message="many"
    )
    hub.tree_page_size = 3
    try:
        n_requests = len(hub.requests)
        files = api.list_repo_files("org/many")
        tree_calls = [r for r in hub.requests[n_requests:] if "/tree/" in r["path"]]
    finally:
        hub.tree_page_size = 1000
    assert len(files) == 8 and len(tree_calls) == 4  # 10 entries (2 folders), 3 per page
    assert {e.path for e in api.list_repo_tree("org/many", "d0")} == {
        "d0/f0.txt",
        "d0/f2.txt",
        "d0/f4.txt",
        "d0/f6.txt",
    }


def test_load_dataset_through_endpoint(hub, api, tmp_path):
    """The real datasets client in a fresh process (it reads HF_ENDPOINT at import)."""
    api.create_repo("org/loadable", repo_type="dataset")
    rows = {"question": ["q1", "q2", "q3"], "label": [0, 1, 0]}
    api.create_commit(
        "org/loadable",
        [
            CommitOperationAdd("README.md", README.encode()),
            CommitOperationAdd("data/train.parquet", parquet_bytes(rows)),
        ],
        commit_message="add",
        repo_type="dataset",
    )
    code = (
        "import datasets, json; d = datasets.load_dataset('org/loadable', split='train'); "
        "print(json.dumps(d.to_dict()))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        env=hub.client_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == rows


def test_token_only_in_authorization_header(hub, api):
    # its own traffic too: under pytest-xdist the module's other tests may run on another worker
    api.create_repo("alice/token-check", repo_type="dataset", exist_ok=True)
    api.upload_file(path_or_fileobj=b"a", path_in_repo="a.txt", repo_id="alice/token-check", repo_type="dataset")
    api.list_repo_files("alice/token-check", repo_type="dataset")
    HfApi(endpoint=hub.url, token=BOB).list_repo_files("alice/token-check", repo_type="dataset")
    log = hub.requests
    assert any(r["authenticated"] for r in log) and len(log) >= 4
    for r in log:
        for secret in (TOKEN, BOB):
            assert secret not in r["path"] and secret not in r["query"]
        assert set(r) == {"method", "path", "query", "status", "user", "authenticated", "fault", "request_bytes"}

"""Cards for the destination (issue 20 item 6): the usage snippet names the repo a folder is pushed to (the local
form stays in the built folder), the Fields tables, PHR_HOME at the quick start, and a no-op re-push that answers
without validating (links still refused first)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from phr.bench.instance import COLUMNS
from phr.cards.fields import fields_table
from phr.config.ops import PullConfig, PushConfig
from phr.hr1.corpora import SCHEMAS
from phr.hub import PushFailedError, ValidationFailedError, folder_files, pull, push
from phr.hub import local as local_hub
from phr.hub import online as online_hub
from phr.hub.card import LOCAL_LABEL, USAGE_END, USAGE_START, hub_label, usage_for_repo

README_MD = Path(__file__).resolve().parents[1] / "README.md"


def _usage(text: str) -> str:
    return text[text.index(USAGE_START) : text.index(USAGE_END) + len(USAGE_END)]


def _head(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "main"], capture_output=True, text=True).stdout


@pytest.fixture
def folder(mini_folder, tmp_path) -> Path:
    dest = tmp_path / "phrbench"
    shutil.copytree(mini_folder, dest)
    return dest


@pytest.fixture
def gate_calls(monkeypatch) -> list[str]:
    """Every validation the pushes run (the real gate, counted)."""
    calls: list[str] = []
    real = local_hub.gate

    def counted(folder, repo_type, **policy):
        calls.append(str(folder))
        return real(folder, repo_type, **policy)

    monkeypatch.setattr(local_hub, "gate", counted)
    monkeypatch.setattr(online_hub, "gate", counted)
    return calls


# ---- the usage snippet ----------------------------------------------------------------------------------------


def test_built_card_shows_the_local_form_and_the_pushed_card_the_repo_id(folder, tmp_path):
    local = (folder / "README.md").read_text()
    assert _usage(local) == (
        f"{USAGE_START}\n{LOCAL_LABEL}\n\n```python\nfrom datasets import load_dataset\n"
        'ds = load_dataset("phrbench", "all")   # or: baseline, truthful, hallucinated (split: test)\n'
        f"```\n{USAGE_END}"
    )
    hub = tmp_path / "hub"
    first = push(PushConfig(folder=folder, repo="org/phrbench", hub=hub))
    repo = hub / "datasets" / "org" / "phrbench"
    pushed = (repo / "README.md").read_text()
    assert _usage(pushed) == (
        f"{USAGE_START}\nLoad it with `datasets` from the repo `org/phrbench`:\n\n```python\n"
        'from datasets import load_dataset\nds = load_dataset("org/phrbench", "all")   '
        f"# or: baseline, truthful, hallucinated (split: test)\n```\n{USAGE_END}"
    )
    assert pushed.replace(_usage(pushed), "") == local.replace(_usage(local), "")  # nothing else changes
    assert (folder / "README.md").read_text() == local  # the built folder is left as it is
    for rel, p in folder_files(folder).items():
        if rel != "README.md":
            assert (repo / rel).read_bytes() == p.read_bytes(), rel
    # idempotent: the same folder again, and the pulled folder, make no commit
    assert not push(PushConfig(folder=folder, repo="org/phrbench", hub=hub)).changed
    pulled = pull(PullConfig(repo="org/phrbench", out=tmp_path / "pulled", hub=hub))
    assert (pulled / "README.md").read_text() == pushed
    assert not push(PushConfig(folder=pulled, repo="org/phrbench", hub=hub)).changed
    assert _head(repo).strip() == first.revision
    # the pulled folder pushed elsewhere names its new repo
    push(PushConfig(folder=pulled, repo="team/copy", hub=hub))
    copied = (hub / "datasets" / "team" / "copy" / "README.md").read_text()
    assert 'load_dataset("team/copy", "all")' in copied and hub_label("team/copy") in copied
    assert "org/phrbench" not in copied


def test_usage_for_repo_rewrites_only_the_marked_block():
    text = (
        'intro: load_dataset("x")\n'
        + f'{USAGE_START}\n{LOCAL_LABEL}\n\n```python\na = load_dataset("phrbench")\n'
        + f'b = load_dataset("./my \\"dir\\"", "all")\n```\n{USAGE_END}\nafter\n'
    )
    out = usage_for_repo(text, "org/name")
    assert out == (
        'intro: load_dataset("x")\n'
        + f'{USAGE_START}\n{hub_label("org/name")}\n\n```python\na = load_dataset("org/name")\n'
        + f'b = load_dataset("org/name", "all")\n```\n{USAGE_END}\nafter\n'
    )
    assert usage_for_repo(out, "org/name") == out
    assert usage_for_repo("no block here\n", "org/name") == "no block here\n"


# ---- the Fields tables ----------------------------------------------------------------------------------------


def test_phrbench_card_fields_table_has_every_column_with_type_meaning_and_an_example(mini_folder):
    card = (mini_folder / "README.md").read_text()
    section = card[card.index("## Fields") : card.index("## Limitations")]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == [c.name for c in COLUMNS]
    example = pq.read_table(next((mini_folder / "data").glob("hallucinated-*.parquet"))).to_pylist()[0]
    by_name = {r.split("`")[1]: [c.strip() for c in r.strip("|").split(" | ")] for r in rows}
    assert by_name["condition"] == [
        "`condition`",
        "string: B / B+T / B+H",
        "B: the question alone; B+T: with a truthful premise; B+H: with a hallucinated premise",
        "`B+H`",
    ]
    assert by_name["id"][3] == f"`{example['id']}`"
    assert by_name["answer_index"][1:] == [
        "int64",
        "the gold option's index (multiple choice; null otherwise)",
        str(example["answer_index"]),
    ]
    assert by_name["options"][1] == "list of string"
    assert by_name["code_tests"][3] == "null"  # the example is a multiple-choice row


def test_hr1_card_fields_table_and_usage():
    from phr.cards.hr1_card import MEANINGS, render

    for kind, schema in SCHEMAS.items():  # every column of every corpus kind has its meaning
        assert [f.name for f in schema if f.name not in MEANINGS] == [], kind
    row = {
        "id": "sq-1-p2",
        "question_id": "sq-1",
        "source": "simplequestions",
        "split": "train",
        "question": "Who wrote Dune?",
        "paraphrase": "Dune was written by whom?",
        "answer": "Frank Herbert",
        "license": "CC-BY-3.0",
        "messages": [{"role": "user", "content": "Dune was written by whom?"}],
    }
    configs = [{"config_name": "simplequestions", "data_files": []}, {"config_name": "popqa", "data_files": []}]
    card = render("hr1-sft", configs, {}, {"simplequestions": [row], "popqa": []})
    assert 'ds = load_dataset("hr1-sft", "simplequestions")   # configs: simplequestions, popqa' in card
    assert "| `answer` | string | the gold answer the SFT target carries | `Frank Herbert` |" in card
    assert (
        "| `messages` | list of struct (role, content) | the chat for SFT: system (Listing B.4), user (the "
        'paraphrase), assistant (the answer) | `[{"role": "user", "content": "Dune was written by whom?"}]` |'
    ) in card
    pushed = usage_for_repo(card, "alice/hr1-sft")
    assert 'ds = load_dataset("alice/hr1-sft", "simplequestions")' in pushed


def test_fields_table_refuses_a_column_without_a_meaning():
    with pytest.raises(KeyError, match="no meaning for the column"):
        fields_table([("id", "string"), ("new_col", "string")], {"id": "the id"}, {"id": "x"})


def test_readme_quick_start_names_phr_home():
    text = README_MD.read_text()
    quick = text[text.index("## Quick start") : text.index("## Install by hand")]
    assert "PHR_HOME" in quick and "~/.cache/phr" in quick


# ---- a no-op re-push answers before validating ------------------------------------------------------------------


def test_noop_repush_skips_validation_and_a_change_is_validated(folder, tmp_path, gate_calls):
    hub = tmp_path / "hub"
    push(PushConfig(folder=folder, repo="org/phrbench", hub=hub))
    assert len(gate_calls) == 1
    again = push(PushConfig(folder=folder, repo="org/phrbench", hub=hub))
    assert not again.changed and len(gate_calls) == 1  # same content as main: no validation
    tagged = push(
        PushConfig(folder=folder, repo="org/phrbench", tag="v1", hub=hub)
    )  # a new tag on the same content is validated
    assert tagged.tag_created and not tagged.changed and len(gate_calls) == 2
    (folder / "NOTES.md").write_text("notes\n")
    changed = push(PushConfig(folder=folder, repo="org/phrbench", hub=hub))
    assert changed.changed and changed.files == ["NOTES.md"] and len(gate_calls) == 3


def test_noop_repush_of_a_folder_with_a_link_is_still_refused(folder, tmp_path, gate_calls):
    hub = tmp_path / "hub"
    first = push(PushConfig(folder=folder, repo="org/phrbench", hub=hub))
    os.symlink("/etc/hostname", folder / "extra.txt")
    with pytest.raises(ValidationFailedError, match="extra.txt"):
        push(PushConfig(folder=folder, repo="org/phrbench", hub=hub))
    assert _head(hub / "datasets" / "org" / "phrbench").strip() == first.revision


def test_a_change_that_fails_validation_is_refused(folder, tmp_path):
    """What is on main passed the gate when it was pushed; a folder that differs from it is validated again."""
    hub = tmp_path / "hub"
    push(PushConfig(folder=folder, repo="org/phrbench", hub=hub))
    next((folder / "data").glob("hallucinated-*.parquet")).unlink()  # the card's config now names no file
    with pytest.raises(ValidationFailedError, match="hallucinated"):
        push(PushConfig(folder=folder, repo="org/phrbench", hub=hub))


HF_TOKEN_VALUE = "hf_card_test_token_0123456789"


@pytest.fixture
def hf(monkeypatch):
    hub_server = pytest.importorskip("tests.support.hub_server")
    monkeypatch.delenv("PHR_HUB_DIR", raising=False)
    monkeypatch.setenv("HF_TOKEN", HF_TOKEN_VALUE)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    with hub_server.HubServer(tokens={HF_TOKEN_VALUE: "alice"}) as server, server.patch_clients():
        yield server
        assert server.errors == [], server.errors[0]


def test_online_push_names_the_repo_and_a_noop_repush_skips_validation(folder, hf, gate_calls):
    res = push(PushConfig(folder=folder, repo="alice/phrbench", endpoint=hf.url))
    assert res.changed and len(gate_calls) == 1
    card = hf.files("dataset", "alice/phrbench")["README.md"].decode()
    assert 'ds = load_dataset("alice/phrbench", "all")' in card and hub_label("alice/phrbench") in card
    n = len(hf.commits("dataset", "alice/phrbench"))
    again = push(PushConfig(folder=folder, repo="alice/phrbench", endpoint=hf.url))
    assert not again.changed and len(gate_calls) == 1
    assert len(hf.commits("dataset", "alice/phrbench")) == n


def test_push_to_an_unreachable_hub_names_the_local_hub_flag(mini_folder, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("PHR_HUB_DIR", raising=False)
    monkeypatch.setenv("HF_TOKEN", "hf_unreachable_test_token_0123")
    with pytest.raises(PushFailedError, match="no answer from the Hub: offline, publish to a local hub with --hub"):
        push(PushConfig(folder=mini_folder, repo="org/phrbench", endpoint="http://127.0.0.1:9"))

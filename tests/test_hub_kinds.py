"""The generic hub layer: artifact kinds decide how a folder's content is validated; an unknown kind is refused."""

import pytest

from phr.config.ops import PushConfig
from phr.core.report import Rejection, ValidationReport
from phr.hub import (
    ArtifactKind,
    UnknownKindError,
    ValidationFailedError,
    all_kinds,
    push,
    register_kind,
    unregister_kind,
)

CARD = "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/train.csv\n---\n# Toy\n"


def toy_folder(tmp_path, rows="a,b\n1,2\n"):
    folder = tmp_path / "toy"
    (folder / "data").mkdir(parents=True)
    (folder / "README.md").write_text(CARD)
    (folder / "data" / "train.csv").write_text(rows)
    return folder


@pytest.fixture
def clean_registry():
    yield
    unregister_kind("toy")


def test_installed_kinds_come_from_entry_points():
    assert {k.name: k.repo_type for k in all_kinds()} == {
        "model": "model",
        "phrbench": "dataset",
        "phrbench-results": "dataset",
        "hr1-paraphrases": "dataset",
        "hr1-sft": "dataset",
        "hr1-grpo": "dataset",
        "leaderboard-space": "space",
    }


def test_unknown_kind_is_refused_with_how_to_register(tmp_path, clean_registry):
    folder = toy_folder(tmp_path)
    with pytest.raises(UnknownKindError) as e:
        push(PushConfig(folder=folder, repo="org/toy", hub=tmp_path / "hub"))
    msg = str(e.value)
    assert (
        "no artifact kind recognises" in msg and "hr1-grpo, hr1-paraphrases, hr1-sft, phrbench, phrbench-results" in msg
    )
    assert "register_kind" in msg and "phr.hub.kinds" in msg and "nothing was uploaded" in msg
    assert not (tmp_path / "hub" / "datasets" / "org" / "toy").exists()


def test_a_registered_kind_validates_and_publishes(tmp_path, clean_registry):
    def validate(folder):
        report = ValidationReport()
        lines = (folder / "data" / "train.csv").read_text().splitlines()
        report.extend(
            Rejection(f"line {n}", "toy", "not two fields") for n, x in enumerate(lines, 1) if x.count(",") != 1
        )
        return report

    register_kind(ArtifactKind("toy", "dataset", lambda folder, configs: "default" in configs, validate))
    res = push(PushConfig(folder=toy_folder(tmp_path), repo="org/toy", hub=tmp_path / "hub"))
    assert res.changed and res.created
    bad = toy_folder(tmp_path / "bad", rows="a,b\n1,2,3\n")
    with pytest.raises(ValidationFailedError, match="line 2"):
        push(PushConfig(folder=bad, repo="org/toy", hub=tmp_path / "hub"))

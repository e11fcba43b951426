"""Issue 27 acceptance for the build and hub operations: the Python API (``run(plan(cfg))``) and the command line
give the same files byte for byte (PHRBench-mini build; a push to a local hub), an out-of-bounds value is one
line naming the key (exit 2), and the hub gate never takes a relaxed pass (``--allow-unreviewed``) for a strict
one."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from phr.api import plan, run
from phr.cli import app
from phr.config.ops import BuildPhrbenchConfig, PushConfig, ValidateConfig
from phr.core.report import Rejection, ValidationReport
from phr.hub import ArtifactKind, ValidationFailedError, gate, register_kind, unregister_kind
from phr.hub.local import LocalHub, read_tree


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_phrbench_mini_build_api_and_cli_write_the_same_bytes(tmp_path):
    res = run(plan(BuildPhrbenchConfig(out=tmp_path / "api")))
    assert res.out == (tmp_path / "api").resolve() and sum(res.counts.values()) == 170
    r = CliRunner().invoke(app, ["build", "phrbench", "--out", str(tmp_path / "cli")])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("plan:\n  recipe mini: curated premises (no generator calls)\n")  # the plan, first
    api, cli = _files(tmp_path / "api"), _files(tmp_path / "cli")
    assert sorted(api) == sorted(cli) and len(api) > 5
    assert all(api[k] == cli[k] for k in api), [k for k in api if api[k] != cli[k]]


def test_push_to_a_local_hub_api_and_cli_store_the_same_repo_files(mini_folder, tmp_path):
    res = run(plan(PushConfig(folder=mini_folder, repo="org/phrbench", hub=tmp_path / "hub-api", tag="v0.1.0")))
    assert res.changed and res.created and res.tag_created
    r = CliRunner().invoke(
        app, ["push", str(mini_folder), "--repo", "org/phrbench", "--hub", str(tmp_path / "hub-cli"), "--tag", "v0.1.0"]
    )
    assert r.exit_code == 0, r.output
    api = read_tree(LocalHub(tmp_path / "hub-api"), "org/phrbench", "dataset", "v0.1.0")
    cli = read_tree(LocalHub(tmp_path / "hub-cli"), "org/phrbench", "dataset", "v0.1.0")
    assert api == cli and "README.md" in api


@pytest.mark.parametrize(
    ("args", "key"),
    [
        (["build", "phrbench", "--timeout", "0"], "--timeout"),
        (["build", "phrbench", "--max-retry-after", "-1"], "--max-retry-after"),
        (["push", "FOLDER", "--repo", "org/x", "--repo-type", "notebook"], "--repo-type"),
        (["pull", "org/x", "--repo-type", "notebook"], "--repo-type"),
        (["validate", "FOLDER", "--eval-set", "=x"], "--eval-set"),
    ],
)
def test_an_out_of_bounds_value_is_one_line_naming_the_key(args, key, tmp_path):
    args = [str(tmp_path) if a == "FOLDER" else a for a in args]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {key} "), r.stderr
    assert "Traceback" not in r.output


@pytest.fixture
def strict_kind(tmp_path):
    """A kind whose strict check refuses what its relaxed (unreviewed) check takes."""

    def strict(folder: Path) -> ValidationReport:
        return ValidationReport([Rejection("data/train.csv", "review", "not reviewed")])

    register_kind(
        ArtifactKind(
            "reviewed-toy",
            "dataset",
            lambda folder, configs: "default" in configs,
            strict,
            validate_unreviewed=lambda folder: ValidationReport(),
        )
    )
    folder = tmp_path / "toy"
    (folder / "data").mkdir(parents=True)
    (folder / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/train.csv\n---\n# T\n"
    )
    (folder / "data" / "train.csv").write_text("a\n1\n")
    yield folder
    unregister_kind("reviewed-toy")


def test_a_relaxed_pass_is_not_remembered_as_a_strict_one(strict_kind, tmp_path):
    assert gate(strict_kind, "dataset", allow_unreviewed=True).ok  # passes, and is remembered under its policy
    with pytest.raises(ValidationFailedError, match="not reviewed"):
        gate(strict_kind, "dataset")  # the same content, the strict policy: checked again, refused
    with pytest.raises(ValidationFailedError, match="not reviewed"):
        run(plan(PushConfig(folder=strict_kind, repo="org/toy", hub=tmp_path / "hub")))
    res = run(plan(PushConfig(folder=strict_kind, repo="org/toy", hub=tmp_path / "hub", allow_unreviewed=True)))
    assert res.changed


def test_validate_checks_a_folder_by_its_kind(strict_kind):
    report = run(plan(ValidateConfig(folder=strict_kind)))
    assert report.ok  # `validate` reports the review but does not require it (the kind's unreviewed check)

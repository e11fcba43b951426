"""A library error names the config field (``overwrite=True``); the CLI shows the command's flag (issue 33, item 8):
the rewrite is the CLI error boundary's (phr.cli.fields), by the field metadata the flags are made from."""

from __future__ import annotations

import pytest

from phr.cli.fields import in_flags
from phr.config.ops import BuildPhrbenchConfig, EvalPhrbenchConfig, PullConfig, TrainGrpoConfig, ValidateConfig
from phr.core.errors import UsageError
from tests.support.cli import invoke


@pytest.mark.parametrize(
    ("cls", "message", "shown"),
    [
        (
            BuildPhrbenchConfig,
            "out: already exists (pass overwrite=True to replace it)",
            "(pass --overwrite to replace it)",
        ),
        (EvalPhrbenchConfig, "or plots=False, score=True", "or --no-plots, --score"),
        (EvalPhrbenchConfig, "give max_tokens=256 or samples=2", "give --max-tokens 256 or --samples 2"),
        (PullConfig, "pass hub='DIR' (or hub=\"DIR\")", "pass --hub DIR (or --hub DIR)"),
        (PullConfig, "out='my pulls': exists", "--out 'my pulls': exists"),  # quoted as a shell needs it
        (TrainGrpoConfig, "recipe='tiny-stage1'", "--config tiny-stage1"),  # a field whose flag is not its name
    ],
)
def test_a_field_of_the_command_is_written_as_its_flag(cls, message, shown):
    assert in_flags(message, cls).endswith(shown)


@pytest.mark.parametrize(
    "message",
    [
        "--set trainer.max_steps=5 and --source truthfulqa=PATH",  # not fields, or not as Python writes them
        "NAME=PATH, overwrite=yes, k=4",  # no such field of the command / not a literal / not a field here
        "plots=1, max_tokens=True",  # a value of the wrong type: not a setting the flag could take
        "folder='x'",  # an argument: it has no flag
    ],
)
def test_anything_else_is_left_as_it_is(message):
    assert in_flags(message, ValidateConfig if "folder" in message else EvalPhrbenchConfig) == message
    assert in_flags(message, None) == message


def test_the_cli_shows_the_flag_where_the_library_names_the_field(monkeypatch, tmp_path):
    """The same error from Python and from `phr-publish build phrbench` (global options before the command)."""
    import phr.api

    def plan(cfg):  # what an operation's plan raises on a folder that exists, in the library's words
        raise UsageError(f"{cfg.out}: already exists (pass overwrite=True to replace it; max_tokens=5 is no field)")

    monkeypatch.setattr(phr.api, "plan", plan)
    with pytest.raises(UsageError, match=r"pass overwrite=True to replace it"):
        phr.api.plan(BuildPhrbenchConfig(out=tmp_path))
    r = invoke("--log-level", "WARNING", "build", "phrbench", "--out", tmp_path)
    assert r.returncode == 2
    assert (
        r.stderr.strip()
        == f"error: {tmp_path}: already exists (pass --overwrite to replace it; max_tokens=5 is no field)"
    )

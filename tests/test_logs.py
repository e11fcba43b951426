"""What a log (stdout / stderr not a terminal) and the reports say (issue 25 items 5, 6): tables at full width,
no empty tables, plain one-line log records, whole command summaries in --help, banners that describe the run."""

from __future__ import annotations

import logging
import re

import pytest
from typer.testing import CliRunner

from phr.cli import app
from phr.llm.summary import RunSummary

LONG_SPEC = "openai-compatible:http://localhost:8000/v1#meta-llama/Llama-3.1-70B-Instruct"


def _summary() -> RunSummary:
    s = RunSummary()
    m = s.model(LONG_SPEC)
    m.samples, m.calls, m.cache_hits, m.prompt_tokens, m.completion_tokens, m.cost_usd = 120, 40, 80, 51234, 9876, 1.5
    m.failures["rate_limited"] = 3
    return s


def test_the_calls_table_is_not_cut_in_a_log(capsys):
    """Rich assumed 80 columns off a terminal: ``openai…`` and ``$1.50…``; the whole row is one line now."""
    _summary().print()
    err = capsys.readouterr().err
    row = next(line for line in err.splitlines() if "120" in line)
    assert LONG_SPEC in row and "rate_limited=3" in row and "$1.5000" in row and "51234" in row
    assert "…" not in err
    header = next(line for line in err.splitlines() if "model" in line)
    assert "completion tok" in header and "est. cost" in header  # no header cell wrapped onto a second line


def test_no_model_asked_means_no_table(capsys):
    RunSummary().print()
    assert capsys.readouterr().err == ""


def test_build_hr1_grpo_prints_no_empty_calls_table(tmp_path):
    r = CliRunner().invoke(app, ["build", "hr1-grpo", "--out", str(tmp_path / "grpo")])
    assert r.exit_code == 0, r.output
    assert "LLM calls" not in r.output and "┏" not in r.output
    assert "prompts 14" in r.output


def test_log_records_are_plain_single_lines_off_a_terminal(capsys):
    from phr.core.log import setup_logging

    setup_logging("INFO")
    try:
        message = "a long message " + "x" * 150 + " end"
        logging.getLogger("phr.test").info(message)
    finally:
        logging.getLogger().handlers[:] = []
        logging.getLogger().setLevel(logging.WARNING)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert re.fullmatch(r"\[\d\d:\d\d:\d\d\] INFO phr\.test: " + re.escape(message), lines[0])


def test_top_level_help_keeps_each_commands_first_sentence_whole():
    out = CliRunner().invoke(app, ["--help"]).output
    commands = " ".join(out.split("Commands:")[1].split())
    assert "..." not in commands
    assert "Build datasets (PHRBench; the Hallucination-R1 corpora: hr1-paraphrases, hr1-sft, hr1-grpo)." in commands
    assert (
        "Validate FOLDER, then push it to the Hub or a local hub as one commit (none if nothing changed)." in commands
    )
    build = " ".join(CliRunner().invoke(app, ["build", "--help"]).output.split("Commands:")[1].split())
    assert "..." not in build and "questions the QA model answers correctly (appendix C.1)." in build


def test_eval_hr1_banner_describes_the_run_that_happens(tmp_path, monkeypatch):
    """A paraphraser and a judge on the mini's questions: not the mini banner's "curated ... no judge model"."""
    monkeypatch.chdir(tmp_path)  # the default --out (runs-hr1) of a checkout where the docs' commands ran exists
    args = ["eval", "hr1", "--paraphraser", "local:smollm2", "--judge", "local:smollm2", "--k", "2", "--limit", "1"]
    r = CliRunner().invoke(app, [*args, "--dry-run"])
    assert r.exit_code == 0, r.output
    banner = next(line for line in r.output.splitlines() if line.startswith("preset mini:"))
    assert banner == (
        "preset mini: Hallucination-R1-mini (2 of 52 packaged questions: 1 simplequestions, 1 truthfulqa); "
        "K = 2 paraphrases by local:smollm2; QA local:smollm2, alias-match grading, judge local:smollm2"
    )
    curated = CliRunner().invoke(app, ["eval", "hr1", "--dry-run"])
    assert curated.exit_code == 0, curated.output
    assert (
        "preset mini: Hallucination-R1-mini (52 of 52 packaged questions: 28 simplequestions, 24 truthfulqa); "
        "K = 4 curated paraphrases with the maintainers' consistency labels; QA local:smollm2, alias-match "
        "grading, no judge model"
    ) in curated.output


def test_the_load_hint_names_each_config_of_a_multi_source_corpus(tmp_path):
    """``load_dataset("hr1-mini")`` loads only the default config (28 of 52 rows): the hint names every config."""
    from phr.cli.hr1 import load_hint

    card = ["---", "configs:"]
    for name, split in (("simplequestions", "test"), ("truthfulqa", "validation")):
        card += [f"- config_name: {name}", "  data_files:", f"  - split: {split}", f"    path: data/{name}-*.parquet"]
        card += ["  default: true"] if name == "simplequestions" else []
    (tmp_path / "README.md").write_text("\n".join([*card, "---", "# corpus", ""]))
    assert load_hint(tmp_path) == (
        f'load it with: load_dataset("{tmp_path}", "simplequestions") and load_dataset("{tmp_path}", "truthfulqa") '
        f'(one config per source; load_dataset("{tmp_path}") alone loads only simplequestions)'
    )
    one = tmp_path / "one"
    one.mkdir()
    (one / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files: data/*.parquet\n---\n")
    assert load_hint(one) == f'load it with: load_dataset("{one}")'
    every = tmp_path / "every"  # as the builds write it now: the default config `all` holds every row
    every.mkdir()
    card.remove("  default: true")
    card += ["- config_name: all", "  data_files:", "  - split: test", "    path: data/simplequestions-*.parquet",
             "  - split: validation", "    path: data/truthfulqa-*.parquet", "  default: true"]  # fmt: skip
    (every / "README.md").write_text("\n".join([*card, "---", "# corpus", ""]))
    assert load_hint(every) == (
        f'load it with: load_dataset("{every}") (config all: every row; one source: "simplequestions", "truthfulqa")'
    )


def test_the_vllm_hint_keeps_the_constraints_and_names_the_way_without_it():
    import importlib.util

    from phr.llm.providers.vllm_engine import INSTALL_HINT
    from phr.training.preflight import _vllm_problem

    assert "pip install -c constraints.txt -e '.[vllm]'" in INSTALL_HINT
    if importlib.util.find_spec("vllm") is None:  # this machine: no vllm
        problem = _vllm_problem()
        assert "pip install -c constraints.txt -e '.[vllm]'" in problem
        assert problem.endswith("--set trainer.use_vllm=false")


def test_a_submission_error_names_its_file_once(tmp_path, mini_folder):
    meta = tmp_path / "meta.json"
    meta.write_text('{"model": "org/model", "revision": "main"}')
    sub = tmp_path / "sub.jsonl"
    sub.write_text('{"instance_id": "nope", "sample": 0, "response": "a"}\n')
    r = CliRunner().invoke(app, ["score", str(sub), "--meta", str(meta), "--dataset", str(mini_folder)])
    assert r.exit_code == 2, r.output
    assert f"  - {sub}: submission rejected, 2 problems:" in r.output
    assert r.output.count(str(sub)) == 1


def test_the_mini_build_says_what_undecided_means(tmp_path):
    r = CliRunner().invoke(app, ["build", "phrbench", "--out", str(tmp_path / "phrbench")])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    at = lines.index("  manual review: undecided: 136")
    assert lines[at + 1].startswith("  (undecided: premises no one has decided on with `phr-publish review` yet;")
    assert "this recipe needs no review to load, validate or push" in lines[at + 1]


def test_training_steps_get_progress_lines_in_a_log():
    """tqdm's bar is off in a log; the StepProgress callback says the steps instead (clock injected, no trainer)."""
    import io
    from types import SimpleNamespace

    from phr.core.progress import LineProgress
    from phr.training.checkpoint import StepProgress

    now = [0.0]
    out = io.StringIO()
    cb = StepProgress(LineProgress(out, every=10, clock=lambda: now[0]))
    state = SimpleNamespace(is_world_process_zero=True, max_steps=4, global_step=0)
    cb.on_train_begin(None, state, None)
    for step in range(1, 5):
        now[0] += 12.0
        state.global_step = step
        cb.on_step_end(None, state, None)
    cb.on_train_end(None, state, None)
    assert out.getvalue().splitlines() == [
        "[progress] training steps: 1/4 (25%), 12s elapsed",
        "[progress] training steps: 2/4 (50%), 24s elapsed, about 24s left",
        "[progress] training steps: 3/4 (75%), 36s elapsed, about 12s left",
        "[progress] training steps: 4/4 (100%), 48s elapsed",
    ]


@pytest.mark.slow  # it builds a (tiny) language model
def test_the_known_trl_deprecation_warning_is_filtered_for_training_only():
    """TRL reads transformers' deprecated ``is_gradient_checkpointing``: the real warning, dropped while training."""
    import warnings

    import pytest
    from transformers import LlamaConfig, LlamaForCausalLM

    from phr.training.checkpoint import known_warnings_filtered

    config = LlamaConfig(vocab_size=32, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1)  # fmt: skip
    model = LlamaForCausalLM(config)
    with pytest.warns(FutureWarning, match="is_gradient_checkpointing"):
        assert model.is_gradient_checkpointing is False
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with known_warnings_filtered():
            assert model.is_gradient_checkpointing is False
            warnings.warn("another deprecation", FutureWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["another deprecation"]


def test_eval_phrbench_stops_its_checking_heartbeat_on_every_path(mini_folder):
    """The heartbeat that covers the checks before the first call ends with them: after a dry run, after a bad
    argument (exit 2), nothing is left beating."""
    import threading

    base = ["eval", "phrbench", "--model", "local:smollm2", "--dataset", str(mini_folder), "--limit", "1"]
    ok = CliRunner().invoke(app, [*base, "--dry-run"])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(app, [*base, "--shard", "3/2", "--dry-run"])
    assert bad.exit_code == 2, bad.output
    assert [t for t in threading.enumerate() if t.name == "phr-heartbeat"] == []

"""Progress within a long step (issue 20 item 3): a local model's batch reports its tokens as they come, the
loading line names the model and why, and a log (no terminal) gets periodic one-line progress."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from phr.core.progress import BAR_ENV, LineProgress, loading, progress_bar, quiet_third_party_bars
from phr.llm.providers.base import BatchItem
from phr.llm.types import GenerationParams, as_messages

IMPORTED = time.monotonic()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A tiny random Llama (1 layer, width 16) with the packaged MiniLM's tokenizer: loads and generates in a
    second, no download."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from phr.llm.embed import default_model_dir

    folder = tmp_path_factory.mktemp("tiny") / "tiny-llama"
    tok_dir = default_model_dir()
    config = LlamaConfig(
        vocab_size=30522,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=256,
        eos_token_id=102,  # [SEP]; random weights rarely pick it: rows run to their budget
        pad_token_id=0,
    )
    import torch

    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    for name in ("tokenizer.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy(f"{tok_dir}/{name}", folder / name)
    tok_config = json.loads(Path(tok_dir, "tokenizer_config.json").read_text())
    tok_config["model_input_names"] = ["input_ids", "attention_mask"]  # a decoder takes no token_type_ids
    (folder / "tokenizer_config.json").write_text(json.dumps(tok_config))
    return folder


@pytest.mark.slow
def test_local_batch_reports_progress_per_token_before_it_finishes(tiny_model, capsys):
    from phr.llm.providers.hf_local import HFProvider

    provider = HFProvider(str(tiny_model), batch_size=4)
    provider.purpose = "as the test's generator"
    seen: list[float] = []
    params = GenerationParams(max_tokens=12, temperature=0.0)
    items = [BatchItem(as_messages(f"question {i}"), params, 0) for i in range(6)]  # two batches: 4 + 2
    raws = provider.complete_batch(items, progress=seen.append)
    assert len(raws) == 6
    # the loading line names the model, where it runs and why, before anything else
    err = capsys.readouterr().err
    assert f"loading hf:{tiny_model} (tiny-llama) on cpu as the test's generator ..." in err
    assert "Loading weights" not in err  # transformers' own bar is silenced
    # one report per generated token (12 per batch at most) plus one at each batch's end, counting up to 6
    assert seen[-1] == 6.0
    assert seen == sorted(seen)
    first_batch = [x for x in seen if x < 4]
    assert len(first_batch) >= 5  # the bar moved many times before the first batch of 4 was done
    assert 0 < first_batch[0] < 4  # ... already after its first token
    assert 4.0 in seen  # the first batch's end, then the second batch counts from there
    assert any(4 < x < 6 for x in seen)


@pytest.mark.slow
def test_llm_client_moves_its_bar_within_a_batch(tiny_model):
    """Through the LLM layer: the log form of the bar gets the partial counts from the provider's thread."""
    from phr.llm import LLM
    from phr.llm.types import ChatRequest

    llm = LLM(f"hf:{tiny_model}", progress=True, show_summary=False, cache_mode="off")
    llm.provider.batch_size = 8
    updates: list[float] = []

    class Recorder(LineProgress):
        def update(self, task_id, **kw):
            super().update(task_id, **kw)
            updates.append(self.tasks[task_id].completed)

    llm._progress = lambda: Recorder(io.StringIO(), every=3600)
    reqs = [ChatRequest(as_messages(f"q{i}"), GenerationParams(max_tokens=10, temperature=0.0)) for i in range(3)]
    res = llm.generate(reqs)
    assert all(r.samples[0] is not None for r in res)
    assert any(0 < u < 3 and not float(u).is_integer() for u in updates)  # within the one batch of 3
    assert updates[-1] == 3
    assert updates == sorted(updates)  # the count never goes back while the batch's samples are stored
    assert llm.provider.purpose == "for generating"


def test_line_progress_prints_one_line_at_most_every_interval_and_at_the_end():
    now = [0.0]
    out = io.StringIO()
    bar = LineProgress(out, every=10, clock=lambda: now[0])
    with bar:
        t = bar.add_task("generating", total=120, completed=20)  # 20 cached
        bar.advance(t, 5)  # t=0: too soon; the count moved (25): the rate counts from here
        now[0] = 12.0
        bar.advance(t, 5)  # t=12: a line (30/120); rate 5 done in 12 s -> 90 left in 216 s
        now[0] = 15.0
        bar.advance(t, 1)  # t=15: too soon after the last line
        now[0] = 30.0
        bar.update(t, completed=40)  # t=30: a line; 15 done in 30 s -> 80 left in 160 s
        now[0] = 45.0
        bar.update(t, completed=40)  # t=45: nothing moved: no line, and none at the end
    lines = out.getvalue().splitlines()
    assert lines == [
        "[progress] generating: 30/120 (25%), 12s elapsed, about 3m36s left",
        "[progress] generating: 40/120 (33%), 30s elapsed, about 2m40s left",
    ]


def test_line_progress_prints_the_final_count_of_a_long_step_only():
    now = [0.0]
    out = io.StringIO()
    with LineProgress(out, every=10, clock=lambda: now[0]) as bar:
        short = bar.add_task("embedding", total=2)
        bar.update(short, completed=2)  # done at once: no line
        now[0] = 20.0  # the short one ended at 0 s: it stays quiet at the end too
        t = bar.add_task("trajectory metrics", total=4)
        now[0] = 30.0
        bar.update(t, completed=2)  # a periodic line
        now[0] = 35.0
        bar.update(t, completed=4)  # too soon for the next periodic line ...
        now[0] = 50.0
    assert out.getvalue().splitlines() == [
        "[progress] trajectory metrics: 2/4 (50%), 10s elapsed",  # its first move: no rate yet, no estimate
        "[progress] trajectory metrics: 4/4 (100%), 15s elapsed",  # ... but the end is said
    ]


def test_no_terminal_means_line_progress_and_disabled_means_nothing(capsys):
    assert isinstance(progress_bar(True), LineProgress)  # pytest's stderr is not a terminal
    with progress_bar(False) as off:
        off.update(off.add_task("x", total=3), completed=3)
    assert capsys.readouterr().err == ""


def test_sentence_model_loading_names_itself_without_transformers_bar():
    """In a fresh process (the model loads there): our line, not transformers' bare "Loading weights" bar."""
    code = "from phr.llm.embed import embed; print(embed(['a b c', 'd e f'], progress=False).shape)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "(2, 384)"
    assert "loading the sentence-embedding model (all-MiniLM-L6-v2) on cpu for the embedding checks ..." in r.stderr
    assert "Loading weights" not in r.stderr


def test_loading_line():
    out = io.StringIO()
    line = loading("local:smollm2 (SmolLM2-135M-Instruct) on cpu", "as the reference scorer", stream=out)
    assert line == "loading local:smollm2 (SmolLM2-135M-Instruct) on cpu as the reference scorer ..."
    assert out.getvalue() == line + "\n"


def test_estimate_comes_from_the_steps_own_rate_after_a_warm_up():
    """Issue 25: a model load (20 s) before the count moves made the first estimate hours long; now the rate is
    measured from the first move, there is no estimate before ``every`` seconds of it, and elapsed is the step's."""
    now = [100.0]  # the process started long before this step
    out = io.StringIO()
    with LineProgress(out, every=10, clock=lambda: now[0]) as bar:
        t = bar.add_task("answering", total=100)
        now[0] = 120.0
        bar.update(t, completed=0.5)  # t=20 s: the first token after the load: a line, no estimate
        now[0] = 125.0
        bar.update(t, completed=6)  # 5 s into the work: too soon for a line
        now[0] = 130.5
        bar.update(t, completed=11.5)  # 10.5 s of work, 11 done: 1.05/s -> 88.5 left in 84 s
        now[0] = 141.0
        bar.update(t, completed=22.5)
    assert out.getvalue().splitlines() == [
        "[progress] answering: 0/100 (0%), 20s elapsed",  # whole samples: the rate keeps the fractions
        "[progress] answering: 11/100 (11%), 30s elapsed, about 1m24s left",
        "[progress] answering: 22/100 (22%), 41s elapsed, about 1m14s left",
    ]


def test_heartbeat_says_a_step_without_a_count_is_still_running():
    from phr.core.progress import Heartbeat

    now = [50.0]
    out = io.StringIO()
    beat = Heartbeat("converting SmolLM2-135M-Instruct.Q4_1.gguf", out, every=10, clock=lambda: now[0])
    assert beat.tick() is None  # at its start: nothing
    now[0] = 59.0
    assert beat.tick() is None
    now[0] = 60.0
    assert beat.tick() == "[progress] converting SmolLM2-135M-Instruct.Q4_1.gguf: 10s elapsed"
    now[0] = 65.0
    assert beat.tick() is None  # 5 s after the last line
    now[0] = 87.0
    beat.tick()
    assert out.getvalue().splitlines()[-1] == "[progress] converting SmolLM2-135M-Instruct.Q4_1.gguf: 37s elapsed"
    # run(): ticks until the wait says the step ended (a fake wait: no sleeping, no timing)
    answers = iter([False, False, True])
    ticks: list[float] = []
    beat.tick = lambda: ticks.append(now[0])
    beat.run(lambda seconds: next(answers))
    assert len(ticks) == 2


def test_still_working_prints_nothing_for_a_short_step():
    from phr.core.progress import still_working

    out = io.StringIO()
    with still_working("loading tiny", stream=out):
        pass
    assert out.getvalue() == ""


def test_in_a_log_the_third_party_bars_are_off(tmp_path):
    """tqdm (transformers, datasets, the trainers) draws with \\r in a log; where stderr is not a terminal the CLI
    turns them off before they are imported. A fresh process: with the call no \\r, without it the bar."""
    code = (
        "import sys; from phr.core.progress import quiet_third_party_bars\n"
        "if sys.argv[1] == 'quiet': assert quiet_third_party_bars(terminal=False)\n"
        "from tqdm import tqdm\n"
        "from datasets import Dataset\n"
        "for _ in tqdm(range(3), mininterval=0): pass\n"
        "Dataset.from_dict({'a': list(range(3))}).map(lambda r: r)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in BAR_ENV}
    runs = {
        mode: subprocess.run([sys.executable, "-c", code, mode], capture_output=True, env=env, timeout=300)
        for mode in ("quiet", "loud")
    }  # bytes: text mode would turn each \\r into a newline
    assert runs["quiet"].returncode == 0, runs["quiet"].stderr.decode()
    assert b"\r" in runs["loud"].stderr and b"examples/s" in runs["loud"].stderr  # the control: bars without it
    assert b"\r" not in runs["quiet"].stderr and b"it/s" not in runs["quiet"].stderr
    assert not quiet_third_party_bars(terminal=True)  # a terminal keeps them


def test_the_cli_turns_the_bars_off_in_a_log(monkeypatch):
    from typer.testing import CliRunner

    from phr.cli import app

    for name in BAR_ENV:
        monkeypatch.delenv(name, raising=False)
    assert CliRunner().invoke(app, ["cache", "stats"]).exit_code == 0
    assert {name: os.environ.get(name) for name in BAR_ENV} == BAR_ENV


def test_no_estimate_before_a_share_of_the_work_is_done():
    now = [0.0]
    out = io.StringIO()
    with LineProgress(out, every=10, clock=lambda: now[0]) as bar:
        t = bar.add_task("generating", total=1000)
        bar.update(t, completed=1)  # the first move
        now[0] = 20.0
        bar.update(t, completed=31)  # 20 s of work but 3% done: too little to say how long the rest takes
        now[0] = 40.0
        bar.update(t, completed=61)  # 6%: 60 done in 40 s -> 939 left in 626 s
    assert out.getvalue().splitlines() == [
        "[progress] generating: 31/1000 (3%), 20s elapsed",
        "[progress] generating: 61/1000 (6%), 40s elapsed, about 10m26s left",
    ]


def test_a_step_whose_count_does_not_move_still_says_it_runs():
    """A slow first batch: nothing moves for a minute; ``beat()`` (called every 10 s by progress_bar's thread)
    repeats the line with the elapsed time, at most once per interval, and stops once the step ended."""
    now = [0.0]
    out = io.StringIO()
    with LineProgress(out, every=10, clock=lambda: now[0]) as bar:
        t = bar.add_task("local:smollm2 on 10 prompts x 2", total=20)
        now[0] = 5.0
        bar.beat()  # too soon
        now[0] = 10.0
        bar.beat()
        now[0] = 15.0
        bar.beat()  # 5 s after the last line
        now[0] = 21.0
        bar.beat()
        now[0] = 23.0
        bar.update(t, completed=20)  # done
        now[0] = 40.0
        bar.beat()  # an ended step says nothing more but its final line
    assert out.getvalue().splitlines() == [
        "[progress] local:smollm2 on 10 prompts x 2: 0/20 (0%), 10s elapsed",
        "[progress] local:smollm2 on 10 prompts x 2: 0/20 (0%), 21s elapsed",
        "[progress] local:smollm2 on 10 prompts x 2: 20/20 (100%), 23s elapsed",
    ]
    assert progress_bar(True)._beat  # the log form of progress_bar beats from a thread


def test_a_fractional_feed_prints_whole_units_only():
    """Issue 35 item 14: a local batch credits each generated token as a share of a sample, and a log said
    ``0.1/20`` and ``7.5/20``; a count shown is whole samples (the shares still move the rate)."""
    now = [0.0]
    out = io.StringIO()
    with LineProgress(out, every=10, clock=lambda: now[0]) as bar:
        t = bar.add_task("local:smollm2 on 10 prompts x 2", total=20)
        for _ in range(120):  # a tenth of a sample every 0.5 s for a minute
            now[0] += 0.5
            bar.advance(t, 0.1)
            bar.beat()
    lines = out.getvalue().splitlines()
    assert lines[0] == "[progress] local:smollm2 on 10 prompts x 2: 2/20 (10%), 10s elapsed"  # 20 tenths: 2
    assert len(lines) == 6  # one every 10 s
    for line in lines:
        assert re.fullmatch(r"\[progress\] local:smollm2 on 10 prompts x 2: \d+/20 \(\d+%\), .*", line), line
    assert lines[-1].startswith("[progress] local:smollm2 on 10 prompts x 2: 12/20 (60%), 1m00s elapsed")


def test_nested_steps_print_one_line_per_interval():
    """Issue 35 item 14: a push (a step with no count) that embeds texts (a counted step inside it) printed two
    lines every 10 s. Now one line per interval in all: the step inside speaks while it runs (also for the push,
    whose interval came first), the push again after it; every line restarts every open step's interval."""
    from phr.core.progress import Heartbeat

    now = [0.0]
    clock = lambda: now[0]  # noqa: E731 - one fake clock for both
    out = io.StringIO()

    def wait(until: float, step=None) -> None:
        while now[0] < until:
            now[0] += 0.5
            if step is not None:
                step()
            push.tick()

    with Heartbeat("validating and pushing hr1-sft", out, every=10, clock=clock) as push:
        wait(15)
        with LineProgress(out, every=10, clock=clock) as bar:
            t = bar.add_task("embedding 600 texts (all-MiniLM-L6-v2)", total=600)
            wait(45, lambda: (bar.advance(t, 5), bar.beat()))
        wait(60)
    assert out.getvalue().splitlines() == [
        "[progress] validating and pushing hr1-sft: 10s elapsed",
        "[progress] embedding 600 texts (all-MiniLM-L6-v2): 50/600 (8%), 5s elapsed",  # the push's turn at 20 s
        "[progress] embedding 600 texts (all-MiniLM-L6-v2): 150/600 (25%), 15s elapsed, about 45s left",
        "[progress] embedding 600 texts (all-MiniLM-L6-v2): 250/600 (41%), 25s elapsed, about 35s left",
        "[progress] embedding 600 texts (all-MiniLM-L6-v2): 300/600 (50%), 30s elapsed, about 30s left",  # closed
        "[progress] validating and pushing hr1-sft: 55s elapsed",
    ]


def test_a_command_is_never_silent_for_longer_than_the_interval():
    """Issue 35 item 14: silences of 14-60 s before a command's first line (libraries importing), between its steps
    (a model import before the loading line, writing results) and before it exits. The command's heartbeat
    (``command_heartbeat``: the outermost display, counted from the process's start) fills each one; a step
    inside speaks for it while it runs; every line restarts the interval."""
    from phr.core.progress import Heartbeat

    now = [0.0]
    clock = lambda: now[0]  # noqa: E731 - one fake clock for every display
    said: list[tuple[float, str]] = []

    class Log(io.StringIO):
        def write(self, text: str) -> int:
            said.extend((now[0], line) for line in text.splitlines() if line)
            return len(text)

    out = Log()

    def wait(until: float, step=lambda: None) -> None:
        while now[0] < until:
            now[0] += 0.5
            step()
            command.tick()

    with Heartbeat("phr-publish eval hr1", out, every=10, clock=clock, start=-4.0) as command:  # main() at 4 s
        wait(12)  # imports and the plan
        loading("local:smollm2 (SmolLM2-135M-Instruct) on cpu for answering", stream=out)
        wait(15)  # the model loads
        with LineProgress(out, every=10, clock=clock) as bar:
            t = bar.add_task("answering", total=28)
            wait(40, lambda: (now[0] > 30 and bar.advance(t, 0.25), bar.beat()))  # the first batch takes 15 s
        wait(70)  # writing the tables, then the interpreter's exit
    assert said == [
        (6.0, "[progress] phr-publish eval hr1: 10s elapsed"),
        (12.0, "loading local:smollm2 (SmolLM2-135M-Instruct) on cpu for answering ..."),
        (22.0, "[progress] answering: 0/28 (0%), 7s elapsed"),
        (32.0, "[progress] answering: 1/28 (3%), 17s elapsed"),
        (40.0, "[progress] answering: 5/28 (17%), 25s elapsed"),  # its end
        (50.0, "[progress] phr-publish eval hr1: 54s elapsed"),
        (60.0, "[progress] phr-publish eval hr1: 1m04s elapsed"),
        (70.0, "[progress] phr-publish eval hr1: 1m14s elapsed"),
    ]


def test_the_process_start_is_before_this_module_was_imported():
    from phr.core.progress import process_start

    assert process_start() <= IMPORTED


def test_the_cli_beats_while_its_command_runs_and_leaves_its_objects_to_the_process_end(tmp_path):
    """Issue 35 item 14: 15-38 s of silence after a training's last line: the interpreter's exit collecting every
    object of torch and the model (8 s of the GRPO smoke on a loaded 2-core machine; 1.5 s this way).
    ``phr-publish`` runs the command's heartbeat (stderr is not a terminal) until the command ends, then collects
    the command's garbage (its files and caches close) and freezes the rest; the exit code is the command's."""
    code = (
        "import atexit, gc, sys, threading\n"
        "import phr.core.progress as progress\n"
        "def spy(what, real=progress.command_heartbeat):\n"
        "    print('heartbeat:', what, file=sys.stderr)\n"
        "    return real(what)\n"
        "progress.command_heartbeat = spy\n"
        "atexit.register(lambda: print('at exit:', gc.get_freeze_count() > 0, *sorted(t.name for t in "
        "threading.enumerate()), file=sys.stderr))\n"
        "from phr.cli import main\n"
        "sys.argv = ['phr-publish', *sys.argv[1:]]\n"
        "main()\n"
    )
    env = {**os.environ, "PHR_HOME": str(tmp_path)}
    for args, exit_code in ((["cache", "stats"], 0), (["llm", "ping"], 2)):  # ping without a model: usage, 2
        r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == exit_code, r.stderr
        lines = r.stderr.splitlines()
        assert lines[0] == f"heartbeat: phr-publish {' '.join(args)}"
        assert lines[-1] == "at exit: True MainThread"  # frozen; the heartbeat ended with the command

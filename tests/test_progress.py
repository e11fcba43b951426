"""Progress within a long step (issue 20 item 3): a local model's batch reports its tokens as they come, the
loading line names the model and why, and a log (no terminal) gets periodic one-line progress."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from phr.core.progress import LineProgress, loading, progress_bar
from phr.llm.providers.base import BatchItem
from phr.llm.types import GenerationParams, as_messages


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
        bar.advance(t, 5)  # t=0: too soon
        now[0] = 12.0
        bar.advance(t, 5)  # t=12: a line (30/120); rate 10 done in 12 s -> 90 left in 108 s
        now[0] = 15.0
        bar.advance(t, 1)  # t=15: too soon after the last line
        now[0] = 30.0
        bar.update(t, completed=40)  # t=30: a line; 20 done in 30 s -> 80 left in 120 s
        now[0] = 45.0
        bar.update(t, completed=40)  # t=45: nothing moved: no line, and none at the end
    lines = out.getvalue().splitlines()
    assert lines == [
        "[progress] generating: 30/120 (25%), 12s elapsed, about 1m48s left",
        "[progress] generating: 40/120 (33%), 30s elapsed, about 2m00s left",
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
        "[progress] trajectory metrics: 2/4 (50%), 10s elapsed, about 10s left",
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

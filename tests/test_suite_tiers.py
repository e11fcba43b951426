"""The fast tier's guard (tests/conftest.py, tests/support/guard): a test not marked slow that builds a language
model or a trainer, in the pytest process or in a Python subprocess, fails with the reason; a slow one passes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

TESTS = """
import subprocess, sys
import pytest

TINY = (
    "from transformers import LlamaConfig, LlamaForCausalLM; LlamaForCausalLM(LlamaConfig(vocab_size=64, "
    "hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2))"
)

def test_fast_builds_a_model():
    exec(TINY)

def test_fast_trains(tmp_path):
    from transformers import BertConfig, BertModel, Trainer, TrainingArguments
    model = BertModel(BertConfig(vocab_size=64, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=16))  # an encoder: not a language model, allowed
    Trainer(model=model, args=TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to=[]))

def test_fast_builds_a_model_in_a_subprocess():
    subprocess.run([sys.executable, "-c", TINY], check=True)

def test_fast_builds_an_encoder_only():
    from transformers import BertConfig, BertModel
    BertModel(BertConfig(vocab_size=64, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=16))

@pytest.mark.slow
def test_slow_builds_a_model():
    exec(TINY)
"""


@pytest.mark.slow  # the inner tests build models
def test_the_guard_fails_fast_tests_that_build_a_model_or_a_trainer(tmp_path):
    (tmp_path / "test_inner.py").write_text(TESTS)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider", "-q", "-rA",
         "-c", str(ROOT / "pyproject.toml"), "-W", "ignore::DeprecationWarning", str(tmp_path / "test_inner.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    assert out.splitlines()[-1].startswith("5 passed, 3 errors in ")
    errors = [line for line in out.splitlines() if line.startswith("ERROR ")]
    assert [e.split(" - ")[0].split("::")[1] for e in errors] == [
        "test_fast_builds_a_model",
        "test_fast_trains",
        "test_fast_builds_a_model_in_a_subprocess",
    ]
    said = " ".join(out.split())
    assert (
        "test_fast_builds_a_model is not marked slow but it (or a fixture it set up) built the language model LlamaForCausalLM"
        in said
    )
    assert "test_fast_trains is not marked slow but it (or a fixture it set up) made the trainer Trainer" in said
    assert "mark it @pytest.mark.slow (the fast tier loads no model and trains nothing)" in said
    passed = [line.split("::")[-1] for line in out.splitlines() if line.startswith("PASSED ")]
    failed = {e.split(" - ")[0].split("::")[-1] for e in errors}  # their calls passed, their teardowns failed
    assert [p for p in passed if p not in failed] == ["test_fast_builds_an_encoder_only", "test_slow_builds_a_model"]

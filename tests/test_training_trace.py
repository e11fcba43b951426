"""Training traceability: recipes pin their objective with current keys, the GPU extras match TRL, the start
checkpoint / reward / git state are recorded, model cards carry the base model's license, and the KL reference
loads the policy's revision (tiny random models on the CPU; the Hub is the local protocol server)."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

from phr.cards.model_card import write_model_card
from phr.cards.model_license import BASE_LICENSES, base_license
from phr.core.errors import UsageError
from phr.training.checkpoint import MANIFEST, git_state, start_checkpoint
from phr.training.config import load_recipe, recipe_names, trl_config_class
from phr.training.objective import (
    CONDITIONAL,
    NOT_OBJECTIVE,
    OBJECTIVE,
    deprecated_keys,
    trl_specific_fields,
    unpinned,
)

ROOT = Path(__file__).resolve().parents[1]
PACKAGED = sorted({p for p in recipe_names().values()})


# ---- issue 19 item 7: recipes pin every objective setting, with current keys ---------------------------------------


@pytest.mark.parametrize("path", PACKAGED, ids=lambda p: p.stem)
def test_every_recipe_pins_its_objective_with_current_keys(path):
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    recipe = load_recipe(path)
    assert unpinned(recipe.method, raw["trainer"]) == []  # written in the file, not supplied by TRL
    assert deprecated_keys(recipe.method, raw["trainer"]) == {}
    fields = {f.name for f in dataclasses.fields(trl_config_class(recipe.method))}
    assert set(raw["trainer"]) <= fields  # no key the installed TRL does not know
    if recipe.method == "grpo":
        t = raw["trainer"]
        assert (t["loss_type"], t["epsilon"], t["epsilon_high"], t["scale_rewards"], t["beta"]) == (
            "dapo",
            0.2,
            0.2,
            "group",
            0.04,
        )
        assert t["steps_per_generation"] == t.get("gradient_accumulation_steps", 1)  # on-policy


def test_the_checks_catch_a_defaulted_setting_and_deprecated_keys():
    t = dict(load_recipe("paper-qwen2.5-3b-stage1").trainer)
    del t["loss_type"], t["scale_rewards"]
    assert unpinned("grpo", t) == ["loss_type", "scale_rewards"]
    assert unpinned("grpo", {**t, "loss_type": "sapo", "scale_rewards": "none"})[:2] == [
        "sapo_temperature_neg",
        "sapo_temperature_pos",
    ]
    found = deprecated_keys("grpo", {"gradient_checkpointing": True, "use_transformers_paged": True, "beta": 0.1})
    assert sorted(found) == ["gradient_checkpointing", "use_transformers_paged"]
    assert "activation_checkpointing" in found["gradient_checkpointing"]
    sft = deprecated_keys("sft", {"loss_type": "chunked_nll", "truncation_mode": "keep_end", "max_length": 8})
    assert sorted(sft) == ["loss_type", "truncation_mode"]  # deprecated values are found by their warning


@pytest.mark.parametrize("method", ["grpo", "sft"])
def test_every_trl_field_is_classified(method):
    """A TRL upgrade that adds (or drops) a config field fails here until phr.training.objective classifies it."""
    fields = {f.name for f in dataclasses.fields(trl_config_class(method))}
    trl_only = trl_specific_fields(method)
    classified = set(CONDITIONAL[method]) | NOT_OBJECTIVE[method] | (set(OBJECTIVE[method]) & trl_only)
    assert trl_only - classified == set()
    assert classified - trl_only == set()
    assert set(OBJECTIVE[method]) <= fields


def test_docs_choices_table_lists_every_objective_setting():
    text = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    section = text.split("### Objective settings", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    listed = {k for line in rows for k in re.findall(r"`([a-z_0-9]+)`", line.split("|")[1])}
    for method in ("grpo", "sft"):
        assert set(OBJECTIVE[method]) - listed == set(), method
    assert {"vllm_importance_sampling_correction", "vllm_importance_sampling_mode"} <= listed
    assert not any("gradient_checkpointing" in yaml.safe_load(p.read_text())["trainer"] for p in PACKAGED)


# ---- issue 20 item 5: the GPU extras agree with the installed TRL -------------------------------------------------


def _extras() -> dict[str, list[Requirement]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {k: [Requirement(r) for r in v] for k, v in project["optional-dependencies"].items()}


def _trl_vllm_range() -> tuple[Version, Version]:
    """The range TRL's own vLLM check accepts (trl.import_utils.is_vllm_available)."""
    from trl import import_utils

    src = inspect.getsource(import_utils.is_vllm_available)
    m = re.search(r'Version\("([\d.]+)"\)\s*<=\s*_vllm_base_version\s*<=\s*Version\("([\d.]+)"\)', src)
    assert m, "TRL's vLLM version check changed shape: read it again and update this test"
    return Version(m[1]), Version(m[2])


def test_vllm_extra_is_the_range_trl_supports():
    lo, hi = _trl_vllm_range()
    (vllm,) = [r for r in _extras()["vllm"] if r.name == "vllm"]
    below, above = Version(f"{lo.major}.{lo.minor - 1}.0"), Version(f"{hi.major}.{hi.minor + 1}.0")
    probes = [Version("0.8.0"), below, lo, Version(f"{hi.major}.{hi.minor}.0"), hi, above]
    assert [vllm.specifier.contains(v) for v in probes] == [lo <= v <= hi for v in probes]
    # the same range as TRL's own vllm extra
    from importlib.metadata import requires

    trl_vllm = [Requirement(r) for r in requires("trl") or [] if 'extra == "vllm"' in r]
    assert str(next(r for r in trl_vllm if r.name == "vllm").specifier) == str(vllm.specifier)


def test_deepspeed_extra_and_the_trl_pin():
    from importlib.metadata import requires, version

    extras = _extras()
    (ds,) = [r for r in extras["deepspeed"] if r.name == "deepspeed"]
    trl_ds = next(
        Requirement(r) for r in requires("trl") or [] if r.startswith("deepspeed") and 'extra == "deepspeed"' in r
    )
    assert ds.specifier == trl_ds.specifier  # what TRL's deepspeed extra asks for
    assert {r.name for r in extras["train-gpu"]} == {"phr-toolkit"}
    assert set(extras["train-gpu"][0].extras) == {"vllm", "deepspeed"}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    trl = next(Requirement(r) for r in project["dependencies"] if r.startswith("trl"))
    assert trl.specifier.contains(version("trl"))  # the pinned TRL is the one whose range the extra copies
    assert not trl.specifier.contains("1.17.0")  # an upgrade is a deliberate change that re-runs these checks
    for config in ("zero2.yaml", "zero3.yaml"):
        assert "DEEPSPEED" in (ROOT / "training" / "recipes" / "accelerate_configs" / config).read_text()


# ---- issue 19 item 8: traceable checkpoints and cards ------------------------------------------------------------


def test_start_checkpoint_records_the_manifest_hash_and_refuses_an_untracked_folder(tmp_path):
    ck = tmp_path / "stage1" / "final"
    ck.mkdir(parents=True)
    (ck / "config.json").write_text("{}")
    with pytest.raises(UsageError, match=r"model.init_from .*final: no training_manifest.json.*init_without_manifest"):
        start_checkpoint(ck)
    assert start_checkpoint(ck, allow_missing_manifest=True) == {
        "path": str(ck.resolve()),
        "manifest_sha256": None,
        "global_step": None,
        "untracked": True,
    }
    manifest = {"method": "grpo", "stage": 1, "global_step": 48, "base_model": "Qwen/Qwen2.5-3B-Instruct",
                "git": {"commit": "abc", "dirty": True}}  # fmt: skip
    (ck / MANIFEST).write_text(json.dumps(manifest))
    rec = start_checkpoint(ck)
    assert rec["manifest_sha256"] == hashlib.sha256((ck / MANIFEST).read_bytes()).hexdigest()
    assert (rec["global_step"], rec["stage"], rec["base_model"], rec["git"]) == (
        48,
        1,
        "Qwen/Qwen2.5-3B-Instruct",
        {"commit": "abc", "dirty": True},
    )
    # the CLI refuses it before training, naming the setting
    from phr.training.run import start_model

    (ck / MANIFEST).unlink()
    recipe = load_recipe("tiny-stage2", model={"tiny": {}, "init_from": str(ck)})
    with pytest.raises(UsageError, match="no training_manifest.json"):
        start_model(recipe, None, tmp_path)
    ok = load_recipe("tiny-stage2", model={"tiny": {}, "init_from": str(ck), "init_without_manifest": True})
    assert start_model(ok, None, tmp_path)[0] == str(ck)


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_git_state_has_a_dirty_flag(tmp_path):
    assert git_state(tmp_path) == {"commit": None, "dirty": None}  # not a checkout
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "t@example.org")
    _git(tmp_path, "config", "user.name", "t")
    (tmp_path / "code.py").write_text("x = 1\n")
    _git(tmp_path, "add", "code.py")
    _git(tmp_path, "commit", "-qm", "c")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "out.txt").write_text("untracked output\n")  # run folders do not make the code dirty
    assert git_state(tmp_path) == {"commit": head.strip(), "dirty": False}
    (tmp_path / "code.py").write_text("x = 2\n")
    assert git_state(tmp_path) == {"commit": head.strip(), "dirty": True}


def test_manifest_records_the_resolved_reward_settings(monkeypatch):
    from phr.training.grpo import make_rewards, reward_description

    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-test-0123456789")  # the DeepSeek judge's key (hosted)
    recipe = load_recipe("paper-qwen2.5-3b-stage2")
    funcs = make_rewards(recipe)
    rec = reward_description(recipe, funcs)
    assert "lambda_div" not in rec["settings"]  # the recipe's text names only the judge and the QA model
    (resolved,) = rec["resolved"]
    assert resolved == funcs[0].config.as_dict()
    assert (resolved["lambda_div"], resolved["group_size"], resolved["stage"], resolved["qa_max_tokens"]) == (
        1.0,
        8,
        2,
        64,
    )
    assert (resolved["fuzzy"], resolved["judge_max_tokens"]) == ("wrong", 512)  # defaults, resolved
    assert resolved["diversity"] == {"tokenize": "13a", "smooth": "exp", "lone_r_div": 0.0, "tie_decimals": 9}
    assert resolved["judge"].endswith("#deepseek-chat") and resolved["qa_model"] == "hf:Qwen/Qwen2.5-3B-Instruct"
    # secrets in llm_options never reach the manifest
    from phr.training.grpo import resolved_reward

    class _R:
        class config:  # noqa: N801
            @staticmethod
            def as_dict():
                return {"llm_options": {"api_key": "sk-live-secret", "concurrency": "8"}}

    assert resolved_reward(_R()) == {"llm_options": {"api_key": "<redacted>", "concurrency": "8"}}
    assert resolved_reward(lambda prompts, completions, **kw: []) is None


def _card_metadata(readme: Path) -> dict:
    return yaml.safe_load(readme.read_text(encoding="utf-8").split("---")[1])


def test_card_license_comes_from_the_base_model(tmp_path):
    def card(base, name):
        folder = tmp_path / name
        folder.mkdir()
        readme = write_model_card(folder, base_model=base, datasets=[], hyperparameters={})
        return _card_metadata(readme), readme.read_text(encoding="utf-8")

    meta, text = card("Qwen/Qwen2.5-3B-Instruct", "qwen3b")
    assert (meta["license"], meta["license_name"], meta["license_link"]) == (
        "other",
        "qwen-research",
        "https://huggingface.co/Qwen/Qwen2.5-3B-Instruct/blob/main/LICENSE",
    )
    assert "[qwen-research](https://huggingface.co/Qwen/Qwen2.5-3B-Instruct/blob/main/LICENSE)" in text
    meta, _ = card("Qwen/Qwen3-8B", "qwen3")
    assert meta["license"] == "apache-2.0" and "license_name" not in meta
    meta, text = card("someone/unknown-model", "unknown")
    assert meta["license"] == "other" and "apache" not in text.lower()
    assert "`someone/unknown-model` is not in phr.cards.model_license.BASE_LICENSES" in text
    # every recipe's base model is in the table
    for path in PACKAGED:
        name = load_recipe(path).model.name_or_path
        assert name is None or name in BASE_LICENSES, name
    assert base_license("Qwen/Qwen2.5-1.5B-Instruct").id == "apache-2.0"


@pytest.fixture
def two_revisions(tmp_path, monkeypatch):
    """A Hub repo ``alice/tiny`` on the local protocol server: branch ``v1`` and ``main`` hold different random
    weights and differently trained tokenizers. Yields (v1 folder, main folder) while the clients use the server."""
    from huggingface_hub import HfApi, constants

    from phr.training.tiny import TinySettings, build_tiny_model
    from tests.support.hub_server import HubServer
    from tests.support.training import grpo_rows, sft_rows

    texts = [m["content"] for r in grpo_rows() for m in r["prompt"]] + [
        m["content"] for r in sft_rows() for m in r["messages"]
    ]
    main = build_tiny_model(texts[:2], tmp_path / "main", TinySettings(seed=1))
    v1 = build_tiny_model(texts, tmp_path / "v1", TinySettings(seed=2))
    with HubServer(tokens={"hf_test": "alice"}) as hub, hub.patch_clients():
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
        api = HfApi(endpoint=hub.url, token="hf_test")
        api.create_repo("alice/tiny")
        api.upload_folder(folder_path=str(main), repo_id="alice/tiny")
        api.create_branch("alice/tiny", branch="v1")
        api.upload_folder(folder_path=str(v1), repo_id="alice/tiny", revision="v1")
        yield v1, main


def _hub_recipe(name, tmp_path, corpus, **extra):
    return load_recipe(
        name,
        model={"tiny": None, "name_or_path": "alice/tiny", "revision": "v1"},
        data={"path": str(corpus)},
        trainer={"output_dir": str(tmp_path / "run"), "max_steps": 1, "save_strategy": "no"},
        **extra,
    )


@pytest.mark.slow
def test_kl_reference_loads_the_policys_revision(two_revisions, tmp_path):
    """The policy pinned to branch v1 of a Hub repo whose main branch holds other weights: the KL at the first
    step (policy == reference before any update) is 0 only if the reference is v1 too (TRL 1.16, given a loaded
    model, took the reference from main: with same-shaped weights on main the first KL was 0.016)."""
    import torch
    from transformers import AutoModelForCausalLM

    from phr.training.grpo import train_grpo
    from tests.support.training import grpo_corpus

    v1, main = two_revisions
    w_main = AutoModelForCausalLM.from_pretrained(main).state_dict()
    w_v1 = AutoModelForCausalLM.from_pretrained(v1).state_dict()
    assert not all(w_main[k].shape == w_v1[k].shape and torch.equal(w_main[k], w_v1[k]) for k in w_v1)
    recipe = _hub_recipe(
        "tiny-stage1", tmp_path, grpo_corpus(tmp_path), reward={"name": "tests.support.training:length_reward"}
    )
    res = train_grpo(recipe)
    manifest = json.loads((res.final_dir / MANIFEST).read_text())
    assert manifest["reference_policy"] == {"setting": "initial", "model": "alice/tiny", "revision": "v1", "beta": 0.04}
    assert manifest["trainer"]["model_init_kwargs"] == {"dtype": "float32", "revision": "v1"}
    curves = json.loads((res.final_dir / "curves.json").read_text())["metrics"]
    assert curves["kl"]["raw"] == [pytest.approx(0.0, abs=1e-6)]


@pytest.mark.slow
def test_sft_tokenizer_loads_the_models_revision(two_revisions, tmp_path):
    from transformers import AutoTokenizer

    from phr.training.sft import build_sft_trainer
    from tests.support.training import sft_corpus

    v1, main = two_revisions
    assert AutoTokenizer.from_pretrained(main).get_vocab() != AutoTokenizer.from_pretrained(v1).get_vocab()
    trainer, _, _, _ = build_sft_trainer(_hub_recipe("tiny-sft", tmp_path, sft_corpus(tmp_path)))
    assert trainer.processing_class.get_vocab() == AutoTokenizer.from_pretrained(v1).get_vocab()
    assert trainer.args.model_init_kwargs == {"dtype": "float32", "revision": "v1"}


def test_a_recipe_leaving_objective_settings_to_trl_is_warned_and_recorded(tmp_path, caplog):
    from phr.training.run import artifacts

    path = recipe_names()["tiny-stage1"]
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    del raw["trainer"]["loss_type"], raw["trainer"]["beta"]
    raw["trainer"]["output_dir"] = str(tmp_path / "run")
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(raw))
    recipe = load_recipe(tmp_path / "r.yaml")
    data = {
        "name": "c",
        "path": str(tmp_path),
        "manifest_sha256": None,
        "folder_sha256": "0" * 64,
        "split": "train",
        "rows": 4,
    }
    with caplog.at_level("WARNING", logger="phr.training"):
        arts = artifacts(recipe, base_model="b", start_from="b", data=data, reward=None, args=recipe.trl_config())
    assert arts.manifest["objective_defaults"] == ["loss_type", "beta"]
    assert (
        "r.yaml leaves 2 objective setting(s) to TRL's defaults (recorded as objective_defaults): loss_type, beta"
        in caplog.text
    )

"""Training under faults (tiny random model, CPU): a run SIGKILLed in the middle of saving a checkpoint resumes to
the same weights as an uninterrupted run; recipes are checked by type before anything is created; missing
prerequisites are reported before heavy imports; a GRPO run whose judge fails stops instead of training on nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file
from typer.testing import CliRunner

from phr.cli import app
from phr.core.errors import UsageError
from phr.training.checkpoint import MANIFEST
from phr.training.config import MissingRewardsSection, RecipeError, load_recipe, parse_recipe
from phr.training.grpo import MissingRewardsGuard, train_grpo
from phr.training.run import ARTIFACT_FILES, checkpoint_problem, resume_point
from phr.training.sft import train_sft
from tests.support.training import TINY_GRPO_RECIPE, grpo_corpus, sft_corpus

ROOT = Path(__file__).resolve().parents[1]
REWARD = "tests.support.training:length_reward"
STEPS = 3  # checkpoints 1, 2, 3: the kill lands in the save of checkpoint-2


def _overrides(method: str, corpus: Path, out: Path) -> dict:
    o = {"data": {"path": str(corpus)}, "trainer": {"output_dir": str(out), "max_steps": STEPS}}
    return o | ({"reward": {"name": REWARD}} if method == "grpo" else {})


def _train(method: str, corpus: Path, out: Path, resume: bool = False):
    if method == "sft":
        return train_sft(load_recipe("tiny-sft", **_overrides("sft", corpus, out)), resume=resume)
    return train_grpo(load_recipe("tiny-stage1", **_overrides("grpo", corpus, out)), resume=resume)


def weights_hash(folder: Path) -> str:
    """SHA-256 over the tensors (name, dtype, shape, bytes) of a final folder's weights (model or adapter)."""
    [path] = [p for p in folder.glob("*.safetensors")]
    h = hashlib.sha256()
    for name, t in sorted(load_file(path).items()):
        h.update(f"{name}\0{t.dtype}\0{tuple(t.shape)}\n".encode())
        h.update(t.contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """``uninterrupted(method)``: the corpus and the final weights hash of a run of STEPS steps that nothing
    interrupted (made once per method, when first asked for)."""
    tmp, done = tmp_path_factory.mktemp("uninterrupted"), {}

    def get(method: str) -> tuple[Path, str]:
        if method not in done:
            corpus = (sft_corpus if method == "sft" else grpo_corpus)(tmp / method)
            res = _train(method, corpus, tmp / method / "run")
            assert res.global_step == STEPS
            done[method] = (corpus, weights_hash(res.final_dir))
        return done[method]

    return get


# ---- a run killed while it saves a checkpoint resumes to the same weights ---------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "method,moment,resumes_from",
    [
        ("sft", "weights", 1),  # weights written, optimizer / trainer state not: checkpoint-2 is incomplete
        ("sft", "card", 2),  # TRL's save complete, our manifest / curves / card not: resumed from it, repaired
        ("grpo", "state", 1),  # trainer_state.json half written
        # the other moments of each method: the same rules
        ("sft", "state", 1),
        ("grpo", "weights", 1),
        ("grpo", "card", 2),
    ],
)
def test_a_run_killed_while_saving_resumes_to_the_weights_of_an_uninterrupted_run(
    uninterrupted, tmp_path, caplog, method, moment, resumes_from
):
    corpus, expected = uninterrupted(method)
    out = tmp_path / "run"
    killed = subprocess.run(
        [sys.executable, "-m", "tests.support.train_kill", method, json.dumps(_overrides(method, corpus, out)),
         moment, "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr[-2000:]  # SIGKILL, in the middle of saving checkpoint-2
    ck2 = out / "checkpoint-2"
    assert (out / "checkpoint-1" / "trainer_state.json").is_file() and not (out / "final").exists()
    assert any(ck2.glob("*.safetensors"))
    assert (checkpoint_problem(ck2) is None) == (moment == "card")
    assert not (ck2 / "curves.json").exists()
    with pytest.raises(UsageError, match="pass resume=True"):
        _train(method, corpus, out)  # never mixed into a fresh run

    with caplog.at_level(logging.WARNING, logger="phr.training"):
        resumed = _train(method, corpus, out, resume=True)
    assert resumed.resumed_from == str(out / f"checkpoint-{resumes_from}")
    said = [r.getMessage() for r in caplog.records if r.name == "phr.training"]
    assert f"resuming from {out / f'checkpoint-{resumes_from}'}" in said
    if moment != "card":
        why = "no trainer_state.json" if moment == "weights" else "trainer_state.json is cut short"
        assert f"{ck2} is incomplete ({why}: the run stopped while saving it): removed" in said
    assert resumed.global_step == STEPS and weights_hash(resumed.final_dir) == expected
    for n in range(1, STEPS + 1):  # every checkpoint complete, with its manifest, curves and card
        assert checkpoint_problem(out / f"checkpoint-{n}") is None
        assert all((out / f"checkpoint-{n}" / name).is_file() for name in ARTIFACT_FILES)


def _checkpoint(out: Path, n: int, state: str | None) -> Path:
    folder = out / f"checkpoint-{n}"
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"x")
    if state is not None:
        (folder / "trainer_state.json").write_text(state)
    return folder


def test_incomplete_checkpoints_are_named_and_removed_only_on_resume(tmp_path, caplog):
    out = tmp_path / "run"
    good = _checkpoint(out, 1, json.dumps({"global_step": 1, "log_history": []}))
    cut = _checkpoint(out, 2, '{"global_step": 2, "log_hist')
    wrong = _checkpoint(out, 3, json.dumps({"global_step": 2}))
    bare = _checkpoint(out, 10, None)  # 10 > 3: numbers, not names, order checkpoints
    assert [checkpoint_problem(p) for p in (good, cut, wrong, bare)] == [
        None, "trainer_state.json is cut short", "trainer_state.json is for step 2", "no trainer_state.json"
    ]  # fmt: skip
    with pytest.raises(UsageError, match=r"already holds checkpoint-10: pass resume=True"):
        resume_point(out, resume=False)
    assert cut.is_dir() and bare.is_dir()  # nothing removed without --resume
    with caplog.at_level(logging.WARNING, logger="phr.training"):
        assert resume_point(out, resume=True) == str(good)
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint-1"]
    assert sum("is incomplete" in r.getMessage() for r in caplog.records) == 3
    # killed during its first save: nothing complete, so the resumed run starts from step 0
    only = tmp_path / "first"
    _checkpoint(only, 1, None)
    with caplog.at_level(logging.WARNING, logger="phr.training"):
        assert resume_point(only, resume=True) is None
    assert "no complete checkpoint" in caplog.records[-1].getMessage() and not (only / "checkpoint-1").exists()
    with pytest.raises(UsageError, match="no checkpoint-N folder"):
        resume_point(tmp_path / "empty", resume=True)


# ---- an interrupted run prints the rerun that continues it ---------------------------------------------------


@pytest.mark.parametrize("sft", [False, True])
@pytest.mark.parametrize("has_checkpoint", [True, False])
def test_an_interrupted_run_prints_a_rerun_that_resumes_it(tmp_path, monkeypatch, sft, has_checkpoint):
    """Ctrl-C / SIGTERM during training (the trainer replaced by one that is interrupted at once: no model):
    once the run folder holds a checkpoint the rerun line carries --resume (without it the rerun is refused);
    with none it does not (--resume would be refused)."""
    import phr.training.grpo
    import phr.training.sft
    from phr.core.interrupt import Interrupted

    out = tmp_path / "run"

    def interrupted(recipe, resume=False, **kw):
        if has_checkpoint:
            _checkpoint(out, 1, json.dumps({"global_step": 1}))
        raise Interrupted(15)

    monkeypatch.setattr(phr.training.sft if sft else phr.training.grpo, "train_sft" if sft else "train_grpo",
                        interrupted)  # fmt: skip
    if sft:
        args = ["train", "sft", "--config", "tiny-sft", "--data", str(sft_corpus(tmp_path))]
    else:
        args = ["train", "grpo", "--stage", "1", "--config", "tiny-stage1", "--data", str(grpo_corpus(tmp_path)),
                "--set", f"reward.name={REWARD}"]  # fmt: skip
    args += ["--output-dir", str(out)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 143, res.output
    rerun = res.stderr.splitlines()[-1].removeprefix("interrupted; rerun to resume: ")
    assert rerun == "phr-publish " + " ".join([*args, "--resume"] if has_checkpoint else args)
    if has_checkpoint:  # as printed, it resumes (the same boundary, asked to continue)
        with pytest.raises(UsageError, match="pass resume=True"):
            resume_point(out, resume=False)
        assert resume_point(out, resume=True) == str(out / "checkpoint-1")


# ---- recipes checked by type, every problem named, nothing created ----------------------------------------------

BASE = TINY_GRPO_RECIPE


def _with(section: str, **values) -> dict:
    return {**BASE, section: {**BASE[section], **values}}


@pytest.mark.parametrize(
    "recipe,line",
    [
        (_with("trainer", max_steps="two"),
         "r.yaml: trainer.max_steps: expected int, got 'two' (input should be a valid integer"),
        (_with("trainer", learning_rate="fast"),
         "r.yaml: trainer.learning_rate: expected float, got 'fast' (input should be a valid number"),
        ({**BASE, "lora": {"r": "four"}},
         "r.yaml: lora.r: expected int, got 'four' (input should be a valid integer"),
        (_with("model", dtype="float33"),
         "r.yaml: model.dtype: expected one of 'auto', 'bfloat16', 'float16', 'float32', 'float64', got 'float33'"),
        (_with("trainer", per_device_train_batch_size=3),
         "r.yaml: trainer: the generation batch (per_device_train_batch_size 3 x 1 process(es) x "
         "steps_per_generation 1 = 3 completions) must be divisible by num_generations (4)"),
        (_with("trainer", generation_batch_size=6),
         "r.yaml: trainer: the generation batch (generation_batch_size = 6 completions) must be divisible by "
         "num_generations (4)"),
        (_with("trainer", num_generations=1), "r.yaml: trainer: num_generations must be at least 2"),
        (["method", "grpo"], "r.yaml: a recipe is a YAML mapping of sections (method, stage, model"),
        ({**BASE, "modle": {}}, "r.yaml: unknown key 'modle' (known: method, stage, model,"),
        (_with("model", path="x"), "r.yaml: model.path: unknown key (known: name_or_path, revision, init_from"),
        (_with("trainer", max_seq_length=8), "r.yaml: trainer.max_seq_length is not a field of trl.GRPOConfig"),
        (_with("model", tiny={"hidden_size": "big"}), "r.yaml: model.tiny.hidden_size: expected int, got 'big'"),
        (_with("data", limit=0), "r.yaml: data.limit: expected int or null, got 0 (input should be greater than"),
        ({**BASE, "missing_rewards": {"max_share": 1.5}},
         "r.yaml: missing_rewards.max_share: expected float or null, got 1.5 (input should be less than 1)"),
        ({**BASE, "stage": "one"}, "r.yaml: stage: expected 1 or 2 for GRPO, got 'one'"),
    ],
)  # fmt: skip
def test_each_wrong_value_is_named_with_file_key_type_and_value(recipe, line):
    with pytest.raises(RecipeError) as e:
        parse_recipe(recipe, "r.yaml")
    assert str(e.value).startswith(line), str(e.value)
    assert len(str(e.value).splitlines()) == 1


def test_numbers_written_as_yaml_strings_become_numbers():
    r = parse_recipe(_with("trainer", learning_rate="1e-4", max_steps="3"), "r.yaml")  # YAML 1.1 reads 1e-4 as text
    assert (
        r.trainer["learning_rate"] == 1e-4 and r.trainer["max_steps"] == 3 and r.missing_rewards.all_missing_steps == 2
    )


def _recipe_file(tmp_path: Path, raw) -> Path:
    p = tmp_path / "recipe.yaml"
    p.write_text(yaml.safe_dump(raw, sort_keys=False))
    return p


def test_the_cli_lists_every_problem_and_creates_nothing(tmp_path):
    corpus = grpo_corpus(tmp_path)
    out = tmp_path / "run"
    raw = {**BASE, "model": {"tiny": {}, "dtype": "float33"}, "lora": {"r": "four"}, "bogus": 1,
           "trainer": {**BASE["trainer"], "output_dir": str(out), "max_steps": "two", "learning_rate": "fast",
                       "per_device_train_batch_size": 3}}  # fmt: skip
    res = CliRunner().invoke(app, ["train", "grpo", "--stage", "1", "--config", str(_recipe_file(tmp_path, raw)),
                                   "--data", str(corpus)])  # fmt: skip
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().removeprefix("error: ").splitlines()
    src = str(tmp_path / "recipe.yaml")
    assert [ln.split(": ")[1] for ln in lines] == [
        "unknown key 'bogus' (known", "model.dtype", "lora.r", "trainer.max_steps", "trainer.learning_rate", "trainer"
    ]  # fmt: skip
    assert all(ln.startswith(f"{src}: ") for ln in lines) and "Traceback" not in res.output
    assert not out.exists()


@pytest.mark.slow
def test_a_machine_dependent_refusal_by_trl_is_named_and_nothing_is_created(tmp_path):
    corpus = grpo_corpus(tmp_path)
    out = tmp_path / "run"
    recipe = load_recipe("tiny-stage1", data={"path": str(corpus)},
                         trainer={"output_dir": str(out), "use_cpu": False, "bf16": True})  # fmt: skip
    if torch.cuda.is_available():
        pytest.skip("bf16 is refused on CPU-only machines")
    with pytest.raises(RecipeError, match=r"trainer: trl.GRPOConfig refuses these values here: .*bf16"):
        train_grpo(recipe)
    assert not out.exists()


# ---- prerequisites before heavy imports, no empty run folder ----------------------------------------------------

NO_HEAVY = "import sys\nfor m in ('torch', 'transformers', 'trl', 'datasets'): sys.modules[m] = None\n" \
    "from phr.cli import main\nsys.argv = ['phr-publish', *sys.argv[1:]]\nmain()\n"  # fmt: skip


def _light_cli(*args) -> subprocess.CompletedProcess:
    """The CLI with torch, transformers, trl and datasets made unimportable: reaching them is an ImportError."""
    return subprocess.run([sys.executable, "-c", NO_HEAVY, *args], capture_output=True, text=True, timeout=120)


def test_missing_prerequisites_are_reported_before_heavy_imports_without_a_run_folder(tmp_path):
    out = tmp_path / "run"
    res = _light_cli("train", "grpo", "--stage", "1", "--config", "tiny-stage1", "--data", str(tmp_path / "nope"),
                     "--output-dir", str(out))  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert f"no corpus folder {tmp_path / 'nope'} (data.path): build it with `phr-publish build hr1-grpo --out " \
        f"{tmp_path / 'nope'}`" in res.stderr  # fmt: skip
    bad = tmp_path / "bad.yaml"
    bad.write_text("method: grpo\ntrainer: {output_dir: x\n")
    res = _light_cli("train", "grpo", "--stage", "1", "--config", str(bad), "--output-dir", str(out))
    assert res.returncode == 2 and f"{bad}: not valid YAML" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and not out.exists()


def test_each_missing_prerequisite_names_the_command_that_makes_it(tmp_path):
    out = tmp_path / "run"

    def cli(*args):
        res = CliRunner().invoke(app, ["train", *args, "--output-dir", str(out)])
        assert res.exit_code == 2 and not out.exists(), res.output
        return " ".join(res.stderr.split())

    assert "`phr-publish build hr1-sft --out" in cli("sft", "--config", "tiny-sft", "--data", str(tmp_path / "sft"))
    corpus = grpo_corpus(tmp_path)
    err = cli("grpo", "--stage", "2", "--config", "tiny-stage2", "--data", str(corpus),
              "--init-from", str(tmp_path / "stage1"))  # fmt: skip
    assert (
        f"no stage-1 checkpoint at {tmp_path / 'stage1'} (model.init_from, no config.json): train stage 1 first" in err
    )
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"method: \xff\xfe\n")
    assert f"{bad}: not a UTF-8 text file" in cli("grpo", "--stage", "1", "--config", str(bad))
    bad.write_text("- method\n- grpo\n")
    assert f"{bad}: a recipe is a YAML mapping of sections" in cli("grpo", "--stage", "1", "--config", str(bad))


# ---- training never trains on nothing ---------------------------------------------------------------------------


@pytest.mark.slow
def test_a_grpo_run_whose_judge_answers_401_stops_with_the_reason(fake_openai, tmp_path):
    fo = fake_openai()
    fo.server.script(None, [("status", 401)] * 1000)
    corpus, out = grpo_corpus(tmp_path), tmp_path / "run"
    args = ["train", "grpo", "--stage", "1", "--config", "tiny-stage1", "--data", str(corpus), "--output-dir",
            str(out), "--max-steps", "5", "--set", "reward.name=tests.support.training:tagged_hr1_reward"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 1, res.output
    err = " ".join(res.stderr.split())
    assert (
        "GRPO stage 1 stopped at step 2: reward r_stab was missing for every completion in 2 consecutive steps "
        "(missing_rewards.all_missing_steps: 2); reasons: auth 8." in err
    ), err
    assert f"Last checkpoint: {out / 'checkpoint-2'}" in err
    assert f"resume with: phr-publish train {' '.join(args[1:])} --resume" in err
    # 2 steps x 4 completions, each judged once (a 401 is not retried), then no further step and no call
    assert fo.server.count == 8 and {r["status"] for r in fo.server.requests} == {401}
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]
    assert checkpoint_problem(out / "checkpoint-2") is None and (out / "checkpoint-2" / MANIFEST).is_file()
    assert not (out / "final").exists()


def _step(guard, control, n: int, missing: list[int]):
    rewards = torch.zeros(n, len(missing))
    for i, m in enumerate(missing):
        rewards[:m, i] = float("nan")
    guard.record(rewards)
    return guard.on_step_end(None, None, control)


class _Named:
    def __init__(self, name, reasons=None):
        self.__name__, self._reasons = name, reasons

    def missing_reasons(self):
        return self._reasons or {}


def test_the_guard_counts_consecutive_all_missing_steps_and_the_share_over_a_window():
    from transformers import TrainerControl

    settings = MissingRewardsSection(all_missing_steps=3, window_steps=4, max_share=0.5)
    funcs = [_Named("fmt"), _Named("judge", {"connection": 5, "unparseable verdict": 2})]
    guard, control = MissingRewardsGuard(settings, funcs), TrainerControl()
    # judge: 4/4, 4/4, 0/4 (resets the run of all-missing steps), 1/4 -> 9 of 16 missing over the window of 4
    for missing in ([0, 4], [0, 4], [0, 0]):
        _step(guard, control, 4, missing)
        assert guard.stopped is None and not control.should_training_stop
    guard.on_step_end(None, None, control)  # a step without a generation round counts for nothing
    _step(guard, control, 4, [1, 1])
    assert control.should_training_stop and control.should_save
    assert guard.stopped == (
        "reward judge was missing for 9 of 16 completions over the last 4 steps (56% > missing_rewards.max_share "
        "50%); reasons: connection 5, unparseable verdict 2"
    )
    guard, control = MissingRewardsGuard(settings, funcs), TrainerControl()
    for _ in range(3):
        _step(guard, control, 4, [4, 0])
    assert guard.stopped.startswith("reward fmt was missing for every completion in 3 consecutive steps")
    assert guard.stopped.endswith("reasons: not reported by the reward function (it returned None)")
    never = MissingRewardsGuard(MissingRewardsSection(all_missing_steps=None, max_share=None), funcs)
    for _ in range(12):
        _step(never, TrainerControl(), 4, [4, 4])
    assert never.stopped is None

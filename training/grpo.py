"""Two-stage GRPO of the Hallucination-R1 paraphraser with TRL's ``GRPOTrainer`` (H-R1 §3.2; docs/training.md).

Stage 1 trains the base model with R_stab; stage 2 starts from the stage-1 checkpoint (``model.init_from``) with
R_train. KL reference (``reference_policy: initial``): TRL builds the reference model, when ``beta > 0``, from
the folder the policy was loaded from, so it is the *initial policy of the stage*: the base model in stage 1,
the stage-1 checkpoint in stage 2 (with a LoRA policy, the adapter switched off: the same model). ``beta: 0``
loads no reference at all.

Rewards come from the recipe's ``reward`` section or are injected (``reward_funcs=[...]``, TRL reward
functions): ``hr1`` is ``phr.training.rewards.HR1Reward`` (settings: ``RewardConfig`` fields), ``paraphrase_tag`` a
judge-free smoke reward (1 when the completion holds a ``<paraphrase>`` tag, else 0), and ``module:factory``
any factory called as ``factory(settings, stage)``.

Training never goes on without a reward (``MissingRewardsGuard``, the recipe's ``missing_rewards`` section): when a
reward function returned None for every completion of ``all_missing_steps`` consecutive steps, or for more than
``max_share`` of its completions over the last ``window_steps`` steps, the run saves a checkpoint, stops and
raises ``MissingRewardsStop`` with the reasons counted (the reward objects' ``missing_reasons()``).

On several ranks (docs/scaling.md) rank 0 alone calls the reward functions: each rank's prompts and completions
are gathered to it, it rewards the whole generation batch (every prompt's group complete, as the diversity rank
needs) and broadcasts the rewards, which TRL would otherwise gather from the ranks. So one process makes the
judge / QA calls and writes the call cache: no call is made twice for one prompt across ranks, and no two
processes race for a cache entry. A reward that raises on rank 0 stops every rank (rank 0 prints the error);
the guard sees the same rewards on every rank, so a missing-rewards stop is taken by all at the same step.
"""

from __future__ import annotations

import importlib
import typing
from collections import Counter, deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from phr.config.base import FieldError
from phr.core.errors import PHRError
from phr.core.ranks import ReplicaStop, is_main, quiet_replicas
from phr.core.registry import Registry
from phr.hr1.parse import parse_paraphrase
from phr.training.checkpoint import ArtifactsCallback, known_warnings_filtered, progress_callbacks, progress_closed
from phr.training.config import MissingRewardsSection, Recipe, RecipeError
from phr.training.rewards import HR1Reward, RewardConfig, completion_text, settings_problems
from phr.training.run import (
    RanksSave,
    RunResult,
    artifacts,
    cpu_threads,
    launch_record,
    load_corpus,
    model_init_kwargs,
    peft_config,
    prepare_output,
    repair_artifacts,
    run_folder,
    save_final,
    start_model,
    start_of,
    summary_metrics,
)

if TYPE_CHECKING:  # pragma: no cover - torch is imported where the rewards are computed
    import torch


def paraphrase_tag(
    prompts: Sequence[Any], completions: Sequence[Any], completion_ids: Sequence[Any] | None = None, **kwargs: Any
) -> list[float]:
    """Smoke reward: 1.0 when the completion holds a non-empty ``<paraphrase>`` (Listing B.1's format), else 0.0."""
    return [1.0 if parse_paraphrase(completion_text(c))[0] else 0.0 for c in completions]


def hr1_reward_config(settings: dict, stage: int, num_generations: int) -> RewardConfig:
    """The hr1 reward's ``RewardConfig`` from a recipe's ``reward.settings`` (nested ones as mappings), checked
    (``RecipeError``, one line naming each key: ``reward.settings.qa_max_tokens: 0: Input should be ...``).
    ``group_size`` defaults to the trainer's ``num_generations`` (a diversity group is complete at that size). The
    training plan calls it, so a bad value stops the run before anything is created."""
    problems = settings_problems(settings)
    if problems:
        raise RecipeError("; ".join(problems))
    try:
        return RewardConfig(**{"group_size": num_generations, **settings, "stage": stage})
    except FieldError as e:
        lines = [f"reward.settings.{k}: {v!r}: {msg}" if k else f"reward.settings: {msg}" for k, v, msg in e.errors]
        raise RecipeError("; ".join(lines)) from None


def _hr1_reward(settings: dict, stage: int, num_generations: int) -> HR1Reward:
    """``HR1Reward`` from a recipe's ``reward.settings`` (``hr1_reward_config``)."""
    return HR1Reward(hr1_reward_config(settings, stage, num_generations))


def recipe_num_generations(recipe: Recipe) -> int:
    if "num_generations" in recipe.trainer:
        return int(recipe.trainer["num_generations"])
    from trl import GRPOConfig  # heavy: imported when a GRPO recipe is used

    return int(typing.cast(int, GRPOConfig.__dataclass_fields__["num_generations"].default))


#: reward factories by ``reward.name``: ``factory(settings, stage, num_generations) -> reward function(s)``; a new
#: reward registers itself here (``@REWARDS.register(name)``), or a recipe names any ``module:factory`` (called as
#: ``factory(settings, stage)``)
REWARDS: Registry[Callable[[dict, int, int], Any]] = Registry("reward")


@REWARDS.register("hr1")
def _hr1(settings: dict, stage: int, num_generations: int) -> HR1Reward:
    return _hr1_reward(settings, stage, num_generations)


@REWARDS.register("paraphrase_tag")
def _paraphrase_tag(settings: dict, stage: int, num_generations: int) -> Callable[..., list[float]]:
    if settings:
        raise RecipeError(f"reward.settings: paraphrase_tag takes none (got {', '.join(sorted(settings))})")
    return paraphrase_tag


def make_rewards(recipe: Recipe) -> list[Callable]:
    """The reward functions a recipe names: a registered reward (``REWARDS``) or ``module:factory``."""
    r = recipe.reward
    assert r is not None and recipe.stage is not None
    if r.name in REWARDS:
        made = REWARDS[r.name](r.settings, recipe.stage, recipe_num_generations(recipe))
        return list(made) if isinstance(made, (list, tuple)) else [made]
    module, sep, attr = r.name.partition(":")
    if not sep:
        known = ", ".join(REWARDS)
        raise RecipeError(f"{recipe.source}: reward.name {r.name!r}: a registered reward ({known}) or module:factory")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise RecipeError(f"{recipe.source}: reward.name {r.name!r} cannot be imported: {e}") from None
    made = factory(r.settings, recipe.stage)
    return list(made) if isinstance(made, (list, tuple)) else [made]


_SECRET_WORDS = ("key", "token", "secret", "password")


def resolved_reward(func: Callable) -> dict | None:
    """The full resolved settings of a reward function that has a config (``HR1Reward.config.as_dict()``:
    lambda_div, fuzzy, qa_max_tokens, diversity, group size, ...), secrets in ``llm_options`` masked; None for
    a plain function."""
    config = getattr(func, "config", None)
    as_dict = getattr(config, "as_dict", None)
    if not callable(as_dict):
        return None
    d = as_dict()
    if isinstance(d.get("llm_options"), dict):
        d["llm_options"] = {
            k: ("<redacted>" if any(w in k.lower() for w in _SECRET_WORDS) else v) for k, v in d["llm_options"].items()
        }
    return d


def reward_description(recipe: Recipe, funcs: Sequence[Callable]) -> dict:
    """The manifest's reward record: the recipe's name and settings as written, and ``resolved``: per function,
    the settings the reward actually runs with (defaults filled in), or None for a plain function."""
    r = recipe.reward
    names = [getattr(f, "__name__", type(f).__name__) for f in funcs]
    return {
        "name": r.name if r else "injected",
        "functions": names,
        "stage": recipe.stage,
        "settings": r.settings if r else {},
        "resolved": [resolved_reward(f) for f in funcs],
    }


def reward_stats(funcs: Sequence[Callable]) -> dict | None:
    """Merged ``stats()`` of the reward objects that have one (judge calls, cache hits, cost)."""
    out: dict = {}
    for f in funcs:
        stats = getattr(f, "stats", None)
        if callable(stats):
            s = stats()
            out.update(s if isinstance(s, dict) else getattr(s, "__dict__", {"stats": str(s)}))
    return out or None


class MissingRewardsStop(PHRError):
    """A GRPO run stopped because its rewards were missing (exit 1: the work failed; resume once fixed). Every
    rank of a launch stops at the same step (``all_ranks``: rank 0 prints it, phr.core.ranks.settle)."""

    all_ranks = True

    def __init__(self, message: str, checkpoint: Path | None):
        super().__init__(message)
        self.checkpoint = checkpoint


class MissingRewardsGuard(TrainerCallback):
    """Stops a GRPO run whose rewards are missing (``MissingRewardsSection``). ``record`` gets each generation
    round's rewards as TRL gathered them over all processes (NaN: None), so every process decides alike; at the
    end of a step the rules are applied per reward function and a stop saves a checkpoint first."""

    def __init__(self, settings: MissingRewardsSection, funcs: Sequence[Callable]):
        self.settings = settings
        self.funcs = list(funcs)
        self.names = [getattr(f, "__name__", type(f).__name__) for f in funcs]
        self.consecutive = [0] * len(funcs)
        self.window: list[deque] = [deque(maxlen=settings.window_steps) for _ in funcs]
        self.pending: list[tuple[int, list[int]]] = []  # (completions, missing per function) since the last step
        self.stopped: str | None = None

    def record(self, rewards_per_func: torch.Tensor) -> None:
        import torch

        missing = torch.isnan(rewards_per_func).sum(dim=0).tolist()
        self.pending.append((int(rewards_per_func.shape[0]), [int(m) for m in missing]))

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> TrainerControl:
        if not self.pending:  # no generation round in this step (steps_per_generation > 1)
            return control
        n = sum(p[0] for p in self.pending)
        missing = [sum(p[1][i] for p in self.pending) for i in range(len(self.funcs))]
        self.pending = []
        s = self.settings
        for i, name in enumerate(self.names):
            self.consecutive[i] = self.consecutive[i] + 1 if n and missing[i] == n else 0
            self.window[i].append((n, missing[i]))
            total, lost = sum(w[0] for w in self.window[i]), sum(w[1] for w in self.window[i])
            why = None
            if s.all_missing_steps is not None and self.consecutive[i] >= s.all_missing_steps:
                why = (
                    f"reward {name} was missing for every completion in {self.consecutive[i]} consecutive steps "
                    f"(missing_rewards.all_missing_steps: {s.all_missing_steps})"
                )
            elif s.max_share is not None and len(self.window[i]) == s.window_steps and lost > s.max_share * total:
                why = (
                    f"reward {name} was missing for {lost} of {total} completions over the last {s.window_steps} "
                    f"steps ({lost / total:.0%} > missing_rewards.max_share {s.max_share:.0%})"
                )
            if why and self.stopped is None:
                self.stopped = f"{why}; reasons: {self.reasons(i)}"
        if self.stopped is not None:
            control.should_save = True  # the last checkpoint, then stop
            control.should_training_stop = True
        return control

    def reasons(self, i: int) -> str:
        """Why reward function ``i`` was missing, counted (its ``missing_reasons()``; cumulative, this process)."""
        get = getattr(self.funcs[i], "missing_reasons", None)
        counts = Counter(get() if callable(get) else {})
        if not counts:
            return "not reported by the reward function (it returned None)"
        return ", ".join(f"{reason} {n}" for reason, n in counts.most_common())


def _guarded_trainer_class() -> type:  # a subclass of TRL's GRPOTrainer
    """TRL's ``GRPOTrainer`` with each training round's gathered rewards shown to the guard (TRL 1.16:
    ``_calculate_rewards`` returns the rewards per function of every process, NaN where a function gave None),
    and on several ranks the rewards computed by rank 0 alone (``_rewards_on_rank0``)."""
    from trl import GRPOTrainer

    class GuardedGRPOTrainer(RanksSave, GRPOTrainer):
        guard: MissingRewardsGuard | None = None

        def _calculate_rewards(
            self, inputs: Any, prompts: Any, completions: Any, completion_ids_list: Any
        ) -> torch.Tensor:
            if self.accelerator.num_processes > 1:
                rewards_per_func = _rewards_on_rank0(self, super()._calculate_rewards, inputs, prompts, completions,
                                                     completion_ids_list)  # fmt: skip
            else:
                rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            if self.guard is not None and self.model.training:  # type: ignore[union-attr]  # the trainer has its model
                self.guard.record(rewards_per_func)
            return rewards_per_func

    return GuardedGRPOTrainer


def _rewards_on_rank0(
    trainer: Any,  # TRL's GRPOTrainer
    calculate: Callable[..., torch.Tensor],
    inputs: Any,
    prompts: Any,
    completions: Any,
    completion_ids_list: Any,
) -> torch.Tensor:
    """TRL's gathered ``rewards_per_func`` (rows in rank order), computed by rank 0 alone: every rank's batch is
    gathered to all (``gather_object``), rank 0 runs ``calculate`` (TRL's reward step, its own cross-rank gather
    made a no-op: the batch already holds every rank's rows) and broadcasts the rewards, or the error that
    stopped it, which every rank then raises (rank 0 its own, the others quietly)."""
    from accelerate.utils import broadcast_object_list, gather_object

    parts = gather_object([(inputs, prompts, completions, completion_ids_list)])
    payload: list = [None, None]
    error: Exception | None = None
    if trainer.accelerator.is_main_process:
        joined = [[x for part in parts for x in part[k]] for k in range(4)]
        try:
            with _no_cross_rank_gather():
                payload[0] = calculate(*joined).cpu()
        except Exception as e:  # shared below, so the other ranks stop instead of waiting for the rewards
            error, payload[1] = e, getattr(e, "exit_code", 1)
    broadcast_object_list(payload, from_process=0)
    if payload[1] is not None:
        if error is not None:
            try:
                error.all_ranks = True  # type: ignore[attr-defined]  # the others stop with it (settle)
            except AttributeError:
                pass
            raise error
        raise ReplicaStop(payload[1])
    rewards: torch.Tensor = payload[0]
    return rewards.to(trainer.accelerator.device)


class _no_cross_rank_gather:
    """Within rank 0's reward step: TRL's final ``gather(rewards_per_func)`` returns the rows as they are."""

    def __enter__(self) -> None:
        import trl.trainer.grpo_trainer as module

        self.module, self.original = module, module.gather
        module.gather = lambda tensor: tensor

    def __exit__(self, *exc: object) -> None:
        self.module.gather = self.original


def train_grpo(
    recipe: Recipe,
    *,
    resume: bool = False,
    reward_funcs: Sequence[Callable] | None = None,
    callbacks: Sequence = (),
    rerun: str | None = None,
) -> RunResult:
    """Run one GRPO stage of ``recipe``; returns where it wrote and the summary (``rerun``: the command that
    repeats it, recorded with a launch). Raises ``MissingRewardsStop`` when the run stopped on missing rewards (a
    checkpoint saved: resume once the cause is fixed)."""
    quiet_replicas()
    output_dir, last = prepare_output(recipe, resume)
    funcs = list(reward_funcs) if reward_funcs is not None else make_rewards(recipe)
    guard = MissingRewardsGuard(recipe.missing_rewards, funcs)
    with run_folder(output_dir), known_warnings_filtered():
        ds, data = load_corpus(recipe)
        kw = model_init_kwargs(recipe, start_of(recipe, output_dir))
        args = recipe.trl_config(output_dir=str(output_dir), model_init_kwargs=kw)
        launch = launch_record(args, rerun)  # the process group is up from here: the ranks can wait for each other
        start, base = start_model(recipe, ds, output_dir)
        reward = reward_description(recipe, funcs)
        arts = artifacts(recipe, base_model=base, start_from=start, data=data, reward=reward, args=args, launch=launch)
        trainer = _guarded_trainer_class()(
            model=start,  # TRL loads the policy, its tokenizer and the KL reference with model_init_kwargs
            reward_funcs=funcs,
            args=args,
            train_dataset=ds,
            peft_config=peft_config(recipe),
            callbacks=[ArtifactsCallback(arts), guard, *progress_callbacks(), *callbacks],
        )
        cpu_threads(recipe, trainer.model)
        trainer.guard = guard
        repair_artifacts(arts, last, output_dir)
        with progress_closed(trainer):
            trainer.train(resume_from_checkpoint=last)
    if guard.stopped is not None:
        if not is_main():
            raise ReplicaStop(MissingRewardsStop.exit_code)  # every rank stops here; rank 0 says why
        step = trainer.state.global_step
        checkpoint = output_dir / f"checkpoint-{step}"
        raise MissingRewardsStop(
            f"GRPO stage {recipe.stage} stopped at step {step}: {guard.stopped}. Last checkpoint: {checkpoint}; "
            "fix the cause, then rerun the same command with --resume to continue from it",
            checkpoint,
        )
    final = save_final(trainer, arts, output_dir)
    return RunResult(
        method=f"GRPO stage {recipe.stage}",
        output_dir=output_dir,
        final_dir=final,
        global_step=trainer.state.global_step,
        metrics=summary_metrics(trainer.state.log_history),
        reward_stats=reward_stats(funcs),
        resumed_from=last,
    )

"""(LoRA) SFT on the Hallucination-R1 SFT corpus with TRL's ``SFTTrainer`` + peft (H-R1 §7, App. E.2).

Loss on the answer only: each ``messages`` row [system B.4, user paraphrase, assistant ``<answer>gold</answer>``]
becomes a conversational prompt-completion pair (prompt = system + user, completion = the assistant turn) and
``completion_only_loss`` is on, so TRL's collator sets every label to -100 except the assistant turn's tokens
(the tagged answer and the end-of-turn token that teaches the model to stop). The chat template renders the
prompt with the assistant turn opened (``add_generation_prompt``), so the role header is prompt, not target.
``chat_template_kwargs`` (e.g. Qwen3's ``enable_thinking: false``) go to the template for every row.

With a ``lora`` section only the adapter is trained; ``final/`` holds the adapter, and ``lora.merge: true``
(or ``--merge``) also writes ``merged/``: the adapter merged into a full model that ``hf:`` loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from phr.core.errors import UsageError
from phr.core.fs import atomic_dir
from phr.core.ranks import is_main, quiet_replicas
from phr.training.checkpoint import ArtifactsCallback, known_warnings_filtered, progress_callbacks, progress_closed
from phr.training.config import Recipe
from phr.training.run import (
    MERGED,
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

if TYPE_CHECKING:  # pragma: no cover - datasets is imported where a run loads its corpus
    from datasets import Dataset

    from phr.training.checkpoint import Artifacts


def to_prompt_completion(ds: Dataset, chat_template_kwargs: dict | None = None) -> Dataset:
    """``messages`` rows -> ``prompt`` (all turns before the last) + ``completion`` (the last, assistant, turn)."""
    if "messages" not in ds.column_names:
        raise UsageError(f"the SFT corpus has no 'messages' column (columns: {', '.join(ds.column_names)})")

    def split(row: dict, idx: int) -> dict:
        msgs = row["messages"]
        if not msgs or msgs[-1]["role"] != "assistant":
            raise UsageError(f"SFT corpus row {idx} (id {row.get('id')}): the last message must be the assistant's")
        out = {"prompt": msgs[:-1], "completion": msgs[-1:]}
        if chat_template_kwargs:
            out["chat_template_kwargs"] = dict(chat_template_kwargs)
        return out

    return ds.map(split, with_indices=True, remove_columns=ds.column_names)


def build_sft_trainer(
    recipe: Recipe, *, resume: bool = False, callbacks: Sequence = (), rerun: str | None = None
) -> tuple[Any, Artifacts, Path, str | None]:  # the trainer: TRL's SFTTrainer
    """(trainer, artifacts, output_dir, checkpoint to resume from) for ``recipe`` (``rerun``: the command that
    repeats it, recorded with a launch)."""
    from trl import SFTTrainer

    output_dir, last = prepare_output(recipe, resume)
    with run_folder(output_dir):
        ds, data = load_corpus(recipe)
        kw = model_init_kwargs(recipe, start_of(recipe, output_dir))
        overrides = {"output_dir": str(output_dir), "model_init_kwargs": kw}
        overrides.setdefault("completion_only_loss", recipe.trainer.get("completion_only_loss", True))
        args = recipe.trl_config(**overrides)
        if args.completion_only_loss is False:
            raise UsageError(
                f"{recipe.source}: completion_only_loss false would train on the prompt (App. E.2: answer only)"
            )
        launch = launch_record(args, rerun)  # the process group is up from here: the ranks can wait for each other
        start, base = start_model(recipe, ds, output_dir)
        arts = artifacts(recipe, base_model=base, start_from=start, data=data, reward=None, args=args, launch=launch)
        trainer = _ranks_sft_trainer(SFTTrainer)(
            model=start,  # TRL loads the model and its tokenizer with model_init_kwargs (the recipe's revision)
            args=args,
            train_dataset=to_prompt_completion(ds, recipe.chat_template_kwargs),
            peft_config=peft_config(recipe),
            callbacks=[ArtifactsCallback(arts), *progress_callbacks(), *callbacks],
        )
        cpu_threads(recipe, trainer.model)
        repair_artifacts(arts, last, output_dir)
    return trainer, arts, output_dir, last


def _ranks_sft_trainer(base: type) -> type:
    """TRL's ``SFTTrainer`` whose checkpoints are complete for every rank once ``trainer_state.json`` is written."""

    class RanksSFTTrainer(RanksSave, base):
        pass

    return RanksSFTTrainer


def train_sft(
    recipe: Recipe,
    *,
    resume: bool = False,
    merge: bool | None = None,
    callbacks: Sequence = (),
    rerun: str | None = None,
) -> RunResult:
    """Run SFT; with LoRA and ``merge`` (default: the recipe's ``lora.merge``) also write ``merged/``."""
    if merge and recipe.lora is None:
        raise UsageError("--merge: this recipe has no lora section (the checkpoint is already a full model)")
    quiet_replicas()
    with run_folder(Path(recipe.trainer["output_dir"]).expanduser().resolve()), known_warnings_filtered():
        trainer, arts, output_dir, last = build_sft_trainer(recipe, resume=resume, callbacks=callbacks, rerun=rerun)
        with progress_closed(trainer):
            trainer.train(resume_from_checkpoint=last)
    final = save_final(trainer, arts, output_dir)
    do_merge = recipe.lora is not None and (recipe.lora.merge if merge is None else merge) and is_main()
    merged = _merge(trainer, arts, output_dir) if do_merge else None
    return RunResult(
        method="LoRA SFT" if recipe.lora else "SFT",
        output_dir=output_dir,
        final_dir=final,
        global_step=trainer.state.global_step,
        metrics=summary_metrics(trainer.state.log_history),
        merged_dir=merged,
        resumed_from=last,
    )


def _merge(trainer: Any, arts: Artifacts, output_dir: Path) -> Path:
    dest = output_dir / MERGED
    model = trainer.model.merge_and_unload()
    with atomic_dir(dest) as tmp:
        model.save_pretrained(str(tmp))
        trainer.processing_class.save_pretrained(str(tmp))
        arts.write(
            tmp, trainer.state.log_history, trainer.state.global_step, name=f"{output_dir.name}-merged", location=dest
        )
    return dest

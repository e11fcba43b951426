"""`train sft`: LoRA SFT of the paraphraser (App. E.1), planned and run as `train grpo` (``phr.ops.train_grpo``):
one training operation, two methods."""

from phr.ops.train_grpo import TrainPlan, plan, run

__all__ = ["TrainPlan", "plan", "run"]

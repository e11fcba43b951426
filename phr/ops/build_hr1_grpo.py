"""`build hr1-grpo`: the GRPO corpus, planned and built as `build hr1-sft` (``phr.ops.build_hr1_sft``) with the
QA model's filter (Listing B.1) in place of the paraphraser."""

from phr.ops.build_hr1_sft import TrainingPlan, plan, run

__all__ = ["TrainingPlan", "plan", "run"]

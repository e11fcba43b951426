"""`eval score`: score a run's merged responses again (a new scorer or scoring settings), planned and run as
`eval merge` (``phr.ops.eval_merge``) without the merge."""

from phr.ops.eval_merge import RescorePlan, plan, run

__all__ = ["RescorePlan", "plan", "run"]

"""Executors of DO plans beyond this process: placement, workers, the sharded driver and
the Ray runner (docs/distributed.md).  The planner knows none of them: a plan is data."""

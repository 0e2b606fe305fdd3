"""Sharding a job: parallel groups and their placement, bytes per chip, the plan search."""

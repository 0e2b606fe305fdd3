"""Whole steps from per-op times: a training step (``train``) and a serving step (``serve``)."""

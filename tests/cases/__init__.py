"""Per-family registries of :class:`harness.VectorCase` (see ``tests/harness.py``)."""

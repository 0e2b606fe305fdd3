"""Session-wide test setup: the suite never reads or writes the user's real price cache."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import settings

# 'chipwise prices update' writes a user-level cache that later runs read; point it at an
# empty temporary directory so a developer's own cache cannot change any test's answer.
os.environ["CHIPWISE_PRICE_CACHE"] = str(
    Path(tempfile.mkdtemp(prefix="chipwise-test-cache-")) / "prices.json"
)

# CI (.ci/run sets HYPOTHESIS_PROFILE=ci) replays the same examples every run, so a landing
# is never refused by a rare example found by chance; local runs keep exploring and the
# database keeps what they find.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

"""Session-wide test setup: the suite never reads or writes the user's real price cache."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# 'chipwise prices update' writes a user-level cache that later runs read; point it at an
# empty temporary directory so a developer's own cache cannot change any test's answer.
os.environ["CHIPWISE_PRICE_CACHE"] = str(
    Path(tempfile.mkdtemp(prefix="chipwise-test-cache-")) / "prices.json"
)

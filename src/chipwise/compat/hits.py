"""What a parser saw, before the knowledge classifies it: one ``Hit`` per place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

HitKind = Literal["dist", "conda", "import", "signal"]

EVIDENCE_CHARS = 160  # longest source excerpt kept per hit


@dataclass(frozen=True, slots=True, kw_only=True)
class Hit:
    """A dependency, import or code pattern at one place in the project.

    ``name`` is a PyPI name (``dist``), a conda package (``conda``), a dotted module
    (``import``) or a signal id (``signal``). ``optional`` hits (an extra, a dev group, an
    import inside ``try/except ImportError``, a non-Linux marker) are reported but never
    lower a verdict; ``condition`` says why.
    """

    kind: HitKind
    name: str
    file: str  # posix path relative to the scanned root
    line: int  # 1-based
    evidence: str
    optional: bool = False
    condition: str = ""
    detail: str = ""


def excerpt(text: str) -> str:
    """One trimmed line of source for a report."""
    one = " ".join(text.split())
    return one if len(one) <= EVIDENCE_CHARS else one[: EVIDENCE_CHARS - 1] + "…"

"""Command-line interface: ``chipwise``. Each command group lives in its own module."""

from chipwise.cli import advise as _advise  # noqa: F401  (registers commands)
from chipwise.cli import bench as _bench  # noqa: F401  (registers commands)
from chipwise.cli import chips as _chips  # noqa: F401  (registers commands)
from chipwise.cli import explore as _explore  # noqa: F401  (registers commands)
from chipwise.cli import predict as _predict  # noqa: F401  (registers commands)
from chipwise.cli import prices as _prices  # noqa: F401  (registers commands)
from chipwise.cli import scan as _scan  # noqa: F401  (registers commands)
from chipwise.cli import serve as _serve  # noqa: F401  (registers commands)
from chipwise.cli import validate as _validate  # noqa: F401  (registers commands)
from chipwise.cli import workload as _workload  # noqa: F401  (registers commands)
from chipwise.cli.app import app, main

__all__ = ["app", "main"]

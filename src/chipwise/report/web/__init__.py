"""The local web UI (``chipwise serve``): a FastAPI app over the same library calls as the CLI.

``create_app()`` builds it (FastAPI and uvicorn are the ``[web]`` extra, imported lazily).
"""

from chipwise.report.web.app import create_app

__all__ = ["create_app"]

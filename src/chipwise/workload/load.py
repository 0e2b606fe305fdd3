"""Turn the WORKLOAD string a user typed into a ``Model``.

Resolution order:

1. ``matmul:...``, ``copy:...``, ``allreduce:...``  -> ``Primitive``
2. a path ending ``.json``, or a directory with a ``config.json``  -> ``TransformerSpec``
3. a path ending ``.onnx``  -> ``Graph`` via ``chipwise.workload.from_onnx.load_onnx``
4. a zoo id or alias (``llama3-8b``, ``Llama 3.1 70B``, ``meta-llama/Llama-3.1-8B``)
5. a non-ML kind (``graphics``, ``fp64-hpc``/``hpl``, ``stencil``, ``fft``, ``hashing``,
   ``video-encode``)  -> ``NonMLKind``
6. ``package.module:factory`` or ``file.py:factory``  -> ``Graph`` via
   ``chipwise.workload.from_torch.load_torch_factory``; it imports and runs the user's
   code, so it needs ``trust_code=True`` (``--trust-code``).

Anything else raises ``WorkloadError`` with close matches.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chipwise.errors import ExtractionError, WorkloadError
from chipwise.workload.config import load_config
from chipwise.workload.ir import Graph, Model, TransformerSpec
from chipwise.workload.kinds import NON_ML_KINDS, close_kinds, find_kind
from chipwise.workload.presets import close_presets, find_preset, load_preset
from chipwise.workload.primitives import SYNTAX, is_primitive_spec, parse_primitive

# The longest workload string read: PATH_MAX on Linux is 4096 bytes, and no model id or
# primitive comes near it.
MAX_SPEC_CHARS = 4096

# package.module:factory or path/to/file.py:factory
_FACTORY = re.compile(r"^([A-Za-z_]\w*(\.[A-Za-z_]\w*)*|.+\.py):[A-Za-z_]\w*$")

TRUST_CODE_HINT = (
    "importing {spec!r} runs that module's code; pass --trust-code "
    "(trust_code=True) if you trust it"
)


def load_workload_model(spec: str, *, trust_code: bool = False) -> Model:
    """Resolve a workload string (zoo id, config path, primitive, kind, ONNX, factory).

    Args:
        spec: what the user typed, e.g. ``llama3-70b``, ``./config.json``,
            ``matmul:8192x8192x8192``, ``hpl``, ``model.onnx``, ``mypkg.models:build``.
        trust_code: allow importing and running a ``module:factory``.

    Raises:
        WorkloadError: the string names nothing chipwise can load (with suggestions).
    """
    text = spec.strip()
    if not text:
        raise WorkloadError("empty workload; give a model id (see 'chipwise workload list')")
    if len(text) > MAX_SPEC_CHARS:
        raise WorkloadError(
            f"workload {text[:40]!r}... is {len(text):,} characters; give a model id, a path "
            f"(at most {MAX_SPEC_CHARS} characters) or a primitive"
        )
    if is_primitive_spec(text):
        return parse_primitive(text)
    path = Path(text).expanduser()
    lower = text.lower()
    is_dir = _probe(path.is_dir, text)
    if lower.endswith(".json") or (is_dir and _probe((path / "config.json").is_file, text)):
        return load_config(path)
    if lower.endswith(".onnx"):
        if not _probe(path.is_file, text):
            raise WorkloadError(f"no such ONNX file: {path}")
        return _graph_from(_importer("from_onnx", "load_onnx")(path), text)
    preset = find_preset(text)
    if preset is not None:
        return load_preset(preset.id)
    kind = find_kind(text)
    if kind is not None:
        return kind
    if is_dir:
        raise WorkloadError(
            f"{path} is a directory without a config.json; give the config file itself or a "
            "model id (see 'chipwise workload list')"
        )
    if _FACTORY.match(text):
        if not trust_code:
            raise WorkloadError(TRUST_CODE_HINT.format(spec=text))
        loaded = _importer("from_torch", "load_torch_factory")(text, trust_code=True)
        return _graph_from(loaded, text)
    raise WorkloadError(_unknown_message(text))


def _probe(check: Callable[[], bool], text: str) -> bool:
    """A file-system test on what the user typed; an OS refusal (a name too long, a
    permission) is a one-line ``WorkloadError``, not a traceback."""
    try:
        return check()
    except OSError as err:
        raise WorkloadError(
            f"cannot read {text[:80]!r}: {err.strerror or err}; give a model id or a path"
        ) from None


def _unknown_message(text: str) -> str:
    close = close_presets(text) + close_kinds(text)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    kinds = ", ".join(k.name for k in NON_ML_KINDS)
    return (
        f"unknown workload {text!r}{hint} (give a zoo id from 'chipwise workload list', a "
        f"config.json path, an .onnx file, module:factory, {SYNTAX}, or one of: {kinds})"
    )


def _importer(module: str, function: str) -> Any:
    """``chipwise.workload.<module>.<function>``, imported only when needed."""
    try:
        loaded = importlib.import_module(f"chipwise.workload.{module}")
    except ImportError as err:
        raise ExtractionError(
            f"chipwise.workload.{module} cannot be imported ({err}); install the extra it "
            "needs, e.g. pip install 'chipwise[torch,onnx]'"
        ) from err
    target = getattr(loaded, function, None)
    if target is None:
        raise ExtractionError(f"chipwise.workload.{module} has no {function}()")
    return target


def _graph_from(result: Any, spec: str) -> Graph | TransformerSpec:
    if isinstance(result, Graph | TransformerSpec):
        return result
    raise ExtractionError(f"importer for {spec!r} returned {type(result).__name__}, not a Graph")

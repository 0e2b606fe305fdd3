"""The compatibility knowledge: which platforms each package and code signal runs on.

The data is ``data/packages.toml`` (converted from ``shared/reference/packages.csv``, with a
``last_checked`` date), validated here by pydantic with ``extra="forbid"`` when first loaded.
Two kinds of rule:

* ``[[package]]``: a distribution, matched by PyPI / conda name or by import name;
* ``[[signal]]``: a code or kernel pattern (``.cu`` files, ``@triton.jit``, OpenGL, fp64...),
  matched by file extension, distribution or import name, or by an AST pattern coded in
  ``code.py`` under the same id (``CODED_SIGNAL_IDS`` must all exist in the data).

Every rule gives a support status per platform (``nvidia-cuda``, ``amd-rocm``, ``intel-xpu``,
``google-tpu``), a porting path and an effort estimate where the status is not a plain "runs".
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from chipwise.errors import ScanError

Platform = Literal["nvidia-cuda", "amd-rocm", "intel-xpu", "google-tpu"]
PLATFORMS: tuple[Platform, ...] = ("nvidia-cuda", "amd-rocm", "intel-xpu", "google-tpu")
PLATFORM_NAMES: Mapping[Platform, str] = {
    "nvidia-cuda": "NVIDIA CUDA",
    "amd-rocm": "AMD ROCm",
    "intel-xpu": "Intel XPU",
    "google-tpu": "Google TPU",
}
Status = Literal[
    "yes",
    "partial",
    "experimental",
    "fork",
    "plugin",
    "preview",
    "planned",
    "no",
    "via-backend",
    "unknown",
    "n/a",
]
Effort = Literal["small", "medium", "large"]
Verdict = Literal["runs", "runs-with-changes", "does-not-run"]
VERDICT_ORDER: tuple[Verdict, ...] = ("runs", "runs-with-changes", "does-not-run")
EFFORT_ORDER: tuple[Effort, ...] = ("small", "medium", "large")

# How a support status reads as a verdict. The vocabulary is packages.csv's (ecosystem.md §0):
# 'via-backend' runs wherever its framework runs (the framework is judged by its own rule);
# 'n/a' is host-side code; 'unknown' is not established, so it needs a check (a change).
STATUS_VERDICT: Mapping[Status, Verdict] = {
    "yes": "runs",
    "via-backend": "runs",
    "n/a": "runs",
    "partial": "runs-with-changes",
    "experimental": "runs-with-changes",
    "fork": "runs-with-changes",
    "plugin": "runs-with-changes",
    "preview": "runs-with-changes",
    "unknown": "runs-with-changes",
    "planned": "does-not-run",
    "no": "does-not-run",
}

# Effort when the data gives none for a non-TPU platform (the CSV estimates only the TPU
# route). A chipwise heuristic, not sourced: installing a plugin or an experimental build is
# small, a fork or a partial port is medium, replacing a package that has no build is large.
DEFAULT_EFFORT: Mapping[Status, Effort] = {
    "partial": "medium",
    "experimental": "small",
    "fork": "medium",
    "plugin": "small",
    "preview": "small",
    "unknown": "small",
    "planned": "large",
    "no": "large",
}

# Porting text when the data gives none: what the status tells a user to do.
DEFAULT_PORTING: Mapping[Status, str] = {
    "partial": "partial support: check the notes; some features or kernels need a source build",
    "experimental": "experimental support: expect rough edges",
    "fork": "use the vendor or community fork (see the notes)",
    "plugin": "install the platform plugin package",
    "preview": "announced but not publicly released",
    "unknown": "support not established: test it before relying on it",
    "planned": "not available yet (planned): replace the package",
    "no": "no build for this platform: replace the package",
}

# Signal ids whose AST or text patterns are coded in code.py / manifests.py.
CODED_SIGNAL_IDS: frozenset[str] = frozenset(
    {
        "cuda-kernel",
        "cpp-extension",
        "triton-kernel",
        "cupy-raw-kernel",
        "torch-cuda-api",
        "nccl-backend",
        "fp64-device",
        "fp64-host",
        "jax-traced-control-flow",
        "flash-attention-2-flag",
        "cuda-build-pin",
        "rocm-build-pin",
        "xpu-build-pin",
        "tpu-build-pin",
        "tpu-strategy",
        "tpu-device-use",
    }
)

_DATA_FILE = "packages.toml"
_ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def normalize_dist(name: str) -> str:
    """PEP 503 name normalisation: 'Flash_Attn' -> 'flash-attn'."""
    return re.sub(r"[-_.]+", "-", name).lower()


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _RuleFile(_Frozen):
    """Fields common to packages and signals."""

    id: str
    support: dict[Platform, Status]
    porting: dict[Platform, str] = Field(default_factory=dict)
    effort: dict[Platform, Effort] = Field(default_factory=dict)
    caveats: dict[Platform, str] = Field(default_factory=dict)
    satisfied_by: dict[Platform, list[str]] = Field(default_factory=dict)
    tpu_path: bool = False
    pypi_names: list[str] = Field(default_factory=list)
    import_names: list[str] = Field(default_factory=list)
    sources: list[str] = Field(min_length=1)

    @field_validator("id")
    @classmethod
    def _kebab(cls, v: str) -> str:
        if not _ID_RE.fullmatch(v):
            raise ValueError(f"id {v!r} is not kebab-case")
        return v

    @model_validator(mode="after")
    def _complete(self) -> _RuleFile:
        missing = [p for p in PLATFORMS if p not in self.support]
        if missing:
            raise ValueError(f"{self.id}: support lacks {', '.join(missing)}")
        tpu = self.support["google-tpu"]
        if STATUS_VERDICT[tpu] != "runs" and not self.tpu_path and "google-tpu" not in self.effort:
            raise ValueError(f"{self.id}: google-tpu is {tpu!r} but effort.google-tpu is missing")
        return self


class PackageFile(_RuleFile):
    """One ``[[package]]`` table."""

    csv_name: str = ""
    conda_names: list[str] = Field(default_factory=list)
    claims_imports: bool = True
    import_only: bool = False
    category: str
    framework: str = ""
    tpu_alternative: str
    notes: str


class SignalFile(_RuleFile):
    """One ``[[signal]]`` table."""

    category: str
    title: str
    detects: str
    why: str
    file_extensions: list[str] = Field(default_factory=list)
    affects_verdict: bool = True


class KnowledgeFile(_Frozen):
    """The whole ``packages.toml``."""

    schema_version: Literal[1]
    last_checked: str
    checked_against: str
    package: list[PackageFile]
    signal: list[SignalFile]

    @field_validator("last_checked")
    @classmethod
    def _iso(cls, v: str) -> str:
        if not _DATE_RE.fullmatch(v):
            raise ValueError(f"last_checked {v!r} is not YYYY-MM-DD")
        return v


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """A package or signal rule as the scanner uses it."""

    kind: Literal["package", "signal"]
    id: str
    title: str  # display name: the package id or the signal title
    category: str
    support: Mapping[Platform, Status]
    porting: Mapping[Platform, str]
    effort: Mapping[Platform, Effort]
    caveats: Mapping[Platform, str]
    satisfied_by: Mapping[Platform, tuple[str, ...]]
    why: str
    sources: tuple[str, ...]
    tpu_path: bool = False
    affects_verdict: bool = True
    framework: str = ""

    def porting_for(self, platform: Platform) -> str:
        """The porting path for ``platform`` ('' where the rule runs there as is)."""
        status = self.support[platform]
        if STATUS_VERDICT[status] == "runs":
            return ""
        return self.porting.get(platform) or DEFAULT_PORTING[status]

    def effort_for(self, platform: Platform) -> Effort | None:
        """The porting effort for ``platform`` (None where the rule runs there as is)."""
        status = self.support[platform]
        if STATUS_VERDICT[status] == "runs":
            return None
        return self.effort.get(platform) or DEFAULT_EFFORT[status]


@dataclass(frozen=True, slots=True, kw_only=True)
class Knowledge:
    """Validated rules with look-up indexes by distribution, import name and file extension."""

    last_checked: str
    checked_against: str
    rules: tuple[Rule, ...]
    _dists: dict[str, tuple[Rule, ...]] = field(repr=False, compare=False)
    _conda: dict[str, tuple[Rule, ...]] = field(repr=False, compare=False)
    _imports: dict[str, tuple[Rule, ...]] = field(repr=False, compare=False)
    _exts: dict[str, Rule] = field(repr=False, compare=False)
    _by_id: dict[str, Rule] = field(repr=False, compare=False)

    def rule(self, rule_id: str) -> Rule:
        """The rule with this id (packages and signals share one namespace)."""
        try:
            return self._by_id[rule_id]
        except KeyError:
            raise ScanError(f"no compatibility rule {rule_id!r} in {_DATA_FILE}") from None

    def for_dist(self, name: str) -> tuple[Rule, ...]:
        """Rules a declared PyPI distribution triggers (empty if unknown)."""
        return self._dists.get(normalize_dist(name), ())

    def for_conda(self, name: str) -> tuple[Rule, ...]:
        """Rules a conda package triggers (conda names, else PyPI names)."""
        key = normalize_dist(name)
        return self._conda.get(key) or self._dists.get(key, ())

    def for_import(self, dotted: str) -> tuple[Rule, ...]:
        """Rules an imported module triggers: the longest matching prefix, per rule kind."""
        found: list[Rule] = []
        for kind in ("package", "signal"):
            parts = dotted.split(".")
            for n in range(len(parts), 0, -1):
                hits = [r for r in self._imports.get(".".join(parts[:n]), ()) if r.kind == kind]
                if hits:
                    found.extend(hits)
                    break
        return tuple(found)

    def for_extension(self, suffix: str) -> Rule | None:
        """The signal a file extension triggers ('.cu' -> cuda-kernel), if any."""
        return self._exts.get(suffix.lower())

    @property
    def packages(self) -> tuple[Rule, ...]:
        return tuple(r for r in self.rules if r.kind == "package")


def _package_rule(p: PackageFile) -> Rule:
    alt = p.tpu_alternative
    porting = dict(p.porting)
    # The CSV's tpu_alternative is the TPU porting path unless it is a non-answer such as
    # "(native)" or "n/a".
    if "google-tpu" not in porting and alt and not alt.startswith("(") and alt != "n/a":
        porting["google-tpu"] = alt
    return Rule(
        kind="package",
        id=p.id,
        title=p.id,
        category=p.category,
        support=dict(p.support),
        porting=porting,
        effort=dict(p.effort),
        caveats=dict(p.caveats),
        satisfied_by={k: tuple(v) for k, v in p.satisfied_by.items()},
        why=f"{p.category}: {p.notes}",
        sources=tuple(p.sources),
        tpu_path=p.tpu_path,
        framework=p.framework,
    )


def _signal_rule(s: SignalFile) -> Rule:
    return Rule(
        kind="signal",
        id=s.id,
        title=s.title,
        category=s.category,
        support=dict(s.support),
        porting=dict(s.porting),
        effort=dict(s.effort),
        caveats=dict(s.caveats),
        satisfied_by={k: tuple(v) for k, v in s.satisfied_by.items()},
        why=s.why,
        sources=tuple(s.sources),
        tpu_path=s.tpu_path,
        affects_verdict=s.affects_verdict,
    )


def _add(index: dict[str, list[Rule]], key: str, rule: Rule) -> None:
    index.setdefault(key, []).append(rule)


def knowledge_from_file(file: KnowledgeFile) -> Knowledge:
    """Build the indexes; clashing ids or import claims are data errors."""
    rules: list[Rule] = []
    dists: dict[str, list[Rule]] = {}
    conda: dict[str, list[Rule]] = {}
    imports: dict[str, list[Rule]] = {}
    exts: dict[str, Rule] = {}
    for p in file.package:
        rule = _package_rule(p)
        rules.append(rule)
        if not p.import_only:
            for n in p.pypi_names:
                _add(dists, normalize_dist(n), rule)
            for n in p.conda_names:
                _add(conda, normalize_dist(n), rule)
        if p.claims_imports:
            for n in p.import_names:
                if any(r.kind == "package" for r in imports.get(n, [])):
                    owner = next(r.id for r in imports[n] if r.kind == "package")
                    raise ScanError(
                        f"{_DATA_FILE}: import {n!r} claimed by {owner!r} and {p.id!r}; "
                        "set claims_imports = false on one"
                    )
                _add(imports, n, rule)
    for s in file.signal:
        rule = _signal_rule(s)
        rules.append(rule)
        for n in s.pypi_names:
            _add(dists, normalize_dist(n), rule)
        for n in s.import_names:
            _add(imports, n, rule)
        for ext in s.file_extensions:
            if ext.lower() in exts:
                raise ScanError(f"{_DATA_FILE}: extension {ext!r} in two signals")
            exts[ext.lower()] = rule
    by_id: dict[str, Rule] = {}
    for r in rules:
        if r.id in by_id:
            raise ScanError(f"{_DATA_FILE}: duplicate rule id {r.id!r}")
        by_id[r.id] = r
    for r in rules:
        unknown = sorted({i for ids in r.satisfied_by.values() for i in ids} - by_id.keys())
        if unknown:
            raise ScanError(f"{_DATA_FILE}: {r.id}: satisfied_by names unknown rules {unknown}")
    missing = sorted(CODED_SIGNAL_IDS - {r.id for r in rules if r.kind == "signal"})
    if missing:
        raise ScanError(f"{_DATA_FILE}: coded signals without a [[signal]] table: {missing}")
    return Knowledge(
        last_checked=file.last_checked,
        checked_against=file.checked_against,
        rules=tuple(rules),
        _dists={k: tuple(v) for k, v in dists.items()},
        _conda={k: tuple(v) for k, v in conda.items()},
        _imports={k: tuple(v) for k, v in imports.items()},
        _exts=exts,
        _by_id=by_id,
    )


def load_knowledge(path: Path | None = None) -> Knowledge:
    """Read and validate the knowledge file (default: the packaged ``data/packages.toml``)."""
    if path is None:
        path = Path(str(resources.files("chipwise.compat").joinpath("data", _DATA_FILE)))
    try:
        with path.open("rb") as fh:
            raw = tomllib.load(fh)
    except OSError as err:
        raise ScanError(f"cannot read knowledge file {str(path)!r}: {err.strerror}") from err
    except tomllib.TOMLDecodeError as err:
        raise ScanError(f"{path.name}: not valid TOML: {err}") from err
    try:
        file = KnowledgeFile.model_validate(raw)
    except ValidationError as err:
        raise ScanError(_validation_message(path, raw, err)) from err
    return knowledge_from_file(file)


def _validation_message(path: Path, raw: dict[str, object], err: ValidationError) -> str:
    """'packages.toml: package[3] (flash-attn).support.amd-rocm: Input should be ... (got ..)'."""
    first = err.errors()[0]
    loc = [str(p) for p in first["loc"]]
    where = ".".join(loc)
    table = raw.get(loc[0]) if loc else None
    if len(loc) >= 2 and isinstance(table, list) and loc[1].isdigit():
        entry = table[int(loc[1])]
        name = f" ({entry['id']})" if isinstance(entry, dict) and "id" in entry else ""
        where = f"{loc[0]}[{loc[1]}]{name}" + "".join(f".{p}" for p in loc[2:])
    got = repr(first.get("input"))
    got = got if len(got) <= 60 else got[:57] + "..."
    return f"{path.name}: {where}: {first['msg']} (got {got}; {err.error_count()} error(s))"


@cache
def default_knowledge() -> Knowledge:
    """The packaged knowledge, loaded once."""
    return load_knowledge()

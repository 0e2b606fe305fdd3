"""``scan_project``: read a project's files (never run them) and say where it can run.

The walk skips version-control folders, virtual environments (any folder holding
``pyvenv.cfg`` or ``conda-meta``), ``node_modules``, ``site-packages``, build outputs and
caches; it never follows symbolic links; it skips files over ``ScanLimits.max_file_bytes`` and
stops after ``ScanLimits.max_files`` files, saying so in the report's notes.

Python is read with ``ast.parse`` only (no import, no exec, no bytecode); setup.py is read
the same way. Dependency files are parsed as text (``manifests.py``).
"""

from __future__ import annotations

import ast
import os
import re
import stat
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from chipwise.compat import code, manifests, verdict
from chipwise.compat.hits import Hit, excerpt
from chipwise.compat.knowledge import Knowledge, default_knowledge
from chipwise.compat.result import ScanReport
from chipwise.errors import ScanError

# 2 MiB: larger "source" files are generated or vendored; reading them slows the scan and
# adds nothing a dependency file does not already say.
MAX_FILE_BYTES = 2 * 1024 * 1024
# A monorepo bound: beyond this many files the scan stops and says so.
MAX_FILES = 20_000
# Directory entries the walk visits (files of every kind, folders): a path such as / or a
# home folder would otherwise walk for minutes; a large monorepo has ~1e5.
MAX_ENTRIES = 500_000
# Bytes read in all: 20,000 files of 2 MiB would be 40 GB; real projects' source and
# dependency files total well under 100 MiB.
MAX_TOTAL_BYTES = 256 * 1024 * 1024

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "site-packages",
        "dist-packages",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".ipynb_checkpoints",
        ".eggs",
        "build",
        "dist",
    }
)
_ENV_MARKERS = ("pyvenv.cfg", "conda-meta")  # a folder holding one of these is an environment
NATIVE_SUFFIXES = frozenset({".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx"})
_REQUIREMENTS = re.compile(r"^(?:.*[-_.])?requirements?(?:[-_.][\w.-]*)?\.(?:txt|in)$")
_CONDA_ENV = re.compile(r"^(?:environment|env|conda)(?:[-_.][\w.-]*)?\.ya?ml$")
_DOCKERFILE = re.compile(r"^(?:dockerfile(?:[-_.][\w.-]*)?|[\w.-]+\.dockerfile)$")
_BINARY_SUFFIXES = frozenset({".spv"})  # matched by name only, never read


@dataclass(frozen=True, slots=True, kw_only=True)
class ScanLimits:
    """Bounds on what one scan reads."""

    max_file_bytes: int = MAX_FILE_BYTES
    max_files: int = MAX_FILES
    max_entries: int = MAX_ENTRIES
    max_total_bytes: int = MAX_TOTAL_BYTES

    def __post_init__(self) -> None:
        if min(self.max_file_bytes, self.max_files, self.max_entries, self.max_total_bytes) <= 0:
            raise ScanError(
                f"scan limits must be positive (max_file_bytes={self.max_file_bytes}, "
                f"max_files={self.max_files}, max_entries={self.max_entries}, "
                f"max_total_bytes={self.max_total_bytes})"
            )


def file_role(name: str, parent: str, knowledge: Knowledge) -> str | None:
    """What a file is to the scanner ('python', 'requirements', ...) or None to skip it."""
    lower = name.lower()
    suffix = PurePosixPath(lower).suffix
    if lower == "setup.py":
        return "setup-py"
    if suffix == ".py":
        return "python"
    if _REQUIREMENTS.match(lower) or (
        parent.lower() == "requirements" and suffix in {".txt", ".in"}
    ):
        return "requirements"
    if lower == "pyproject.toml":
        return "pyproject"
    if lower == "setup.cfg":
        return "setup-cfg"
    if lower == "pipfile":
        return "pipfile"
    if _CONDA_ENV.match(lower):
        return "conda-env"
    if _DOCKERFILE.match(lower):
        return "dockerfile"
    if knowledge.for_extension(suffix) is not None:
        return "ext-signal"
    if suffix in NATIVE_SUFFIXES:
        return "native"
    return None


@dataclass(slots=True)
class _State:
    root: Path
    knowledge: Knowledge
    limits: ScanLimits
    hits: list[Hit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    parsed: set[str] = field(default_factory=set)  # relative paths already read
    dependency_files: list[str] = field(default_factory=list)
    too_big: list[str] = field(default_factory=list)
    special: list[str] = field(default_factory=list)  # FIFOs, devices, sockets: never read
    over_budget: list[str] = field(default_factory=list)  # past max_total_bytes
    links: int = 0
    files: int = 0
    entries: int = 0  # directory entries the walk visited
    bytes_read: int = 0
    stopped: bool = False
    stopped_why: str = ""

    def read(self, rel: str) -> str | None:
        """The text of a project file, or None (too big, unreadable, not a regular file) with
        a note. Opened non-blocking and checked with ``fstat`` before reading, so a FIFO or a
        device that replaced a file since the walk never blocks the scan."""
        path = self.root / rel
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError as err:
            self.notes.append(f"{rel}: not readable ({err.strerror}); skipped")
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                self.special.append(rel)
                return None
            if info.st_size > self.limits.max_file_bytes:
                self.too_big.append(rel)
                return None
            if self.bytes_read + info.st_size > self.limits.max_total_bytes:
                self.over_budget.append(rel)
                return None
            with os.fdopen(os.dup(fd), "rb") as file:
                data = file.read(self.limits.max_file_bytes + 1)
        except OSError as err:
            self.notes.append(f"{rel}: not readable ({err.strerror}); skipped")
            return None
        finally:
            os.close(fd)
        if len(data) > self.limits.max_file_bytes:
            self.too_big.append(rel)
            return None
        self.bytes_read += len(data)
        return data.decode("utf-8", errors="replace")


def _parse_python(rel: str, text: str, st: _State) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc. in the scanned code
            return ast.parse(text, filename=rel)
    except (SyntaxError, ValueError, RecursionError) as err:
        where = f" (line {err.lineno})" if isinstance(err, SyntaxError) and err.lineno else ""
        st.notes.append(f"{rel}: not parseable as Python 3{where}; skipped")
        return None


def _requirements(rel: str, text: str, st: _State) -> None:
    st.dependency_files.append(rel)
    parsed = manifests.parse_requirements(rel, text)
    st.hits += parsed.hits
    st.notes += parsed.notes
    base = PurePosixPath(rel).parent
    for target, line in parsed.includes:
        inc = os.path.normpath(str(base / target)).replace(os.sep, "/")
        if inc.startswith("../") or inc == ".." or os.path.isabs(target):
            st.notes.append(f"{rel}:{line}: -r {target} is outside the project; not read")
            continue
        if inc in st.parsed:
            continue
        if os.path.islink(st.root / inc) or not os.path.isfile(st.root / inc):
            st.notes.append(f"{rel}:{line}: -r {target} not found in the project")
            continue
        st.parsed.add(inc)
        st.files += 1
        inc_text = st.read(inc)
        if inc_text is not None:
            _requirements(inc, inc_text, st)


def _dependency_parser(role: str) -> Callable[[str, str], manifests.Parsed]:
    return {
        "pyproject": manifests.parse_pyproject,
        "setup-cfg": manifests.parse_setup_cfg,
        "pipfile": manifests.parse_pipfile,
        "conda-env": manifests.parse_environment_yml,
        "dockerfile": manifests.parse_dockerfile,
    }[role]


def _ext_signal(rel: str, st: _State) -> None:
    rule = st.knowledge.for_extension(PurePosixPath(rel).suffix)
    assert rule is not None
    line, evidence = 1, PurePosixPath(rel).name
    if PurePosixPath(rel).suffix.lower() not in _BINARY_SUFFIXES:
        text = st.read(rel)
        if text is None:
            return
        if rule.id == "cuda-kernel":
            line, found = code.first_line_matching(text, code.KERNEL_LINE)
            evidence = found or evidence
    st.hits.append(
        Hit(
            kind="signal",
            name=rule.id,
            file=rel,
            line=line,
            evidence=excerpt(evidence),
            detail=PurePosixPath(rel).name,
        )
    )


def _scan_file(rel: str, role: str, st: _State) -> None:
    if role == "ext-signal":
        _ext_signal(rel, st)
        return
    text = st.read(rel)
    if text is None:
        return
    if role in {"python", "setup-py"}:
        tree = _parse_python(rel, text, st)
        if tree is None:
            return
        st.hits += code.scan_python(rel, text, tree)
        if role == "setup-py":
            st.dependency_files.append(rel)
            st.hits += manifests.parse_setup_py(rel, text, tree).hits
    elif role == "requirements":
        _requirements(rel, text, st)
    elif role == "native":
        st.hits += code.scan_native(rel, text)
    else:
        st.dependency_files.append(rel)
        parsed = _dependency_parser(role)(rel, text)
        st.hits += parsed.hits
        st.notes += parsed.notes


def _walk(root: Path, st: _State) -> list[tuple[str, str]]:
    """(relative path, role) of every regular file to read, sorted, within the limits.

    Symbolic links, FIFOs, devices and sockets are counted and skipped (``lstat`` only: a
    FIFO is never opened); a folder that cannot be listed is skipped with a note."""
    out: list[tuple[str, str]] = []

    def unreadable(err: OSError) -> None:
        where = os.path.relpath(err.filename, root) if err.filename else "a folder"
        st.notes.append(f"{where}: not readable ({err.strerror}); skipped")

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable, followlinks=False):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in SKIP_DIRS
            and not d.endswith(".egg-info")
            and not any(os.path.lexists(os.path.join(dirpath, d, m)) for m in _ENV_MARKERS)
            and not os.path.islink(os.path.join(dirpath, d))
        )
        rel_dir = Path(dirpath).relative_to(root)
        st.entries += len(dirnames) + len(filenames)
        if st.entries > st.limits.max_entries:
            st.stopped = True
            st.stopped_why = f"stopped after visiting {st.limits.max_entries:,} entries"
            return out
        for name in sorted(filenames):
            role = file_role(name, Path(dirpath).name, st.knowledge)
            if role is None:
                continue
            rel = (rel_dir / name).as_posix()
            try:
                mode = os.lstat(os.path.join(dirpath, name)).st_mode
            except OSError as err:
                st.notes.append(f"{rel}: not readable ({err.strerror}); skipped")
                continue
            if stat.S_ISLNK(mode):
                st.links += 1
                continue
            if not stat.S_ISREG(mode):
                st.special.append(rel)
                continue
            if len(out) >= st.limits.max_files:
                st.stopped = True
                st.stopped_why = f"stopped after {st.limits.max_files} files"
                return out
            out.append((rel, role))
    return out


def scan_project(
    path: str | os.PathLike[str],
    *,
    knowledge: Knowledge | None = None,
    limits: ScanLimits | None = None,
) -> ScanReport:
    """Scan a project directory (or one file) without executing anything in it.

    Args:
        path: the project root, or a single file (a requirements.txt, a .py, ...).
        knowledge: the rules to apply (default: the packaged ``data/packages.toml``).
        limits: file-size and file-count bounds (default: 2 MiB per file, 20,000 files).

    Returns:
        A ``ScanReport`` with a verdict per platform and every finding's file and line.

    Raises:
        ScanError: the path does not exist or is neither a directory nor a regular file.
    """
    knowledge = knowledge or default_knowledge()
    limits = limits or ScanLimits()
    given = Path(path)
    try:
        target = given.resolve(strict=True)
    except (OSError, RuntimeError):
        raise ScanError(
            f"cannot scan {str(path)!r}: no such file or directory; pass a project folder"
        ) from None
    if target.is_dir():
        root = target
        try:
            with os.scandir(root):
                pass
        except OSError as err:
            raise ScanError(
                f"cannot scan {str(path)!r}: the folder is not readable ({err.strerror}); "
                "check its permissions"
            ) from None
        st = _State(root=root, knowledge=knowledge, limits=limits)
        files = _walk(root, st)
    elif target.is_file():
        root = target.parent
        st = _State(root=root, knowledge=knowledge, limits=limits)
        role = file_role(target.name, root.name, knowledge) or (
            "requirements" if target.suffix in {".txt", ".in"} else None
        )
        if role is None:
            raise ScanError(
                f"cannot scan {str(path)!r}: not a project folder or a file chipwise reads "
                "(.py, requirements*.txt, pyproject.toml, setup.cfg, Pipfile, environment.yml, "
                ".cu, Dockerfile, ...)"
            )
        files = [(target.name, role)]
    else:
        raise ScanError(f"cannot scan {str(path)!r}: not a regular file or a directory")

    for rel, role in files:
        if rel in st.parsed:
            continue
        st.parsed.add(rel)
        st.files += 1
        _scan_file(rel, role, st)

    notes = list(st.notes)
    if st.too_big:
        shown = ", ".join(st.too_big[:5]) + (" ..." if len(st.too_big) > 5 else "")
        notes.append(
            f"skipped {len(st.too_big)} file(s) over {limits.max_file_bytes} bytes: {shown}"
        )
    if st.links:
        notes.append(f"skipped {st.links} symbolic link(s)")
    if st.special:
        shown = ", ".join(st.special[:5]) + (" ..." if len(st.special) > 5 else "")
        notes.append(f"skipped {len(st.special)} FIFO(s), device(s) or socket(s): {shown}")
    if st.stopped:
        notes.append(f"{st.stopped_why}; the rest was not scanned")
    if st.over_budget:
        notes.append(
            f"read {limits.max_total_bytes // (1024 * 1024)} MiB in all, the limit; "
            f"{len(st.over_budget)} more file(s) not read"
        )
    findings, unclassified = verdict.classify(st.hits, knowledge)
    found_frameworks = verdict.frameworks(findings, knowledge)
    if not found_frameworks and not any(not f.optional for f in findings):
        notes.append(
            "no accelerator framework, kernel or device code found: the code would run on the "
            "host CPU of any of these machines, not on the accelerator"
        )
    return ScanReport(
        root=str(root),
        files_scanned=st.files,
        dependency_files=tuple(sorted(set(st.dependency_files))),
        platforms=verdict.judge(findings, knowledge),
        findings=findings,
        frameworks=found_frameworks,
        uses_cuda_specific_libs=verdict.cuda_specific_libs(findings),
        custom_kernels=verdict.custom_kernels(findings, knowledge),
        needs_fp64=verdict.has_required(findings, "fp64-device"),
        needs_graphics=verdict.has_required(findings, "graphics-api"),
        tpu_ready_signals=verdict.tpu_ready(findings),
        unclassified_packages=unclassified,
        notes=tuple(notes),
        knowledge_last_checked=knowledge.last_checked,
    )

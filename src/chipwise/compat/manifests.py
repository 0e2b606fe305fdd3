"""Read dependency files as text, never by running them.

requirements*.txt (``-r`` includes, specifiers, extras, markers, index URLs), pyproject.toml
(PEP 621, PEP 735 groups, Poetry), setup.py (AST only: ``install_requires`` /
``extras_require`` literals), setup.cfg, Pipfile, conda environment files (a small YAML
subset reader: top-level keys, block lists, the ``- pip:`` sub-list) and Dockerfiles (base
images and index URLs only). Each parser takes the file's project-relative path and text and
returns ``Hit`` values plus notes about what it could not read.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from chipwise.compat.hits import Hit, excerpt

# PEP 508: name, optional [extras], the rest (specifier or '@ url'), optional '; marker'.
_REQ_RE = re.compile(
    r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[([^\]]*)\])?\s*(.*)$"
)
_EGG_RE = re.compile(r"#egg=([A-Za-z0-9][A-Za-z0-9._-]*)")

# Build pins, from ecosystem.md §1.4: PyTorch wheel indexes and local versions, JAX extras,
# NVIDIA runtime wheels, the libtpu find-links page, vendor base images.
_URL_PINS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"/whl/(?:nightly/|test/)?cu\d+"), "cuda-build-pin"),
    (re.compile(r"/whl/(?:nightly/|test/)?rocm\d"), "rocm-build-pin"),
    (re.compile(r"/whl/(?:nightly/|test/)?xpu\b"), "xpu-build-pin"),
    (re.compile(r"libtpu-releases|libtpu-wheels"), "tpu-build-pin"),
)
_DOCKER_PINS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\s*FROM\s+(?:\S+/)?(?:nvidia/cuda|nvcr\.io/nvidia/)", re.I), "cuda-build-pin"),
    (re.compile(r"^\s*FROM\s+(?:docker\.io/)?rocm/", re.I), "rocm-build-pin"),
    (re.compile(r"(?:jax|torch[-_]xla)\[tpu\]"), "tpu-build-pin"),
    (re.compile(r"jax\[cuda\d*"), "cuda-build-pin"),
)
_LOCAL_VERSION_PINS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\+cu\d+"), "cuda-build-pin"),
    (re.compile(r"\+rocm\d"), "rocm-build-pin"),
    (re.compile(r"\+xpu\b"), "xpu-build-pin"),
)
_NVIDIA_RUNTIME_WHEEL = re.compile(r"^nvidia-[a-z0-9-]+-cu1\d+$")
# Conda packages that only exist to pin a CUDA toolchain (conda-forge / nvidia channels).
_CONDA_CUDA = frozenset(
    {
        "cudatoolkit",
        "cuda-toolkit",
        "pytorch-cuda",
        "cuda-version",
        "cuda-nvcc",
        "cuda-runtime",
        "cudnn",
        "nccl",
    }
)
# Markers that confine a requirement to a non-Linux host (accelerator hosts run Linux).
_NON_LINUX_MARKER = re.compile(
    r"""(sys_platform|platform_system)\s*==\s*['"](darwin|win32|cygwin|Darwin|Windows)['"]"""
)


@dataclass(slots=True)
class Parsed:
    """Hits and notes from one file, plus the ``-r`` includes it asked for."""

    hits: list[Hit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    includes: list[tuple[str, int]] = field(default_factory=list)  # (path as written, line)


def _extra_pins(name: str, extras: Iterable[str]) -> Iterator[str]:
    key = re.sub(r"[-_.]+", "-", name).lower()
    for extra in (e.strip().lower() for e in extras):
        if key in {"jax", "jaxlib"} and extra.startswith("cuda"):
            yield "cuda-build-pin"
        elif key in {"jax", "jaxlib"} and extra.startswith("rocm"):
            yield "rocm-build-pin"
        elif key in {"jax", "torch-xla"} and extra == "tpu":
            yield "tpu-build-pin"
        elif key == "tensorflow" and extra == "and-cuda":
            yield "cuda-build-pin"


def requirement_hits(
    spec: str, *, file: str, line: int, evidence: str, optional: bool = False, condition: str = ""
) -> list[Hit]:
    """Hits for one PEP 508 requirement string (name, extras, local version, marker)."""
    spec = spec.strip()
    egg = _EGG_RE.search(spec)
    if "://" in spec.split("@")[0] or spec.startswith(("git+", "hg+", "svn+", "bzr+")):
        if egg is None:
            return []
        spec = egg.group(1)
    m = _REQ_RE.match(spec)
    if m is None:
        return []
    name, extras_s, rest = m.group(1), m.group(2) or "", m.group(3)
    marker = rest.split(";", 1)[1].strip() if ";" in rest else ""
    if marker and _NON_LINUX_MARKER.search(marker) and " or " not in marker:
        optional, condition = True, f"marker: {marker}"
    dist = Hit(
        kind="dist",
        name=name,
        file=file,
        line=line,
        evidence=excerpt(evidence),
        optional=optional,
        condition=condition,
    )
    key = re.sub(r"[-_.]+", "-", name).lower()
    if _NVIDIA_RUNTIME_WHEEL.match(key):  # nvidia-cublas-cu12 & co: a CUDA pin, not a library
        return [replace(dist, kind="signal", name="cuda-build-pin", detail=name)]
    pins = list(_extra_pins(name, extras_s.split(",") if extras_s else ()))
    pins += [sig for rx, sig in _LOCAL_VERSION_PINS if rx.search(rest.split(";", 1)[0])]
    return [dist] + [replace(dist, kind="signal", name=p, detail=name) for p in dict.fromkeys(pins)]


def url_pin_hits(file: str, text: str) -> list[Hit]:
    """Build pins named by index / find-links URLs anywhere in a text file."""
    out: list[Hit] = []
    for no, ln in enumerate(text.splitlines(), 1):
        for rx, sig in _URL_PINS:
            m = rx.search(ln)
            if m:
                out.append(
                    Hit(
                        kind="signal",
                        name=sig,
                        file=file,
                        line=no,
                        evidence=excerpt(ln),
                        detail=m.group(0).lstrip("/"),
                    )
                )
    return out


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """requirements.txt lines with comments removed and ``\\`` continuations joined."""
    buf, start = "", 0
    for no, raw in enumerate(text.splitlines(), 1):
        ln = re.sub(r"(^|\s)#.*$", "", raw)
        if not buf:
            start = no
        if ln.rstrip().endswith("\\"):
            buf += ln.rstrip()[:-1] + " "
            continue
        buf += ln
        if buf.strip():
            yield start, buf.strip()
        buf = ""
    if buf.strip():
        yield start, buf.strip()


_DIRECT_REF = re.compile(r"^[A-Za-z0-9][\w.-]*\s*(?:\[[^\]]*\])?\s*@")
_ARCHIVES = (".whl", ".tar.gz", ".zip")
_OPT_WITH_VALUE = re.compile(r"^(-r|--requirement|-c|--constraint|-e|--editable)(?:\s+|=)?(.*)$")


def parse_requirements(file: str, text: str) -> Parsed:
    """A pip requirements file. ``-r`` includes are returned for the caller to resolve."""
    out = Parsed(hits=url_pin_hits(file, text))
    for no, ln in _logical_lines(text):
        opt = _OPT_WITH_VALUE.match(ln)
        if opt:
            flag, value = opt.group(1), opt.group(2).strip()
            if flag in {"-r", "--requirement"} and value:
                out.includes.append((value, no))
            elif flag in {"-e", "--editable"} and _EGG_RE.search(value):
                out.hits += requirement_hits(value, file=file, line=no, evidence=ln)
            continue
        if ln.startswith("-"):
            continue  # --index-url, --find-links, --hash...: URLs were read above
        direct = _DIRECT_REF.match(ln)  # "name @ url": a named requirement
        if not direct and (ln.startswith((".", "/", "~")) or ln.endswith(_ARCHIVES)):
            egg = _EGG_RE.search(ln)
            if egg:
                out.hits += requirement_hits(egg.group(1), file=file, line=no, evidence=ln)
            continue
        spec = re.split(r"\s--?[a-z]", ln, maxsplit=1)[0]  # drop per-line options (--hash)
        out.hits += requirement_hits(spec, file=file, line=no, evidence=ln)
    return out


def _line_of(lines: list[str], *needles: str) -> int:
    """1-based line of the first line containing any needle (1 when none does)."""
    for needle in needles:
        for no, ln in enumerate(lines, 1):
            if needle and needle in ln:
                return no
    return 1


def _pep508_list(
    out: Parsed, file: str, lines: list[str], specs: object, *, optional: bool, condition: str
) -> None:
    if not isinstance(specs, list):
        return
    for spec in specs:
        if not isinstance(spec, str):
            continue  # PEP 735 {include-group = ...}
        no = _line_of(lines, f'"{spec}"', f"'{spec}'", spec)
        out.hits += requirement_hits(
            spec,
            file=file,
            line=no,
            evidence=lines[no - 1] if lines else spec,
            optional=optional,
            condition=condition,
        )


def _poetry_table(
    out: Parsed, file: str, lines: list[str], deps: object, *, optional: bool, condition: str
) -> None:
    if not isinstance(deps, dict):
        return
    for name, value in deps.items():
        if name.lower() == "python":
            continue
        extras: list[str] = []
        opt, cond = optional, condition
        version = value if isinstance(value, str) else ""
        if isinstance(value, dict):
            extras = [str(e) for e in value.get("extras", [])]
            version = str(value.get("version", ""))
            if value.get("optional"):
                opt, cond = True, "optional (poetry extra)"
            markers = str(value.get("markers", ""))
            if markers and _NON_LINUX_MARKER.search(markers) and " or " not in markers:
                opt, cond = True, f"marker: {markers}"
        rx = re.compile(rf"^\s*[\"']?{re.escape(name)}[\"']?\s*=")
        no = next((i for i, ln in enumerate(lines, 1) if rx.match(ln)), 1)
        spec = f"{name}[{','.join(extras)}]" if extras else name
        if "+" in version:  # a local version such as 2.3.0+cu121 pins a build
            spec += f"=={version.lstrip('=<>!~^ ')}"
        out.hits += requirement_hits(
            spec,
            file=file,
            line=no,
            evidence=lines[no - 1] if lines else name,
            optional=opt,
            condition=cond,
        )


def _toml_or_note(out: Parsed, file: str, text: str) -> dict[str, Any] | None:
    """The parsed TOML, or None with a note on ``out`` saying the file was skipped."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        out.notes.append(f"{file}: not valid TOML ({err}); skipped")
        return None


def parse_pyproject(file: str, text: str) -> Parsed:
    """pyproject.toml: [project] deps and extras, [dependency-groups], Poetry tables."""
    out = Parsed(hits=url_pin_hits(file, text))
    data = _toml_or_note(out, file, text)
    if data is None:
        return out
    lines = text.splitlines()
    project = data.get("project", {})
    _pep508_list(out, file, lines, project.get("dependencies"), optional=False, condition="")
    for extra, specs in (project.get("optional-dependencies") or {}).items():
        _pep508_list(out, file, lines, specs, optional=True, condition=f"extra '{extra}'")
    for group, specs in (data.get("dependency-groups") or {}).items():
        _pep508_list(out, file, lines, specs, optional=True, condition=f"group '{group}'")
    poetry = data.get("tool", {}).get("poetry", {})
    _poetry_table(out, file, lines, poetry.get("dependencies"), optional=False, condition="")
    _poetry_table(
        out,
        file,
        lines,
        poetry.get("dev-dependencies"),
        optional=True,
        condition="poetry dev-dependencies",
    )
    for group, body in (poetry.get("group") or {}).items():
        if isinstance(body, dict):
            _poetry_table(
                out,
                file,
                lines,
                body.get("dependencies"),
                optional=True,
                condition=f"poetry group '{group}'",
            )
    return out


def parse_pipfile(file: str, text: str) -> Parsed:
    """Pipfile (TOML): [packages] and [dev-packages]."""
    out = Parsed(hits=url_pin_hits(file, text))
    data = _toml_or_note(out, file, text)
    if data is None:
        return out
    lines = text.splitlines()
    _poetry_table(out, file, lines, data.get("packages"), optional=False, condition="")
    _poetry_table(
        out, file, lines, data.get("dev-packages"), optional=True, condition="Pipfile dev-packages"
    )
    return out


def _str_value(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _str_list(node: ast.expr | None, names: dict[str, ast.expr]) -> list[ast.Constant]:
    if isinstance(node, ast.Name) and node.id in names:
        node = names[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def parse_setup_py(file: str, text: str, tree: ast.Module) -> Parsed:
    """setup.py by AST: literal ``install_requires`` and ``extras_require`` (never run)."""
    out = Parsed()
    lines = text.splitlines()
    names: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                names[target.id] = stmt.value
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        fname = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if fname != "setup":
            continue
        for kw in node.keywords:
            if kw.arg == "install_requires":
                for c in _str_list(kw.value, names):
                    out.hits += requirement_hits(
                        str(c.value), file=file, line=c.lineno, evidence=lines[c.lineno - 1]
                    )
            elif kw.arg == "extras_require":
                value = (
                    names.get(kw.value.id, kw.value) if isinstance(kw.value, ast.Name) else kw.value
                )
                if not isinstance(value, ast.Dict):
                    continue
                for k, v in zip(value.keys, value.values, strict=True):
                    extra = _str_value(k) or "?"
                    for c in _str_list(v, names):
                        out.hits += requirement_hits(
                            str(c.value),
                            file=file,
                            line=c.lineno,
                            evidence=lines[c.lineno - 1],
                            optional=True,
                            condition=f"extra '{extra}'",
                        )
    return out


def parse_setup_cfg(file: str, text: str) -> Parsed:
    """setup.cfg: [options] install_requires and [options.extras_require] (INI, by line)."""
    out = Parsed()
    section, key = "", ""
    for no, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith(("#", ";")):
            continue
        head = re.match(r"^\[([^\]]+)\]\s*$", raw)
        if head:
            section, key = head.group(1).strip().lower(), ""
            continue
        if raw[0] not in " \t":
            m = re.match(r"^([^=:]+?)\s*[=:]\s*(.*)$", raw)
            if not m:
                continue
            key, value = m.group(1).strip().lower(), m.group(2).strip()
        else:
            value = raw.strip()
        if section == "options" and key == "install_requires":
            optional, condition = False, ""
        elif section == "options.extras_require" and key:
            optional, condition = True, f"extra '{key}'"
        else:
            continue
        if value:
            out.hits += requirement_hits(
                value, file=file, line=no, evidence=raw, optional=optional, condition=condition
            )
    return out


def _conda_hits(spec: str, *, file: str, line: int, evidence: str) -> list[Hit]:
    body = spec.split("::", 1)[-1].strip()
    m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(.*)$", body)
    if m is None:
        return []
    name, rest = m.group(1).lower(), m.group(2)
    conda = Hit(kind="conda", name=name, file=file, line=line, evidence=excerpt(evidence))
    if name in _CONDA_CUDA:
        return [replace(conda, kind="signal", name="cuda-build-pin", detail=name)]
    if re.search(r"cuda\d", rest):  # build string such as py3.11_cuda12.1_cudnn8_0
        return [conda, replace(conda, kind="signal", name="cuda-build-pin", detail=name)]
    if "rocm" in rest:
        return [conda, replace(conda, kind="signal", name="rocm-build-pin", detail=name)]
    return [conda]


def _yaml_scalar(s: str) -> str:
    s = re.sub(r"\s+#.*$", "", s).strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        s = s[1:-1]
    return s


def parse_environment_yml(file: str, text: str) -> Parsed:
    """A conda environment file, read with a small YAML subset reader.

    Supported: top-level ``key:`` lines, a block list under ``dependencies:`` whose items are
    scalars or ``- pip:`` with its own block list, flow lists ``[a, b]``, comments, quotes.
    Anchors, aliases, multi-line scalars and flow mappings are reported as unsupported.
    """
    out = Parsed(hits=url_pin_hits(file, text))
    in_deps, pip_indent = False, -1
    for no, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        body = raw.strip()
        if indent == 0 and not body.startswith("-"):
            key, _, value = body.partition(":")
            in_deps, pip_indent = key.strip() == "dependencies", -1
            value = _yaml_scalar(value)
            if in_deps and value.startswith("[") and value.endswith("]"):
                for item in value[1:-1].split(","):
                    if item.strip():
                        out.hits += _conda_hits(
                            _yaml_scalar(item), file=file, line=no, evidence=raw
                        )
            continue
        if not in_deps or not body.startswith("-"):
            continue
        item = _yaml_scalar(body[1:])
        if item.startswith(("&", "*", "{", "|", ">", "!")):
            out.notes.append(f"{file}:{no}: YAML construct not supported by the reader; skipped")
            continue
        if pip_indent >= 0 and indent > pip_indent:
            out.hits += requirement_hits(item, file=file, line=no, evidence=raw)
            continue
        pip_indent = -1
        if item.rstrip(":").strip() == "pip" and item.endswith(":"):
            pip_indent = indent
            continue
        if item.startswith("pip:"):  # "- pip: [a, b]"
            flow = item[4:].strip()
            for spec in flow.strip("[]").split(","):
                if spec.strip():
                    out.hits += requirement_hits(
                        _yaml_scalar(spec), file=file, line=no, evidence=raw
                    )
            continue
        out.hits += _conda_hits(item, file=file, line=no, evidence=raw)
    return out


def parse_dockerfile(file: str, text: str) -> Parsed:
    """A Dockerfile: vendor base images, framework extras and wheel index URLs."""
    out = Parsed(hits=url_pin_hits(file, text))
    for no, ln in enumerate(text.splitlines(), 1):
        for rx, sig in _DOCKER_PINS:
            m = rx.search(ln)
            if m:
                out.hits.append(
                    Hit(
                        kind="signal",
                        name=sig,
                        file=file,
                        line=no,
                        evidence=excerpt(ln),
                        detail=m.group(0).strip(),
                    )
                )
    return out

"""An offline API docs page, generated from the OpenAPI schema.

FastAPI's Swagger UI loads its script and style from a CDN, so it renders nothing on a
machine without internet. This page is plain HTML (no script, no external link): each
endpoint with its summary, its request fields (type, default, description) and its
responses, plus a link to the full schema at ``/api/openapi.json``.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

_STYLE = (
    "body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
    "code,pre{font-family:ui-monospace,monospace}h2{margin-top:2rem}"
    "table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;"
    "padding:.25rem .5rem;text-align:left;vertical-align:top}.method{font-weight:bold}"
)


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _type(prop: dict[str, Any]) -> str:
    """A short type: ``string``, ``integer``, ``'a' | 'b'``, ``array of string``, a model."""
    if "$ref" in prop:
        return _ref_name(prop["$ref"])
    if "enum" in prop:
        return " | ".join(repr(v) for v in prop["enum"])
    if "const" in prop:
        return repr(prop["const"])
    if "anyOf" in prop:
        return " | ".join(_type(p) for p in prop["anyOf"])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"array of {_type(prop.get('items', {}))}"
    return str(kind)


def _fields(schema: dict[str, Any], components: dict[str, Any]) -> str:
    """A table of a request body's fields (its properties), or '' when it has none."""
    if "$ref" in schema:
        schema = components.get(_ref_name(schema["$ref"]), {})
    props: dict[str, Any] = schema.get("properties", {})
    if not props:
        return ""
    required = set(schema.get("required", ()))
    rows = []
    for name, prop in props.items():
        default = "required" if name in required else escape(json.dumps(prop.get("default")))
        rows.append(
            f"<tr><td><code>{escape(name)}</code></td><td>{escape(_type(prop))}</td>"
            f"<td>{default}</td><td>{escape(prop.get('description', ''))}</td></tr>"
        )
    return (
        "<table><tr><th>field</th><th>type</th><th>default</th><th>what</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _returns(response: dict[str, Any]) -> str:
    """`` (ChipsResponse)``: the model a response holds, when it names one."""
    for content in response.get("content", {}).values():
        ref = content.get("schema", {}).get("$ref")
        if ref:
            return f" (<code>{escape(_ref_name(ref))}</code>)"
    return ""


def _operation(method: str, path: str, op: dict[str, Any], components: dict[str, Any]) -> str:
    parts = [
        f'<h3 id="{escape(method)}-{escape(path)}"><span class="method">{method.upper()}</span> '
        f"<code>{escape(path)}</code></h3>"
    ]
    text = op.get("description") or op.get("summary") or ""
    if text:
        parts.append(f"<p>{escape(text)}</p>")
    body = op.get("requestBody", {}).get("content", {})
    for media, content in body.items():
        parts.append(f"<p>Body: <code>{escape(media)}</code></p>")
        parts.append(_fields(content.get("schema", {}), components))
    responses = op.get("responses", {})
    if responses:
        items = "".join(
            f"<li><code>{escape(str(code))}</code> {escape(r.get('description', ''))}"
            f"{_returns(r)}</li>"
            for code, r in responses.items()
        )
        parts.append(f"<p>Responses:</p><ul>{items}</ul>")
    return "\n".join(parts)


def docs_page(schema: dict[str, Any], schema_url: str = "/api/openapi.json") -> str:
    """The HTML page for ``schema`` (an OpenAPI document as FastAPI builds it)."""
    info = schema.get("info", {})
    components = schema.get("components", {}).get("schemas", {})
    title = f"{info.get('title', 'API')} {info.get('version', '')}".strip()
    index, sections = [], []
    for path, methods in schema.get("paths", {}).items():
        for method, op in methods.items():
            anchor = f"{method}-{path}"
            index.append(
                f'<li><a href="#{escape(anchor)}"><span class="method">{method.upper()}</span> '
                f"<code>{escape(path)}</code></a> {escape(op.get('summary', ''))}</li>"
            )
            sections.append(_operation(method, path, op, components))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}: API</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f"<h1>{escape(title)}: JSON API</h1>\n"
        f"<p>{escape(info.get('description', ''))}</p>\n"
        f'<p>The full schema: <a href="{escape(schema_url)}">{escape(schema_url)}</a> '
        '(OpenAPI 3). Errors are <code>{"error": "..."}</code>. '
        '<a href="/">Back to the page</a>.</p>\n'
        f"<h2>Endpoints</h2>\n<ul>{''.join(index)}</ul>\n"
        + "\n".join(sections)
        + "\n</body>\n</html>\n"
    )

"""The MCP tools as data: which operation of the HTTP API each tool is, read from its
OpenAPI document (names, arguments, defaults, bounds and descriptions). Every tool is a
GET but ``impact``, a POST whose JSON body's fields are the tool's arguments (a diff
does not fit a query string)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp.types import Tool, ToolAnnotations

TOOLS: Mapping[str, str] = {
    "health": "/health",
    "repositories": "/repositories",
    "repository": "/repositories/{repo}",
    "freshness": "/repositories/{repo}/freshness",
    "files": "/repositories/{repo}/files",
    "file_detail": "/repositories/{repo}/files/{path}",
    "symbols": "/repositories/{repo}/symbols",
    "search": "/repositories/{repo}/search",
    "search_all": "/search",
    "context": "/repositories/{repo}/context",
    "context_all": "/context",
    "graph_search": "/repositories/{repo}/graph-search",
    "graph_search_all": "/graph-search",
    "definition": "/repositories/{repo}/definition",
    "references": "/repositories/{repo}/references",
    "callers": "/repositories/{repo}/callers",
    "callees": "/repositories/{repo}/callees",
    "shortest_path": "/repositories/{repo}/path",
    "neighbors": "/repositories/{repo}/neighbors",
    "ranking": "/repositories/{repo}/ranking",
    "session_start": "/repositories/{repo}/session-start",
    "session_start_all": "/session-start",
    "neighborhoods": "/repositories/{repo}/neighborhoods",
    "neighborhood": "/repositories/{repo}/neighborhoods/{nid}",
    "neighborhood_of": "/repositories/{repo}/neighborhood-of",
    "neighborhood_changes": "/repositories/{repo}/neighborhood-changes",
    "hubs": "/repositories/{repo}/hubs",
    "importance": "/repositories/{repo}/importance",
    "folders": "/repositories/{repo}/folders",
    "files_by_level": "/repositories/{repo}/files-by-level",
    "overview": "/repositories/{repo}/overview",
    "churn": "/repositories/{repo}/churn",
    "churn_entry": "/repositories/{repo}/churn/{entry_id}",
    "structural_diff": "/repositories/{repo}/diff",
    "impact": "/repositories/{repo}/impact",
    "dead_letters": "/dead-letters",
}
"""Tool name -> the operation it is (its GET, else its POST); the names are the
endpoints' (``repository`` for ``one_repository``)."""

UNDOCUMENTED: Mapping[str, str] = {
    "health": "Whether the read side has caught up with the topics as of start.",
    "repositories": "Each indexed repository with its counts and freshness.",
    "repository": "One repository: name, branch, counts, dead letters and freshness.",
    "freshness": "How far to trust a repository's index: status, lag, pending events.",
    "files": "A repository's files, filtered and paged, with the true total.",
    "file_detail": "One file: language, size, lines, symbols with line ranges, imports, "
    "what it depends on and what imports it.",
    "symbols": "A file's symbols with their line ranges.",
    "dead_letters": "The most recent dead letters and their total.",
}
"""For the endpoints without a docstring (the README's words); a docstring wins."""
PATH_ARGUMENTS: Mapping[str, str] = {
    "repo": "a repository id, as `repositories` lists them",
    "path": "a file's path in the repository",
    "nid": "a neighborhood id, as `neighborhoods` lists them (ids survive reclustering)",
}

COMMON_ARGUMENTS: Mapping[str, str] = {
    "offset": "how many items of the listing to skip (paging; `total` says how many there are)",
    "limit": "how many items to return at most",
    "language": "only files of this language: python, javascript, typescript, tsx, go, java, rust",
    "max_hops": "the longest path to look for, in edges",
    "min_size": "only neighborhoods of at least this many files",
}
"""The descriptions of the paging and filter arguments the routes share, where the
route itself gives none: every argument of a tool is described."""

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


@dataclass(frozen=True, slots=True)
class Operation:
    """One tool: the request it makes and the arguments it takes (in the path, the
    query string, or the JSON body of a POST)."""

    tool: str
    path: str
    path_params: tuple[str, ...]
    query_params: tuple[str, ...]
    description: str
    input_schema: Mapping[str, Any]
    method: str = "GET"
    body_params: tuple[str, ...] = ()

    @property
    def params(self) -> tuple[str, ...]:
        return (*self.path_params, *self.query_params, *self.body_params)

    def as_tool(self) -> Tool:
        return Tool(
            name=self.tool,
            description=self.description,
            input_schema=dict(self.input_schema),
            annotations=READ_ONLY,
        )


def operations(openapi: Mapping[str, Any]) -> list[Operation]:
    """The tools, read from the API's OpenAPI document (``FastAPI.openapi()``)."""
    found = []
    for tool, path in TOOLS.items():
        item = openapi["paths"].get(path, {})
        method = "get" if "get" in item else "post"
        op = item.get(method)
        if op is None:
            raise LookupError(f"the HTTP API has no GET or POST {path} for the tool {tool!r}")
        params = [p for p in op.get("parameters", ()) if p["in"] in ("path", "query")]
        properties = {p["name"]: argument_schema(p) for p in params}
        required = [p["name"] for p in params if p.get("required")]
        body = body_schema(openapi, op)
        for name, schema in body.get("properties", {}).items():
            properties[name] = {k: v for k, v in schema.items() if k != "title"}
        required += body.get("required", [])
        found.append(
            Operation(
                tool=tool,
                path=path,
                path_params=tuple(p["name"] for p in params if p["in"] == "path"),
                query_params=tuple(p["name"] for p in params if p["in"] == "query"),
                description=op.get("description") or UNDOCUMENTED.get(tool) or op["summary"],
                input_schema={
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": False,
                },
                method=method.upper(),
                body_params=tuple(body.get("properties", {})),
            )
        )
    return found


def body_schema(openapi: Mapping[str, Any], op: Mapping[str, Any]) -> Mapping[str, Any]:
    """The JSON body's schema of an operation (its ``$ref`` followed), {} without one."""
    schema = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if schema is None:
        return {}
    ref = schema.get("$ref", "")
    if ref.startswith("#/components/schemas/"):
        found: Mapping[str, Any] = openapi["components"]["schemas"][ref.rsplit("/", 1)[1]]
        return found
    return schema  # type: ignore[no-any-return]


def argument_schema(parameter: Mapping[str, Any]) -> dict[str, Any]:
    schema = {k: v for k, v in parameter["schema"].items() if k != "title"}
    name = parameter["name"]
    description = (
        parameter.get("description") or PATH_ARGUMENTS.get(name) or COMMON_ARGUMENTS.get(name)
    )
    if description:
        schema["description"] = description
    return schema

"""A remote MCP server made with FastMCP, over Streamable HTTP on the port given, for toolgate's federation tests."""

import sys

from fastmcp import FastMCP
from fastmcp.server.dependencies import get_http_headers

server = FastMCP("calc")


@server.tool(annotations={"readOnlyHint": True})
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Returns the text in capitals."""
    return text.upper()


@server.tool(annotations={"readOnlyHint": True})
def whoami() -> str:
    """Returns the bearer token this call carried: a server that checks each caller's rights reads it."""
    authorization = get_http_headers(include_all=True).get("authorization", "")
    return authorization.removeprefix("Bearer ") or "nobody"


if __name__ == "__main__":
    server.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False)

"""A remote MCP server made with the official Python SDK (`mcp`), over stdio, for toolgate's federation tests."""

import asyncio
import base64
import os

import mcp_types
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("facts")
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), meta={"io.toolgate/capability": "facts"})
def lookup(topic: str) -> str:
    """Returns a fact about a topic."""
    return f"{topic} is older than it looks."


@server.tool()
def dot() -> Image:
    """Returns a one-pixel PNG."""
    return Image(data=PNG, format="png")


@server.tool()
def refuse(reason: str) -> str:
    """Always fails, with the reason given."""
    raise ToolError(reason)


@server.tool()
def crash() -> str:
    """Exits the whole server in the middle of the call."""
    os._exit(3)


@server.tool()
async def hang(marker: str = "") -> str:
    """Never answers; writes `cancelled` to the file `marker` when the call is cancelled."""
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        if marker:
            with open(marker, "w") as file:
                file.write("cancelled")
        raise
    return "late"


@server.tool()
async def greet(ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Asks the person for their name (an MRTR round), then greets them."""
    answer = (ctx.input_responses or {}).get("name")
    if answer is None or ctx.request_state != "asked-for-name":
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        ask = mcp_types.ElicitRequest(
            method="elicitation/create",
            params=mcp_types.ElicitRequestFormParams(message="What is your name?", requested_schema=schema),
        )
        return mcp_types.InputRequiredResult(input_requests={"name": ask}, request_state="asked-for-name")
    content = answer.content if hasattr(answer, "content") else answer["content"]
    return f"Hello, {content['name']}!"


if __name__ == "__main__":
    server.run("stdio")

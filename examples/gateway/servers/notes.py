"""Notes, kept in memory by a server made with the official Python SDK (`mcp`): the gateway example's
remote server with a write. Over stdio."""

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("notes")
notes: list[str] = []


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def list_notes() -> str:
    """Lists the notes, oldest first."""
    return "\n".join(f"{i + 1}. {note}" for i, note in enumerate(notes)) or "No notes yet."


@server.tool()
def add_note(text: str) -> str:
    """Adds a note."""
    notes.append(text)
    return f"Note {len(notes)} added."


@server.tool()
def clear_notes() -> str:
    """Deletes every note."""
    notes.clear()
    return "Cleared."


if __name__ == "__main__":
    server.run("stdio")

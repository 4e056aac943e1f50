"""A remote MCP server made with FastMCP that signs its clients in with OAuth: its JWT verifier checks
the access tokens of the authorization server given (against its published keys, for this server's
URL), its protected resource metadata names that server, and one tool needs a scope more than the
others (FastMCP lists it only to tokens that have it). Over Streamable HTTP on the port given.

Usage: python fastmcp_jwt.py <port> <issuer>
"""

import sys

from fastmcp import FastMCP
from fastmcp.server.auth import RemoteAuthProvider, require_scopes
from fastmcp.server.auth.providers.jwt import JWTVerifier

port, issuer = int(sys.argv[1]), sys.argv[2]
base = f"http://127.0.0.1:{port}"
verifier = JWTVerifier(
    jwks_uri=f"{issuer}/jwks",
    issuer=issuer,
    audience=f"{base}/mcp",
    required_scopes=["orders:read"],
)
auth = RemoteAuthProvider(
    token_verifier=verifier,
    authorization_servers=[issuer],
    base_url=base,
    scopes_supported=["orders:read", "orders:write"],
)
server = FastMCP("calc", auth=auth)


@server.tool(annotations={"readOnlyHint": True})
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool(auth=require_scopes("orders:write"))
def shout(text: str) -> str:
    """Returns the text in capitals; needs `orders:write`."""
    return text.upper()


if __name__ == "__main__":
    server.run(transport="http", host="127.0.0.1", port=port, show_banner=False)

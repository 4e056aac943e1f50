"""Lists a server's tools with the official Python `mcp` SDK, every page, and prints their names.

Usage: list_tools.py URL TOKEN. Exits non-zero, with the SDK's error, when the listing cannot be read.
"""

import asyncio
import sys

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def run(url, token):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        names, cursor = [], None
        while True:
            page = await client.list_tools(cursor=cursor) if cursor else await client.list_tools()
            names.extend(tool.name for tool in page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        print("\n".join(names))


asyncio.run(run(sys.argv[1], sys.argv[2]))

"""Calls a REST API's tools, converted by toolgate from its OpenAPI document, with the official Python `mcp`
SDK over Streamable HTTP: Rita and Bob each as themselves (their tokens reach the API through toolgate),
and Rita's write approved by her, through the elicitation the SDK answers.

Usage: python_client.py URL
Prints one line per check and "N passed, M failed"; exits non-zero when a check fails.
"""

import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "shop", "tests", "clients"))

from mcp import Client, types  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

from checks import check, finish  # noqa: E402


def target(url, token):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return streamable_http_client(url, http_client=http)


def items(result):
    return [order["item"] for order in (result.structured_content or {}).get("orders", [])]


async def main(url):
    seen = []

    async def approve(context, params):
        seen.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    async with Client(target(url, "rita-token"), elicitation_callback=approve) as rita:
        names = [tool.name for tool in (await rita.list_tools()).tools]
        check("the API's operations are listed as tools", "orders_list_orders" in names and "orders_place_order" in names, names)
        mine = await rita.call_tool("orders_list_orders", {})
        check("Rita sees her orders", items(mine) == ["tea"], mine)
        placed = await rita.call_tool("orders_place_order", {"body": {"item": "pie", "quantity": 1}})
        check("her approved write ran", not placed.is_error and placed.structured_content["item"] == "pie", placed)
        check("she read what it would do", seen and seen[0].startswith("Place an order: POST "), seen)
        check("it ran once", items(await rita.call_tool("orders_list_orders", {})) == ["tea", "pie"])
    async with Client(target(url, "bob-token")) as bob:
        theirs = await bob.call_tool("orders_list_orders", {})
        check("Bob sees his, not Rita's", items(theirs) == ["coffee"], theirs)
    finish()


asyncio.run(main(sys.argv[1]))

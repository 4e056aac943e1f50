"""A sub-agent with a delegated token, driven by the official Python `mcp` SDK against example-shop over HTTP.

Usage: python_delegation.py URL   (the shop's MCP endpoint, e.g. http://127.0.0.1:PORT/mcp)
The manager asks /delegations for a narrowed token; the sub-agent uses it as its bearer token.
Prints one line per check and "N passed, M failed"; exits non-zero when a check fails.
"""

import asyncio
import sys

from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from checks import check, finish, text_of


async def delegate(base, bearer, asked):
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {bearer}"}) as http:
        response = await http.post(f"{base}/delegations", json=asked)
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, response.text


def client(url, token):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(url, http_client=http), mode="legacy")


async def refusal(url, token):
    """The status and body of an MCP request with `token` as its bearer token."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    async with create_mcp_http_client(headers=headers) as http:
        response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        return response.status_code, response.text


async def run(url):
    # ANCHOR: http
    base = url.rsplit("/", 1)[0]
    asked = {"to": "researcher", "abilities": ["orders.view", "orders.refund"], "max_calls": 5, "expires_in_secs": 300}
    status, granted = await delegate(base, "manager-token", asked)
    check("the manager gets a token that holds what was asked and the manager holds",
          status == 201 and granted["abilities"] == ["orders.view"] and granted["on_behalf_of"] == ["max@shop.example"],
          (status, granted))
    token = granted["token"]

    async with client(url, token) as sub_agent:
        names = [tool.name for tool in (await sub_agent.list_tools()).tools]
        check("the sub-agent is listed reads only", "search_orders" in names and "confirm_order" not in names, names)
        # ANCHOR_END: http
        found = await sub_agent.call_tool("search_orders", {"query": "Lovelace", "limit": 1})
        check("it runs a read", not found.is_error and found.structured_content["total"] == 5, found)
        try:
            write = await sub_agent.call_tool("confirm_order", {"number": "RO-00003"})
            check("a write it was not handed is unknown to it", False, write)
        except MCPError as error:
            check("a write it was not handed is unknown to it", error.message.startswith("Unknown tool `confirm_order`"), error)
        runs = [await sub_agent.call_tool("order_details", {"number": "RO-00001"}) for _ in range(5)]
        check("its fifth call after the first is over its ceiling of five",
              [r.is_error for r in runs] == [False, False, False, False, True]
              and "allows 5 calls" in text_of(runs[-1]), [text_of(r) for r in runs])

    status, onward = await delegate(base, token, {"to": "fetcher", "abilities": ["orders.view"], "expires_in_secs": 60})
    check("a sub-agent hands on less again, and the chain is kept",
          status == 201 and onward["on_behalf_of"] == ["researcher", "max@shop.example"], (status, onward))

    tampered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    status, why = await refusal(url, tampered)
    check("a tampered token is turned away", status == 401 and "altered, forged" in why, (status, why))
    status, brief = await delegate(base, "viewer-token", {"to": "blink", "abilities": ["orders.view"], "expires_in_secs": 1})
    await asyncio.sleep(1.5)
    status, why = await refusal(url, brief["token"])
    check("an expired token is turned away", status == 401 and "expired" in why, (status, why))
    status, _ = await delegate(base, "no-such-token", asked)
    check("only an authenticated caller may delegate", status == 401, status)
    status, body = await delegate(base, "manager-token", {"to": "x", "expires_in_secs": 999999})
    check("a token may live a day at most", status == 400 and "expires_in_secs" in body["error"]["message"], body)


def main():
    asyncio.run(run(sys.argv[1]))
    finish()


if __name__ == "__main__":
    main()

"""Drives the shop's write confirmations with the official Python `mcp` SDK, as a manager.

Usage: python_writes.py MODE URL_A URL_B   (MODE: auto or legacy; two shop processes sharing one database)

auto drives MRTR (InputRequiredResult and a sealed requestState); legacy gets elicitation/create during the
call. Both: approve runs the write once, decline runs nothing, a client without elicitation gets the preview
and the confirmation to send back in _meta. auto also: a tampered requestState is refused, and a confirmation
issued by one process is accepted by the other and never runs twice.
Prints one line per check and "N passed, M failed"; exits non-zero when a check fails.
"""

import asyncio
import sys

from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from checks import check, finish, text_of

CONFIRMATION = "io.toolgate/confirmation"


def target(url):
    http = create_mcp_http_client(headers={"Authorization": "Bearer manager-token"})
    return streamable_http_client(url, http_client=http)


def answering(approve, seen):
    async def elicit(context, params):
        seen.append(params.message)
        if approve:
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")
    return elicit


async def status(client, number):
    details = await client.call_tool("order_details", {"number": number})
    return details.structured_content["status"]


# ANCHOR: approve
async def approve_and_decline(mode, url, orders):
    approve, decline, plain = orders
    seen = []
    async with Client(target(url), mode=mode, elicitation_callback=answering(True, seen)) as client:
        done = await client.call_tool("confirm_order", {"number": approve})
        check("an approved write runs", not done.is_error and done.structured_content["status"] == "confirmed", done)
        check("the person saw the preview", seen and seen[0].startswith(f"Confirm order {approve} for "), seen)
    async with Client(target(url), mode=mode, elicitation_callback=answering(False, seen)) as client:
        declined = await client.call_tool("confirm_order", {"number": decline})
        check("a declined write says so", "declined" in text_of(declined), declined)
        check("a declined write changes nothing", await status(client, decline) == "pending")
# ANCHOR_END: approve
    async with Client(target(url), mode=mode) as client:
        preview = await client.call_tool("confirm_order", {"number": plain})
        token = (preview.meta or {}).get(CONFIRMATION)
        check("without elicitation: the preview and its confirmation", preview.is_error and token, preview)
        check("the preview changed nothing", await status(client, plain) == "pending")
        done = await client.call_tool("confirm_order", {"number": plain}, meta={CONFIRMATION: token})
        check("the confirmation sent back in _meta runs it", not done.is_error, done)
        again = await client.call_tool("confirm_order", {"number": plain}, meta={CONFIRMATION: token})
        check("a retry returns the first result", text_of(again) == text_of(done), again)
        other = await client.call_tool("confirm_order", {"number": "RO-00030"}, meta={CONFIRMATION: token})
        check("changed arguments are refused", other.is_error and "arguments differ" in text_of(other), other)


async def across_processes(url_a, url_b):
    approve = {"approval": {"action": "accept", "content": {"approve": True}}}
    # The callback declares elicitation; the rounds are driven by hand, so it is never called.
    declares = answering(True, [])
    async with Client(target(url_a), elicitation_callback=declares) as a, \
            Client(target(url_b), elicitation_callback=declares) as b:
        args = {"number": "RO-00027"}
        first = await a.session.call_tool("confirm_order", args, allow_input_required=True)
        check("a 2026 client gets an InputRequiredResult", isinstance(first, types.InputRequiredResult), first)
        state = first.request_state
        tampered = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
        try:
            await b.session.call_tool("confirm_order", args, input_responses=approve, request_state=tampered)
            check("a tampered requestState is refused", False, "it was accepted")
        except Exception as error:  # noqa: BLE001 - the SDK raises MCPError for a JSON-RPC error
            check("a tampered requestState is refused", "not valid" in str(error), error)
        check("nothing ran", await status(b, "RO-00027") == "pending")
        done = await b.session.call_tool("confirm_order", args, input_responses=approve, request_state=state)
        check("process B runs what process A previewed", not done.is_error, done)
        replay = await a.session.call_tool("confirm_order", args, input_responses=approve, request_state=state)
        check("a replay on process A returns B's result", text_of(replay) == text_of(done), replay)
        check("the order was confirmed once", await status(a, "RO-00027") == "confirmed")


def main():
    mode, url_a, url_b = sys.argv[1:]
    orders = ("RO-00006", "RO-00009", "RO-00012") if mode == "auto" else ("RO-00015", "RO-00018", "RO-00021")
    asyncio.run(approve_and_decline(mode, url_a, orders))
    if mode == "auto":
        asyncio.run(across_processes(url_a, url_b))
    finish()


if __name__ == "__main__":
    main()

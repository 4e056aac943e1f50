"""Drives three shop replicas behind nginx with the official Python `mcp` SDK (see tests/replicas.rs).

Usage: python_replicas.py PROXY_URL URL_A URL_B URL_C

Calls go through nginx unless a check needs one replica in particular; then they go to that replica's own
port. nginx names the replica that answered in X-Toolgate-Replica. Halfway through a write, the script
prints "kill replica A" and waits for "killed" on its standard input.
Prints one line per check and "N passed, M failed"; exits non-zero when a check fails.
"""

import asyncio
import sys
import time

from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from checks import check, finish, text_of

CONFIRMATION = "io.toolgate/confirmation"
APPROVE = {"approval": {"action": "accept", "content": {"approve": True}}}
DECLINE = {"approval": {"action": "decline"}}
ADMIN = {"Authorization": "Bearer admin-token"}
# The hold of an approved run: the replicas' default_timeout_secs (deploy/replica.toml) and HOLD_MARGIN.
HOLD_SECS = 5 + 5


class Replicas:
    def __init__(self, proxy, a, b, c):
        self.proxy, self.a, self.b, self.c = proxy, a, b, c
        self.served_by = []

    def client(self, url, token="manager-token"):
        """A client of `url`; through nginx, it notes which replica answered each request."""
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})

        async def note(response):
            replica = response.headers.get("x-toolgate-replica")
            if replica:
                self.served_by.append(replica)

        http.event_hooks["response"].append(note)
        # The callback declares elicitation; the rounds are driven by hand, so it is never called.
        return Client(streamable_http_client(url, http_client=http), elicitation_callback=refuse)


async def refuse(context, params):
    return types.ElicitResult(action="decline")


async def status(client, number):
    details = await client.call_tool("order_details", {"number": number})
    return details.structured_content["status"]


async def previewed(client, tool, args):
    """The sealed requestState of a write's preview."""
    first = await client.session.call_tool(tool, args, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult), first
    return first.request_state


async def answered(client, tool, args, state, answer=APPROVE):
    """The write's result, or the text of the JSON-RPC error that refused the answer."""
    try:
        result = await client.session.call_tool(tool, args, input_responses=answer, request_state=state)
        return text_of(result), result.is_error
    except Exception as error:  # noqa: BLE001 - the SDK raises MCPError for a JSON-RPC error
        return str(error), True


# ANCHOR: across
async def previewed_on_one_approved_on_another(r):
    args = {"number": "RO-00003"}
    async with r.client(r.a) as a, r.client(r.b) as b, r.client(r.c) as c, r.client(r.proxy) as proxy:
        state = await previewed(a, "confirm_order", args)
        done, failed = await answered(b, "confirm_order", args, state)
        check("a write previewed on A runs when approved on B", not failed and "confirmed" in done, done)
        for name, replica in [("A", a), ("C", c), ("nginx", proxy)]:
            again, _ = await answered(replica, "confirm_order", args, state)
            check(f"the replay on {name} runs nothing and returns B's result", again == done, again)
        check("the order was confirmed once", await status(proxy, "RO-00003") == "confirmed")
# ANCHOR_END: across


async def declined_stays_declined_everywhere(r):
    args = {"number": "RO-00006"}
    async with r.client(r.a) as a, r.client(r.b) as b, r.client(r.c) as c:
        state = await previewed(a, "confirm_order", args)
        declined, _ = await answered(b, "confirm_order", args, state, DECLINE)
        check("a write declined on B says so", "declined" in declined, declined)
        for name, replica in [("A", a), ("B", b), ("C", c)]:
            replay, failed = await answered(replica, "confirm_order", args, state)
            check(f"its approval replayed on {name} is refused", failed and "declined" in replay, replay)
        tampered = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
        forged, failed = await answered(c, "confirm_order", args, tampered)
        check("a tampered requestState is refused", failed and "not valid" in forged, forged)
        check("nothing ran", await status(c, "RO-00006") == "pending")


async def a_ceiling_holds_across_replicas(r):
    r.served_by.clear()
    async with r.client(r.proxy, "viewer-token") as viewer:
        runs = [await viewer.call_tool("export_orders", {}) for _ in range(4)]
    ran = [not run.is_error for run in runs]
    check("export_orders runs 3 times through nginx", ran == [True, True, True, False], [text_of(x) for x in runs])
    check("and the 4th is refused for its limit", "at most 3 times" in text_of(runs[3]), text_of(runs[3]))
    check("the runs were counted on more than one replica", len(set(r.served_by)) >= 2, r.served_by)


async def concurrent_approvals_write_once(r):
    args = {"number": "RO-00009"}
    async with r.client(r.proxy) as proxy, r.client(r.a) as a, r.client(r.b) as b, r.client(r.c) as c:
        state = await previewed(proxy, "confirm_order", args)
        answers = await asyncio.gather(*(answered(x, "confirm_order", args, state) for x in (a, b, c)))
        done = [text for text, failed in answers if not failed]
        busy = [text for text, failed in answers if failed]
        check("of three approvals at once on A, B and C, one runs it", done and len(set(done)) == 1, answers)
        check("the others get its result or are told it is running", all("already used" in t for t in busy), busy)
        check("the order was confirmed once", await status(proxy, "RO-00009") == "confirmed")


async def admin(url, method, path, body=None):
    async with create_mcp_http_client(headers=ADMIN) as http:
        response = await http.request(method, url.removesuffix("/mcp") + path, json=body)
        return response.status_code, response.json()


async def edit(url, tool, change):
    _, record = await admin(url, "GET", f"/admin/tools/{tool}")
    body = {"version": record["version"], "change": change}
    return await admin(url, "POST", f"/admin/tools/{tool}/edit", body)


async def a_tool_disabled_on_one_vanishes_from_all(r):
    code, _ = await edit(r.a, "export_orders", {"change": "disable"})
    check("the admin API of replica A disables export_orders", code == 200, code)
    started = time.monotonic()
    clients = [r.client(url) for url in (r.a, r.b, r.c)]
    listed = {}
    async with clients[0] as a, clients[1] as b, clients[2] as c:
        while time.monotonic() - started < 30:
            for name, replica in [("A", a), ("B", b), ("C", c)]:
                names = [tool.name for tool in (await replica.list_tools()).tools]
                listed[name] = "export_orders" in names
            if not any(listed.values()):
                break
            await asyncio.sleep(0.01)
    elapsed = time.monotonic() - started
    check("export_orders vanished from the listings of all three", not any(listed.values()), listed)
    print(f"     (gone from all three {elapsed * 1000:.0f} ms after the edit returned)", flush=True)
    code, _ = await edit(r.b, "export_orders", {"change": "enable"})
    check("and B's admin API switches it back on", code == 200, code)


async def a_key_rotated_on_one_reaches_all_before_it_seals(r):
    old_args, new_args = {"number": "RO-00012"}, {"number": "RO-00015"}
    async with r.client(r.a) as a, r.client(r.b) as b, r.client(r.c) as c:
        sealed_before = await previewed(a, "confirm_order", old_args)
        code, rotated = await admin(r.c, "POST", "/admin/keys/rotate", {"after_ms": 2000})
        check("replica C's admin API adds a key that seals in 2 s", code == 200, rotated)
        _, keys = await admin(r.b, "GET", "/admin/keys")
        new = next((k for k in keys if k["id"] == rotated["id"]), None)
        check("it is in the shared ring at once, not sealing yet", new and not new["sealing"], keys)
        await asyncio.sleep(2.5)
        sealed_after = await previewed(b, "confirm_order", new_args)
        _, keys = await admin(r.a, "GET", "/admin/keys")
        check("then it seals", any(k["id"] == rotated["id"] and k["sealing"] for k in keys), keys)
        done, failed = await answered(c, "confirm_order", old_args, sealed_before)
        check("a preview sealed with the old key is approved on C", not failed, done)
        done, failed = await answered(a, "confirm_order", new_args, sealed_after)
        check("a preview sealed with the new key is approved on A", not failed, done)


async def a_replica_killed_mid_write_loses_nothing(r):
    code, _ = await edit(r.b, "ship_order", {"change": "settings", "value": {"booking_ms": 3000}})
    check("booking a parcel takes 3 s from now on", code == 200, code)
    await asyncio.sleep(0.5)  # the setting reaches every replica (LISTEN/NOTIFY)
    args = {"number": "RO-00001", "carrier": "UPS"}
    async with r.client(r.a) as a:
        state = await previewed(a, "ship_order", args)

    async def approve_on_a():
        try:
            async with r.client(r.a) as a:
                return await answered(a, "ship_order", args, state)
        except Exception as error:  # noqa: BLE001 - the client's connection dies with the replica
            return str(error), True

    approving = asyncio.create_task(approve_on_a())
    await asyncio.sleep(1)  # A has taken the approval and is booking the parcel
    approved_at = time.monotonic() - 1
    print("kill replica A", flush=True)
    answer = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    check("replica A was killed mid-write", answer.strip() == "killed", answer)
    cut, failed = await approving
    check("the approval on A got no answer", failed and "ship" not in cut, cut)
    async with r.client(r.b) as b, r.client(r.proxy) as proxy:
        check("no half-done write: the order is not shipped", await status(proxy, "RO-00001") == "confirmed")
        early, failed = await answered(b, "ship_order", args, state)
        check("while A's run holds the approval, B will not run it", failed and "already used" in early, early)
        await asyncio.sleep(max(0, approved_at + HOLD_SECS - time.monotonic()))
        done, failed = early, True
        # The hold ends HOLD_SECS after A took the approval, which was a moment after the request left.
        while failed and "already used" in done and time.monotonic() < approved_at + HOLD_SECS + 30:
            await asyncio.sleep(0.25)
            done, failed = await answered(b, "ship_order", args, state)
        check("after the hold, B runs the approval A lost", not failed and "shipped" in done, done)
        again, _ = await answered(proxy, "ship_order", args, state)
        check("a replay through nginx returns that result", again == done, again)
        details = await proxy.call_tool("order_details", {"number": "RO-00001"})
        shipped = details.structured_content
        check("the order was shipped once, with UPS", shipped["status"] == "shipped" and shipped["carrier"] == "UPS", shipped)


def main():
    replicas = Replicas(*sys.argv[1:5])
    for step in [
        previewed_on_one_approved_on_another,
        declined_stays_declined_everywhere,
        a_ceiling_holds_across_replicas,
        concurrent_approvals_write_once,
        a_tool_disabled_on_one_vanishes_from_all,
        a_key_rotated_on_one_reaches_all_before_it_seals,
        a_replica_killed_mid_write_loses_nothing,
    ]:
        asyncio.run(step(replicas))
    finish()


if __name__ == "__main__":
    main()

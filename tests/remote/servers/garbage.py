"""A "server" that completes the MCP handshake, lists one tool, then answers its call with garbage."""

import json
import sys


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    method, id = request.get("method"), request.get("id")
    if id is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "garbage", "version": "0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": [
            {"name": "talk", "description": "Talks.", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        sys.stdout.write("}}} this is not JSON-RPC {{{\n")
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id, "result": {"content": "not a list"}}) + "\n")
        sys.stdout.flush()
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": id, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": f"no method {method}"}})

// The official TypeScript SDK's server for toolgate's benchmark: `add(a, b)`, and with `--tools N` as many
// more tools for the listing row. `node typescript.mjs http stateless|stateful N` prints `PORT <n>` and
// serves Streamable HTTP at /mcp on Node's own http module; `node typescript.mjs stdio N` serves stdio.
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const [transport, mode, extra] = process.argv.slice(2);
const tools = Number(extra ?? "0");

function server() {
  const server = new McpServer({ name: "bench", version: "0" });
  server.registerTool(
    "add",
    {
      description: "Add two integers.",
      inputSchema: { a: z.number().int(), b: z.number().int() },
      annotations: { readOnlyHint: true },
    },
    async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
  );
  for (let i = 0; i < tools; i++) {
    server.registerTool(
      `tool_${i}`,
      { description: `Tool number ${i}.`, inputSchema: { query: z.string(), limit: z.number().int().optional() } },
      async () => ({ content: [{ type: "text", text: String(i) }] }),
    );
  }
  return server;
}

function body(request) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined));
    request.on("error", reject);
  });
}

if (transport === "stdio") {
  await server().connect(new StdioServerTransport());
} else {
  const sessions = new Map();
  // Stateless: a server and transport per request, as the SDK's documentation shows. Stateful: one per
  // session, found again by its `mcp-session-id`.
  const handle = async (request, response) => {
    const parsed = request.method === "POST" ? await body(request) : undefined;
    if (mode === "stateless") {
      const served = server();
      const http = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      response.on("close", () => {
        http.close();
        served.close();
      });
      await served.connect(http);
      await http.handleRequest(request, response, parsed);
      return;
    }
    const id = request.headers["mcp-session-id"];
    let http = id && sessions.get(id);
    if (!http) {
      http = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (session) => sessions.set(session, http),
      });
      http.onclose = () => http.sessionId && sessions.delete(http.sessionId);
      await server().connect(http);
    }
    await http.handleRequest(request, response, parsed);
  };
  const listening = createServer((request, response) => {
    handle(request, response).catch((error) => {
      response.statusCode = 500;
      response.end(String(error));
    });
  });
  listening.keepAliveTimeout = 60_000;
  listening.listen(0, "127.0.0.1", () => {
    process.stdout.write(`PORT ${listening.address().port}\n`);
  });
}

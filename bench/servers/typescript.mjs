// The official TypeScript SDK's server for toolgate's benchmark: `add(a, b)`, the shop's `search_orders` on
// the same 30 orders in SQLite (Node's own `node:sqlite`), and N more tools for some rows. `node typescript.mjs http stateless|stateful N` prints `PORT <n>` and
// serves Streamable HTTP at /mcp on Node's own http module; `node typescript.mjs stdio N` serves stdio.
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { DatabaseSync } from "node:sqlite";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const [transport, mode, extra] = process.argv.slice(2);
const tools = Number(extra ?? "0");

// The shop's orders, seeded as `example_shop::Db::open` seeds them.
const db = new DatabaseSync(":memory:");
db.exec(`CREATE TABLE orders (number TEXT PRIMARY KEY, customer TEXT NOT NULL, status TEXT NOT NULL,
  total_cents INTEGER NOT NULL, carrier TEXT, placed_on TEXT NOT NULL DEFAULT '2026-11-30')`);
const customers = ["Ada Lovelace", "Grace Hopper", "Alan Turing", "Katherine Johnson", "Edsger Dijkstra", "Barbara Liskov"];
const insert = db.prepare("INSERT INTO orders (number, customer, status, total_cents, carrier) VALUES (?, ?, ?, ?, ?)");
for (let i = 1; i <= 30; i++) {
  const status = ["pending", "confirmed", "shipped"][i % 3];
  insert.run(`RO-${String(i).padStart(5, "0")}`, customers[i % 6], status, 1900 + ((i * 7919) % 20000), status === "shipped" ? "DHL" : null);
}

// Prepared once, as the Rust shop's connection caches its statements.
const filter = "FROM orders WHERE (number LIKE ?1 OR customer LIKE ?1) AND (?2 IS NULL OR status = ?2)";
const count = db.prepare(`SELECT COUNT(*) AS total ${filter}`);
const search = db.prepare(`SELECT * ${filter} ORDER BY number DESC LIMIT ?3`);

function searchOrders({ query, status, limit }) {
  const pattern = `%${query ?? ""}%`;
  const { total } = count.get(pattern, status ?? null);
  const rows = search
    .all(pattern, status ?? null, Math.min(Math.max(limit ?? 20, 1), 50))
    .map((o) => ({
      url: `https://shop.example/admin/orders/${o.number}`,
      number: o.number,
      customer: o.customer,
      status: o.status,
      total_eur: o.total_cents / 100,
    }));
  const page = { total, rows };
  return { content: [{ type: "text", text: JSON.stringify(page) }], structuredContent: page };
}

const orderRow = z.object({
  url: z.string(),
  number: z.string(),
  customer: z.string(),
  status: z.enum(["pending", "confirmed", "shipped"]),
  total_eur: z.number(),
});

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
  server.registerTool(
    "search_orders",
    {
      description: "Find orders by number or customer. Returns compact rows, each with a url, newest first.",
      inputSchema: {
        query: z.string().max(100).optional(),
        status: z.enum(["pending", "confirmed", "shipped"]).optional(),
        limit: z.number().int().min(1).max(50).optional(),
      },
      outputSchema: { total: z.number().int(), rows: z.array(orderRow) },
      annotations: { readOnlyHint: true },
    },
    async (args) => searchOrders(args),
  );
  for (let i = 0; i < tools; i++) {
    server.registerTool(
      `tool_${i}`,
      {
        description: `Tool number ${i}.`,
        inputSchema: { query: z.string(), limit: z.number().int().optional() },
        // The hints every server lists for these tools (bench/src/servers.rs, `listed_annotations`).
        annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
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

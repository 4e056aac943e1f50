// A remote MCP server made with the official TypeScript SDK, over stdio, for toolgate's federation tests:
// its tools change while it runs, and it says so with `notifications/tools/list_changed`.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "counter", version: "1.0.0" });
let count = 0;
const tools = {};

tools.bump = server.registerTool(
  "bump",
  { description: "Adds one to the counter and returns it.", inputSchema: { by: z.number().int().optional() } },
  async ({ by }) => {
    count += by ?? 1;
    return { content: [{ type: "text", text: `count is ${count}` }] };
  },
);

tools.peek = server.registerTool(
  "peek",
  { description: "Returns the counter.", annotations: { readOnlyHint: true } },
  async () => ({ content: [{ type: "text", text: `count is ${count}` }] }),
);

tools.grow = server.registerTool(
  "grow",
  { description: "Adds a tool named `extra`.", inputSchema: {} },
  async () => {
    tools.extra = server.registerTool("extra", { description: "Was added while serving." }, async () => ({
      content: [{ type: "text", text: "extra" }],
    }));
    return { content: [{ type: "text", text: "grown" }] };
  },
);

tools.shrink = server.registerTool(
  "shrink",
  { description: "Removes the tool named in `name`, or every tool when `name` is `*`.", inputSchema: { name: z.string() } },
  async ({ name }) => {
    for (const [key, tool] of Object.entries(tools)) {
      if (name === "*" || key === name) {
        tool.remove();
        delete tools[key];
      }
    }
    return { content: [{ type: "text", text: `removed ${name}` }] };
  },
);

tools.greet = server.registerTool(
  "greet",
  { description: "Asks the person for their name in the middle of the call (an elicitation), then greets them." },
  async () => {
    const schema = { type: "object", properties: { name: { type: "string" } }, required: ["name"] };
    const answer = await server.server.elicitInput({ message: "What is your name?", requestedSchema: schema });
    const text = answer.action === "accept" ? `Hello, ${answer.content.name}!` : `Hello, whoever you are (${answer.action}).`;
    return { content: [{ type: "text", text }] };
  },
);

// Too long once prefixed with a label: the model APIs take 64 characters.
tools.long = server.registerTool(
  "this_tool_has_a_name_so_long_that_no_model_api_would_take_it",
  { description: "Cannot be served under a label." },
  async () => ({ content: [{ type: "text", text: "unreachable" }] }),
);

await server.connect(new StdioServerTransport());

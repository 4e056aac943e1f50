// The admin page driven in headless Chromium by Playwright, with the TypeScript SDK's MCP client beside
// it. Each step prints a line; a failed check throws, and the process exits non-zero.
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = process.env.ADMIN_URL;
const markup = process.env.MARKUP;
const shots = process.env.SCREENSHOTS;
const input = createInterface({ input: process.stdin });
const answers = input[Symbol.asyncIterator]();

function check(condition, what) {
  if (!condition) throw new Error(`failed: ${what}`);
}
function step(line) {
  console.log(line);
}

async function mcp() {
  const client = new Client({ name: "admin-page-test", version: "1" });
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { Authorization: "Bearer clerk-token" } },
  });
  await client.connect(transport);
  return client;
}
async function listed(client) {
  return (await client.listTools()).tools.map((t) => t.name);
}
async function eventually(what, test) {
  for (let i = 0; i < 100; i++) {
    if (await test()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`failed: ${what}`);
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
try {
  const errors = [];
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("dialog", (dialog) => { errors.push(`a dialog opened: ${dialog.message()}`); dialog.dismiss(); });
  await page.goto(`${url}/admin`);

  // A token without the admin ability sees nothing.
  await page.fill("#token", "clerk-token");
  await page.click("#login button[type=submit]");
  await page.waitForFunction(() => document.getElementById("login-problem").textContent.includes("toolgate.admin"));
  check(await page.isHidden("#app"), "the app stays hidden without the admin ability");
  check((await page.locator("#tool-rows tr").count()) === 0, "no tool is shown without the admin ability");
  step("refused without the admin ability");

  // 1. Log in with a token.
  await page.fill("#token", "ops-token");
  await page.click("#login button[type=submit]");
  await page.waitForSelector('tr[data-tool="search_orders"]');
  await page.waitForSelector("#calls svg .bar");
  step("logged in");

  // Markup in a description, a setting and audit rows is shown as text, and nothing runs.
  const notes = page.locator('tr[data-tool="read_notes"] .description');
  check((await notes.textContent()).includes(markup), "the description's markup is shown as text");
  await page.click('tr[data-tool="search_orders"] button');
  check((await page.inputValue("#setting-region")) === markup, "the setting's markup is a field's value");
  await page.click("#settings-close");
  await page.click('nav [data-view="audit"]');
  await page.waitForSelector("#audit-rows tr");
  const callers = await page.locator("#audit-rows tr td:nth-child(2)").allTextContents();
  check(callers.some((c) => c === markup), "a caller id of markup is shown as text");
  const previews = await page.locator("#audit-rows .preview").allTextContents();
  check(previews.includes(`Ship order ${markup}`), "a preview's markup is shown as text");
  const approval = await page.locator('#audit-rows tr:has(td:text-is("approve")) .preview').allTextContents();
  check(approval.includes("Ship order A-1001"), `an approval shows the preview it answered: ${approval}`);
  check((await page.evaluate(() => window.__pwned)) === undefined, "no injected script ran");
  check((await page.locator("img").count()) === 0, "no element was made from markup");
  check((await page.locator("script").count()) === 2, "only the page's own scripts");
  step("markup shown as text, nothing ran");
  await page.click('nav [data-view="servers"]');
  const ghost = await page.locator('tr[data-server="ghost"] td').allTextContents();
  check(ghost[2] === "offline" && ghost[6].length > 0, `the remote server's health and last error: ${ghost}`);
  step("an offline remote server shown with its last error");
  await page.click('nav [data-view="tools"]');

  // 2. Disable a tool; it vanishes from tools/list over MCP.
  const client = await mcp();
  check((await listed(client)).includes("ship_order"), "ship_order is listed before");
  await page.click('tr[data-tool="ship_order"] input[role=switch]');
  await page.waitForSelector('tr[data-tool="ship_order"] input[role=switch]:not(:checked)');
  await eventually("ship_order vanishes from tools/list", async () => !(await listed(client)).includes("ship_order"));
  step("disabled ship_order; gone from tools/list");
  await page.screenshot({ path: `${shots}/admin-tools.png`, fullPage: true });

  // 3. A bad setting shows its message beside the field; a good one is saved.
  await page.click('tr[data-tool="search_orders"] button');
  await page.fill("#setting-max_rows", "lots");
  await page.click("#settings button[type=submit]");
  await page.waitForFunction(() => document.querySelector('[data-problem="max_rows"]').textContent.length > 0);
  const message = await page.textContent('[data-problem="max_rows"]');
  check(message.includes("integer"), `the message says what is wrong: ${message}`);
  await page.screenshot({ path: `${shots}/admin-settings.png`, fullPage: true });
  await page.fill("#setting-max_rows", "25");
  await page.click("#settings button[type=submit]");
  await page.waitForFunction(() => document.getElementById("settings-saved").textContent.startsWith("Saved at revision"));
  check((await page.textContent('[data-problem="max_rows"]')) === "", "the message is gone");
  step("bad setting refused beside its field, good one saved");

  // 4. A call over MCP, then its audit row.
  const result = await client.callTool({ name: "search_orders", arguments: { query: "lamps" } });
  check(result.content[0].text.startsWith("25 rows for lamps"), `the call ran with the new setting: ${result.content[0].text}`);
  await page.click('nav [data-view="audit"]');
  await page.fill('#audit-filters input[name="tool"]', "search_orders");
  await page.fill('#audit-filters input[name="caller"]', "clerk");
  await page.click("#audit-filters button[type=submit]");
  // The setup's three searches, and this one on top.
  await page.waitForFunction(() => document.querySelectorAll("#audit-rows tr").length === 4);
  const row = await page.locator("#audit-rows tr:first-child td").allTextContents();
  check(row[1] === "clerk" && row[2] === "search_orders" && row[3] === "call" && row[4] === "done", `the audit row: ${row}`);
  const oldest = await page.locator("#audit-rows tr:last-child td").allTextContents();
  check(Number(row[5]) > Number(oldest[5]), `the call ran under the revision its new setting made: ${row[5]} after ${oldest[5]}`);
  await page.fill('#audit-filters input[name="tool"]', "");
  await page.fill('#audit-filters input[name="caller"]', "");
  await page.click("#audit-filters button[type=submit]");
  await page.waitForFunction(() => document.querySelectorAll("#audit-rows tr").length > 1);
  await page.screenshot({ path: `${shots}/admin-audit.png`, fullPage: true });
  step("read the audit row of the call");

  // 5. What a scope grants: set from the page, a bad name refused with its reason, then removed.
  await page.click('nav [data-view="grants"]');
  await page.fill('#grant-form input[name="claim"]', "scope:orders:read");
  await page.fill('#grant-form input[name="abilities"]', "orders.view, orders.audit");
  await page.click("#grant-form button[type=submit]");
  await page.waitForSelector('tr[data-claim="scope:orders:read"]');
  const grant = await page.locator('tr[data-claim="scope:orders:read"] td').allTextContents();
  check(grant[1] === "orders.audit, orders.view", `the grant as the records keep it: ${grant}`);
  await page.fill('#grant-form input[name="claim"]', "team:ops");
  await page.click("#grant-form button[type=submit]");
  await page.waitForFunction(() => document.getElementById("problem").textContent.includes("scope:NAME"));
  await page.click('tr[data-claim="scope:orders:read"] button');
  await page.waitForFunction(() => document.querySelectorAll("#grant-rows tr").length === 0);
  step("set and removed what a scope grants; a bad name refused");

  // A change made elsewhere appears without a reload.
  await page.click('nav [data-view="tools"]');
  step("change elsewhere");
  await answers.next();
  await page.waitForSelector('tr[data-tool="ship_order"] input[role=switch]:checked', { timeout: 30000 });
  await eventually("ship_order is listed again", async () => (await listed(client)).includes("ship_order"));
  step("a change made elsewhere appeared");

  await client.close();
  check(errors.length === 0, `no errors in the page: ${errors}`);
  step("done");
} catch (error) {
  // What the page showed when it failed, for the report.
  await page.screenshot({ path: `${shots}/failure.png`, fullPage: true });
  const shown = await page.evaluate(() => [...document.querySelectorAll(".problem, #live")].map((n) => n.textContent).filter(Boolean));
  console.error(`the page showed: ${JSON.stringify(shown)}; a screenshot is in ${shots}/failure.png`);
  throw error;
} finally {
  await browser.close();
  input.close();
}

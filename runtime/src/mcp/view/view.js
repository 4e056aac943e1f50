// toolgate's MCP App: draws the `chart` or `table` of a tool result the host hands over, with
// `toolgateDraw`, and fetches nothing.
(function () {
  const { element, chart, table } = toolgateDraw;
  const root = document.getElementById("root");
  let nextId = 1;
  const waiting = new Map();

  function post(message) { window.parent.postMessage(Object.assign({ jsonrpc: "2.0" }, message), "*"); }
  function request(method, params) {
    const id = nextId++;
    post({ id, method, params });
    return new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
  }
  function notify(method, params) { post({ method, params }); }

  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.id !== undefined && !message.method) {
      const pending = waiting.get(message.id);
      if (!pending) return;
      waiting.delete(message.id);
      if (message.error) pending.reject(message.error); else pending.resolve(message.result);
      return;
    }
    switch (message.method) {
      case "ui/notifications/tool-result": show(message.params); break;
      case "ui/notifications/host-context-changed": theme(message.params); break;
      case "ping":
      case "ui/resource-teardown": post({ id: message.id, result: {} }); break;
      default: if (message.id !== undefined) post({ id: message.id, error: { code: -32601, message: "Method not found" } });
    }
  });

  function theme(context) {
    if (context && (context.theme === "dark" || context.theme === "light")) document.documentElement.dataset.theme = context.theme;
  }

  function problem(text) { root.replaceChildren(element("p", { class: "problem" }, text)); document.body.dataset.drawn = "problem"; resized(); }

  function show(result) {
    const data = result && result.structuredContent;
    if (result && result.isError) return problem("The tool failed: " + ((result.content || []).map((c) => c.text || "").join(" ") || "no reason given"));
    if (!data || (!data.chart && !data.table)) return problem("This result has no chart or table to show.");
    root.replaceChildren();
    try {
      if (data.chart) root.append(chart(data.chart, Math.max(320, Math.min(root.clientWidth || 640, 960))));
      if (data.table) root.append(table(data.table, (url) => request("ui/open-link", { url }).catch(() => {})));
    } catch (error) {
      return problem(error.message);
    }
    document.body.dataset.drawn = [data.chart && "chart", data.table && "table"].filter(Boolean).join(" ");
    resized();
  }

  // ---- size and handshake ----
  let connected = false;
  function resized() {
    if (!connected) return;
    const size = document.body.getBoundingClientRect();
    notify("ui/notifications/size-changed", { width: Math.ceil(size.width), height: Math.ceil(size.height) });
  }
  if (window.ResizeObserver) new ResizeObserver(resized).observe(document.body);

  request("ui/initialize", { protocolVersion: "2026-01-26", appInfo: { name: "toolgate-view", version: "1" }, appCapabilities: {} })
    .then((result) => { theme(result && result.hostContext); connected = true; notify("ui/notifications/initialized", {}); resized(); })
    .catch((error) => problem("The host refused to connect: " + (error && error.message)));
})();

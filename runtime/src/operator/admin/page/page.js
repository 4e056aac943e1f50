"use strict";
// toolgate's admin page: a view over the admin API, and nothing more. Every change is a request to the API,
// which checks it; the token stays in this tab's session storage, never in a cookie. Everything shown is
// written with textContent, never as HTML.
(function () {
  const { element, chart } = toolgateDraw;
  const $ = (id) => document.getElementById(id);
  const KEY = "toolgate-admin-token";
  const state = { revision: null, tools: [], profiles: [], servers: null, limits: [], grants: [], view: "tools", editing: null, polling: 0 };

  class Refused extends Error {
    constructor(status, error) {
      super((error && error.message) || `the admin API answered ${status}`);
      this.status = status;
      this.problems = (error && error.problems) || [];
    }
  }

  async function api(path, body) {
    const token = sessionStorage.getItem(KEY);
    const init = { headers: { authorization: `Bearer ${token}` }, credentials: "omit", cache: "no-store" };
    if (body !== undefined) {
      init.method = "POST";
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    const text = await response.text();
    let value = null;
    try { value = text ? JSON.parse(text) : null; } catch (_) { value = { error: { message: text } }; }
    if (!response.ok) {
      if (response.status === 401 || response.status === 403) logOut(response.status === 401 ? "That token is not valid here." : (value && value.error && value.error.message) || "Forbidden.");
      throw new Refused(response.status, value && value.error);
    }
    return value;
  }

  // ---- logging in and out ----
  function logOut(reason) {
    sessionStorage.removeItem(KEY);
    state.polling += 1;
    for (const body of ["tool-rows", "profile-rows", "server-rows", "limit-rows", "audit-rows", "calls", "settings-fields"]) $(body).replaceChildren();
    $("app").hidden = true;
    $("logout").hidden = true;
    $("live").textContent = "";
    $("login").hidden = false;
    $("login-problem").textContent = reason || "";
  }

  async function logIn() {
    $("login-problem").textContent = "";
    try {
      await loadAll();
    } catch (error) {
      if (!(error instanceof Refused) || (error.status !== 401 && error.status !== 403)) $("login-problem").textContent = error.message;
      return;
    }
    $("login").hidden = true;
    $("app").hidden = false;
    $("logout").hidden = false;
    show(state.view);
    watch(++state.polling);
  }

  $("login").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, $("token").value.trim());
    $("token").value = "";
    logIn();
  });
  $("logout").addEventListener("click", () => logOut(""));

  // ---- keeping up with changes made elsewhere ----
  async function loadAll() {
    const [tools, profiles, servers, limits, grants] = await Promise.all([
      api("/admin/tools"),
      api("/admin/profiles"),
      api("/admin/servers").catch((error) => { if (error.status === 404) return null; throw error; }),
      api("/admin/limits"),
      api("/admin/grants"),
    ]);
    state.revision = tools.revision;
    state.tools = tools.tools;
    state.profiles = profiles.profiles;
    state.servers = servers;
    state.limits = limits;
    state.grants = grants;
    renderTools();
    renderProfiles();
    renderServers();
    renderLimits();
    renderGrants();
    await Promise.all([loadCalls(), loadAudit()]);
    $("live").textContent = `revision ${state.revision} · up to date`;
  }

  // Asks the API to answer when the revision moves (it answers after a while anyway), then reloads.
  async function watch(generation) {
    while (generation === state.polling) {
      try {
        await api(`/admin/changes?after=${state.revision}`);
        if (generation !== state.polling) return;
        await loadAll();
      } catch (error) {
        if (error instanceof Refused && (error.status === 401 || error.status === 403)) return;
        $("live").textContent = `cannot reach the server (${error.message}); retrying`;
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    }
  }

  // ---- views ----
  function show(view) {
    state.view = view;
    for (const tab of document.querySelectorAll("nav [data-view]")) tab.setAttribute("aria-selected", String(tab.dataset.view === view));
    for (const section of document.querySelectorAll("section[data-view]")) section.hidden = section.dataset.view !== view;
  }
  for (const tab of document.querySelectorAll("nav [data-view]")) tab.addEventListener("click", () => show(tab.dataset.view));

  function cell(content, className) {
    const td = element("td", className ? { class: className } : {});
    if (content instanceof Node) td.append(content); else if (content !== undefined && content !== null) td.textContent = String(content);
    return td;
  }
  function tags(values) {
    const span = element("span");
    for (const value of values) span.append(element("span", { class: "tag" }, value));
    return span;
  }
  function when(ms) { return ms ? new Date(ms).toLocaleString() : "–"; }
  // What a client or a remote server chose, as people read it: every character that changes how text looks
  // without showing itself (controls, bidirectional and invisible ones) written out as \u{..}, as the
  // operator's commands print it.
  const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb]|\ud82f[\udca0-\udca3]|[\udb40-\udb43][\udc00-\udfff]/g;
  function shown(text) { return String(text).replace(HIDDEN, (c) => `\\u{${c.codePointAt(0).toString(16)}}`); }
  function options(select, values) {
    const chosen = select.value;
    select.replaceChildren(element("option", { value: "" }, "any"));
    for (const value of values) select.append(element("option", { value }, value));
    select.value = values.includes(chosen) ? chosen : "";
  }

  // ---- tools ----
  function sourceOf(tool) { return tool.server ? `remote: ${tool.server}` : tool.source; }
  function profilesOf(name) { return state.profiles.filter((p) => p.tools && Object.prototype.hasOwnProperty.call(p.tools, name)).map((p) => p.name); }

  function renderTools() {
    options($("category"), [...new Set(state.tools.flatMap((t) => t.categories))].sort());
    options($("source"), [...new Set(state.tools.map(sourceOf))].sort());
    const find = $("find").value.trim().toLowerCase();
    const category = $("category").value, source = $("source").value;
    const rows = state.tools.filter((t) =>
      (!find || t.name.toLowerCase().includes(find) || t.description.toLowerCase().includes(find))
      && (!category || t.categories.includes(category))
      && (!source || sourceOf(t) === source));
    $("tool-rows").replaceChildren(...rows.map(toolRow));
    if (state.editing) {
      const tool = state.tools.find((t) => t.name === state.editing);
      if (!tool) closeSettings();
    }
  }
  for (const id of ["find", "category", "source"]) $(id).addEventListener("input", renderTools);

  function toolRow(tool) {
    const tr = element("tr", { "data-tool": tool.name });
    const toggle = element("input", { type: "checkbox", role: "switch", class: "switch", "aria-label": `${tool.name} on` });
    toggle.checked = tool.enabled;
    toggle.addEventListener("change", () => edit(tool, { change: toggle.checked ? "enable" : "disable" }).catch(() => { toggle.checked = tool.enabled; }));
    tr.append(cell(toggle));
    const about = element("div");
    about.append(element("div", { class: "name" }, tool.name), element("div", { class: "description" }, tool.description));
    tr.append(cell(about));
    tr.append(cell(sourceOf(tool)));
    tr.append(cell(tool.status, `status-${tool.status}`));
    tr.append(cell(tool.read_only ? "read-only" : "write"));
    const abilities = [...tool.declared_abilities, ...tool.required_abilities];
    tr.append(cell(tool.public ? tags(["public"]) : tags(abilities)));
    tr.append(cell(tags(profilesOf(tool.name))));
    const open = element("button", { type: "button" }, "Settings");
    open.disabled = !tool.settings_schema;
    open.addEventListener("click", () => openSettings(tool.name));
    tr.append(cell(tool.settings_schema ? open : ""));
    return tr;
  }

  async function edit(tool, change) {
    $("problem").textContent = "";
    try {
      const answer = await api(`/admin/tools/${encodeURIComponent(tool.name)}/edit`, { version: tool.version, change });
      await loadAll();
      return answer;
    } catch (error) {
      $("problem").textContent = error.message;
      throw error;
    }
  }

  // ---- settings: a form made from the settings schema; the API checks what is sent ----
  function openSettings(name) {
    const tool = state.tools.find((t) => t.name === name);
    state.editing = name;
    $("settings-tool").textContent = name;
    $("settings-problem").textContent = "";
    $("settings-saved").textContent = "";
    const schema = tool.settings_schema || {};
    const values = tool.effective_settings || tool.settings || {};
    const fields = Object.entries(schema.properties || {}).map(([key, property]) => field(key, property || {}, values[key]));
    $("settings-fields").replaceChildren(...fields);
    $("settings").hidden = false;
  }
  function closeSettings() {
    state.editing = null;
    $("settings").hidden = true;
    $("settings-fields").replaceChildren();
  }
  $("settings-close").addEventListener("click", closeSettings);

  function field(key, property, value) {
    const box = element("div", { class: "field", "data-key": key });
    const id = `setting-${key}`;
    const type = Array.isArray(property.type) ? property.type.find((t) => t !== "null") : property.type;
    box.append(element("label", { for: id }, property.title || key));
    let input;
    if (Array.isArray(property.enum)) {
      input = element("select", { id });
      for (const option of property.enum) input.append(element("option", { value: JSON.stringify(option) }, String(option)));
      input.value = JSON.stringify(value === undefined ? property.enum[0] : value);
      input.dataset.kind = "json";
    } else if (type === "boolean") {
      input = element("input", { id, type: "checkbox" });
      input.checked = Boolean(value);
      input.dataset.kind = "boolean";
    } else if (type === "integer" || type === "number") {
      input = element("input", { id, type: "text", inputmode: "decimal" });
      input.value = value === undefined || value === null ? "" : String(value);
      input.dataset.kind = "number";
    } else if (type === "string") {
      input = element("input", { id, type: "text" });
      input.value = value === undefined || value === null ? "" : String(value);
      input.dataset.kind = "string";
    } else {
      input = element("textarea", { id, rows: "3" });
      input.value = value === undefined ? "" : JSON.stringify(value, null, 2);
      input.dataset.kind = "json";
    }
    input.name = key;
    box.append(input);
    if (property.description) box.append(element("div", { class: "hint" }, property.description));
    box.append(element("p", { class: "problem", role: "alert", "data-problem": key }));
    return box;
  }

  // What the form holds, as the JSON the API checks: a number field that is no number goes as text, so
  // that the API names the problem.
  function formValue() {
    const settings = {};
    for (const input of $("settings-fields").querySelectorAll("[name]")) {
      const raw = input.value;
      switch (input.dataset.kind) {
        case "boolean": settings[input.name] = input.checked; break;
        case "number": if (raw.trim() !== "") settings[input.name] = Number.isFinite(Number(raw)) ? Number(raw) : raw; break;
        case "string": settings[input.name] = raw; break;
        default:
          if (raw.trim() === "") break;
          try { settings[input.name] = JSON.parse(raw); } catch (_) { settings[input.name] = raw; }
      }
    }
    return settings;
  }

  $("settings").addEventListener("submit", async (event) => {
    event.preventDefault();
    const tool = state.tools.find((t) => t.name === state.editing);
    for (const problem of $("settings").querySelectorAll("[data-problem]")) problem.textContent = "";
    for (const box of $("settings").querySelectorAll(".field")) box.removeAttribute("data-invalid");
    $("settings-problem").textContent = "";
    $("settings-saved").textContent = "";
    try {
      const answer = await api(`/admin/tools/${encodeURIComponent(tool.name)}/edit`, { version: tool.version, change: { change: "settings", value: formValue() } });
      await loadAll();
      $("settings-saved").textContent = `Saved at revision ${answer.revision}.`;
    } catch (error) {
      const unplaced = [];
      for (const { path, problem } of error.problems || []) {
        const key = String(path).split(/[.[]/)[0];
        const box = [...$("settings").querySelectorAll(".field")].find((b) => b.dataset.key === key);
        if (box) {
          box.setAttribute("data-invalid", "");
          box.querySelector("[data-problem]").textContent = problem;
        } else unplaced.push(problem);
      }
      $("settings-problem").textContent = unplaced.length || !(error.problems || []).length ? [error.message].concat(unplaced).join(" ") : "";
    }
  });

  // ---- calls per tool ----
  async function loadCalls() {
    const calls = await api("/admin/calls?hours=24");
    const box = $("calls");
    if (!calls.tools.length) { box.replaceChildren(element("p", { class: "muted" }, "No calls in the last 24 hours.")); return; }
    try {
      box.replaceChildren(chart(calls.chart, Math.max(480, Math.min(box.clientWidth || 900, 900))));
    } catch (error) {
      box.replaceChildren(element("p", { class: "problem" }, error.message));
    }
  }

  // ---- profiles ----
  function renderProfiles() {
    $("profile-rows").replaceChildren(...state.profiles.map((profile) => {
      const tr = element("tr", { "data-profile": profile.name });
      tr.append(cell(element("span", { class: "name" }, profile.name)), cell(profile.description));
      const list = element("div");
      for (const [tool, assignment] of Object.entries(profile.tools || {})) {
        const line = element("div");
        line.append(element("span", { class: "tag" }, tool));
        if (assignment && assignment.settings) line.append(element("pre", {}, JSON.stringify(assignment.settings)));
        list.append(line);
      }
      tr.append(cell(list));
      return tr;
    }));
  }

  // ---- remote servers ----
  function renderServers() {
    const tab = document.querySelector('nav [data-view="servers"]');
    tab.hidden = !state.servers;
    if (!state.servers) return;
    $("server-rows").replaceChildren(...state.servers.servers.map((server) => {
      const tr = element("tr", { "data-server": server.label });
      tr.append(cell(element("span", { class: "name" }, server.label)), cell(server.reached_by), cell(server.health, `health-${server.health}`));
      tr.append(cell(server.tools), cell(server.protocol || "–"), cell(when(server.last_seen_ms)));
      const errors = element("div");
      if (server.last_error) errors.append(element("div", { class: "problem" }, shown(server.last_error)));
      for (const problem of server.problems || []) errors.append(element("div", { class: "muted" }, shown(problem)));
      if (server.reached_by.endsWith("signed in by an operator")) {
        // An operator's sign-in: its address opens in a new tab, which comes back to /oauth/callback.
        const signIn = element("button", { type: "button" }, "Sign in");
        signIn.addEventListener("click", () => beginSignIn(server.label));
        errors.append(signIn);
      }
      tr.append(cell(errors));
      return tr;
    }));
  }

  async function beginSignIn(label) {
    $("problem").textContent = "";
    try {
      const begun = await api(`/admin/servers/${encodeURIComponent(label)}/sign-in`, {});
      window.open(begun.url, "_blank", "noopener,noreferrer");
    } catch (error) {
      $("problem").textContent = error.message;
    }
  }

  // ---- rate limits ----
  function renderLimits() {
    $("limit-rows").replaceChildren(...state.limits.map((limit) => {
      const tr = element("tr", { "data-scope": limit.scope });
      const remove = element("button", { type: "button" }, "Remove");
      remove.addEventListener("click", () => editLimit(limit.scope, limit.version, { change: "remove" }));
      tr.append(cell(element("code", {}, limit.scope)), cell(limit.rate.calls), cell(`${limit.rate.per_secs} s`), cell(remove));
      return tr;
    }));
  }
  // A change of a rate limit or a grant, against the version shown; then everything again.
  async function editKeyed(kind, key, version, change) {
    $("problem").textContent = "";
    try {
      await api(`/admin/${kind}/${encodeURIComponent(key)}/edit`, { version, change });
      await loadAll();
    } catch (error) {
      $("problem").textContent = error.message;
    }
  }
  const editLimit = (scope, version, change) => editKeyed("limits", scope, version, change);
  $("limit-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const form = new FormData($("limit-form"));
    const scope = String(form.get("scope")).trim();
    const kept = state.limits.find((limit) => limit.scope === scope);
    const rate = { calls: Number(form.get("calls")), per_secs: Number(form.get("per_secs")) };
    editLimit(scope, kept ? kept.version : 0, { change: "set", value: rate });
  });

  // ---- grants ----
  function renderGrants() {
    $("grant-rows").replaceChildren(...state.grants.map((grant) => {
      const tr = element("tr", { "data-claim": grant.claim });
      const remove = element("button", { type: "button" }, "Remove");
      remove.addEventListener("click", () => editKeyed("grants", grant.claim, grant.version, { change: "remove" }));
      const abilities = grant.abilities.length ? grant.abilities.map(shown).join(", ") : "nothing";
      tr.append(cell(element("code", {}, shown(grant.claim))), cell(abilities), cell(remove));
      return tr;
    }));
  }
  $("grant-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const form = new FormData($("grant-form"));
    const claim = String(form.get("claim")).trim();
    const kept = state.grants.find((grant) => grant.claim === claim);
    const abilities = String(form.get("abilities")).split(/[\s,]+/).filter(Boolean);
    editKeyed("grants", claim, kept ? kept.version : 0, { change: "set", value: abilities });
  });

  // ---- audit trail ----
  async function loadAudit() {
    const query = new URLSearchParams({ limit: "200" });
    for (const [key, value] of new FormData($("audit-filters"))) if (String(value).trim()) query.set(key, String(value).trim());
    const rows = await api(`/admin/audit?${query}`);
    $("audit-rows").replaceChildren(...rows.map((row) => {
      const tr = element("tr", { "data-seq": String(row.seq) });
      // A delegated caller with whom it acted for, as the operator's commands print it: `max < vera`;
      // the actors of a signed-in caller's token before it, and its client after it.
      const chain = [...(row.actors || []), row.caller, ...(row.on_behalf_of || [])].map(shown).join(" < ");
      const caller = element("div", {}, row.client ? `${chain} via ${shown(row.client)}` : chain);
      tr.append(cell(when(row.at_ms)), cell(caller), cell(shown(row.tool)), cell(row.action), cell(row.outcome), cell(row.revision === null ? "–" : row.revision));
      tr.append(cell(row.preview ? element("pre", { class: "preview" }, row.preview) : ""));
      tr.append(cell(`${(row.elapsed_us / 1000).toFixed(1)} ms`));
      return tr;
    }));
  }
  $("audit-filters").addEventListener("submit", (event) => {
    event.preventDefault();
    loadAudit().catch((error) => { $("problem").textContent = error.message; });
  });

  if (sessionStorage.getItem(KEY)) logIn();
})();

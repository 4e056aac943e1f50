// toolgate's drawing of charts and tables, shared by its MCP App and the admin page. Everything is drawn
// with the DOM (textContent, SVG elements), never from HTML strings.
const toolgateDraw = (function () {
  const SVG = "http://www.w3.org/2000/svg";
  const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295"];

  function element(name, attributes, text) {
    const node = document.createElement(name);
    for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, value);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function shape(name, attributes, text) {
    const node = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function number(value) { return Number.isFinite(value) ? value.toLocaleString("en-US", { maximumFractionDigits: 2 }) : ""; }

  // ---- charts ----
  // The chart `c` as an SVG element `width` wide; throws an Error that says why it cannot be drawn.
  function chart(c, width) {
    const labels = Array.isArray(c.labels) ? c.labels.map(String) : [];
    const datasets = Array.isArray(c.datasets) ? c.datasets : [];
    const fits = labels.length > 0 && datasets.length > 0 && datasets.every((d) => Array.isArray(d.data) && d.data.length === labels.length && d.data.every(Number.isFinite));
    if (!fits) throw new Error("The chart's labels and values do not match, so it is not drawn.");
    const pie = c.type === "pie" || c.type === "doughnut";
    if (!pie && c.type !== "bar" && c.type !== "line") throw new Error(`A chart of type "${c.type}" cannot be drawn.`);
    const slicesFit = datasets.length === 1 && datasets[0].data.every((v) => v >= 0) && datasets[0].data.some((v) => v > 0);
    if (pie && !slicesFit) throw new Error("A pie needs one dataset of values that are not negative and not all zero.");
    const svg = shape("svg", { viewBox: `0 0 ${width} 340`, role: "img", class: "chart " + c.type, "aria-label": String(c.title || "") });
    svg.append(shape("text", { x: 0, y: 18, class: "title" }, String(c.title || "")));
    if (pie) slices(svg, width, labels, datasets[0], c.type === "doughnut");
    else axes(svg, width, labels, datasets, c.type);
    return svg;
  }

  function ticks(low, high) {
    const span = high - low || 1;
    const step0 = Math.pow(10, Math.floor(Math.log10(span / 5)));
    const step = [1, 2, 5, 10].map((m) => m * step0).find((s) => span / s <= 5);
    const values = [];
    for (let v = Math.floor(low / step) * step; v <= high + step * 1e-9; v += step) values.push(+v.toFixed(10));
    if (values[values.length - 1] < high) values.push(values[values.length - 1] + step);
    return values;
  }

  function axes(svg, width, labels, datasets, type) {
    const left = 56, right = 12, top = 34, bottom = 292;
    const all = datasets.flatMap((d) => d.data);
    const scale = ticks(Math.min(0, ...all), Math.max(0, ...all));
    const low = scale[0], high = scale[scale.length - 1];
    const y = (v) => bottom - ((v - low) / (high - low || 1)) * (bottom - top);
    const band = (width - left - right) / labels.length;
    const grid = shape("g", { class: "grid axis" });
    for (const v of scale) {
      grid.append(shape("line", { x1: left, x2: width - right, y1: y(v), y2: y(v) }));
      grid.append(shape("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end" }, number(v)));
    }
    const every = Math.ceil(labels.length / Math.max(1, Math.floor((width - left - right) / 64)));
    labels.forEach((label, i) => {
      if (i % every) return;
      grid.append(shape("text", { x: left + band * (i + 0.5), y: bottom + 16, "text-anchor": "middle" }, label));
    });
    svg.append(grid);
    datasets.forEach((d, n) => {
      const color = PALETTE[n % PALETTE.length];
      const group = shape("g", { class: "dataset", "data-label": String(d.label || "") });
      if (type === "bar") {
        const inner = band * 0.8 / datasets.length;
        d.data.forEach((v, i) => {
          const x = left + band * i + band * 0.1 + inner * n;
          const bar = shape("rect", { class: "bar", x, y: Math.min(y(v), y(0)), width: Math.max(1, inner - 2), height: Math.abs(y(0) - y(v)), fill: color });
          bar.append(shape("title", {}, `${d.label}, ${labels[i]}: ${number(v)}`));
          group.append(bar);
        });
      } else {
        const points = d.data.map((v, i) => [left + band * (i + 0.5), y(v)]);
        group.append(shape("path", { class: "line", stroke: color, d: points.map((p, i) => (i ? "L" : "M") + p[0].toFixed(1) + "," + p[1].toFixed(1)).join("") }));
        points.forEach((p, i) => {
          const dot = shape("circle", { class: "point", cx: p[0], cy: p[1], r: 3.5, fill: color });
          dot.append(shape("title", {}, `${d.label}, ${labels[i]}: ${number(d.data[i])}`));
          group.append(dot);
        });
      }
      svg.append(group);
    });
    legend(svg, datasets.map((d, n) => [String(d.label || ""), PALETTE[n % PALETTE.length]]), 326);
  }

  function slices(svg, width, labels, dataset, ring) {
    const total = dataset.data.reduce((a, b) => a + b, 0);
    const cx = 150, cy = 180, r = 130, hole = ring ? r * 0.55 : 0;
    const point = (angle, radius) => [cx + radius * Math.sin(angle), cy - radius * Math.cos(angle)];
    let start = 0;
    const group = shape("g", { class: "dataset", "data-label": String(dataset.label || "") });
    dataset.data.forEach((v, i) => {
      if (v === 0) return;
      const sweep = (v / total) * Math.PI * 2;
      const end = start + Math.min(sweep, Math.PI * 2 - 1e-4);
      const large = end - start > Math.PI ? 1 : 0;
      const [x0, y0] = point(start, r), [x1, y1] = point(end, r);
      let d = `M${x0},${y0}A${r},${r} 0 ${large} 1 ${x1},${y1}`;
      if (hole) {
        const [x2, y2] = point(end, hole), [x3, y3] = point(start, hole);
        d += `L${x2},${y2}A${hole},${hole} 0 ${large} 0 ${x3},${y3}Z`;
      } else d += `L${cx},${cy}Z`;
      const slice = shape("path", { class: "slice", d, fill: PALETTE[i % PALETTE.length], "data-label": labels[i] });
      slice.append(shape("title", {}, `${labels[i]}: ${number(v)} (${(100 * v / total).toFixed(1)}%)`));
      group.append(slice);
      start += sweep;
    });
    svg.append(group);
    const entries = labels.map((label, i) => [label, PALETTE[i % PALETTE.length], `${number(dataset.data[i])} · ${(100 * dataset.data[i] / total).toFixed(1)}%`]);
    const list = shape("g", { class: "legend" });
    entries.slice(0, 12).forEach(([label, color, value], i) => {
      const y = 62 + i * 22;
      list.append(shape("rect", { x: 310, y: y - 10, width: 12, height: 12, rx: 2, fill: color }));
      list.append(shape("text", { x: 328, y }, label));
      list.append(shape("text", { x: width - 8, y, "text-anchor": "end", class: "value" }, value));
    });
    svg.append(list);
  }

  function legend(svg, entries, y) {
    const list = shape("g", { class: "legend" });
    let x = 56;
    for (const [label, color] of entries) {
      list.append(shape("rect", { x, y: y - 10, width: 12, height: 12, rx: 2, fill: color }));
      list.append(shape("text", { x: x + 17, y }, label));
      x += 34 + label.length * 7;
    }
    svg.append(list);
  }

  // ---- tables ----
  function link(url) {
    try {
      const parsed = new URL(url);
      return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : null;
    } catch (_) { return null; }
  }

  // The table `t` as a table element, whose row links call `open(href)`; throws an Error that says why it
  // cannot be drawn.
  function table(t, open) {
    const columns = Array.isArray(t.columns) ? t.columns : [];
    const rows = Array.isArray(t.rows) ? t.rows : [];
    if (!columns.length || rows.some((r) => !Array.isArray(r.cells) || r.cells.length !== columns.length)) throw new Error("The table's rows do not match its columns, so it is not drawn.");
    const node = element("table", { class: "table" });
    if (t.title) node.append(element("caption", {}, String(t.title)));
    const head = element("tr");
    for (const column of columns) head.append(element("th", { class: column.type || "text", scope: "col" }, String(column.title)));
    const thead = element("thead");
    thead.append(head);
    node.append(thead);
    const body = element("tbody");
    for (const row of rows) {
      const tr = element("tr");
      row.cells.forEach((cell, i) => {
        const kind = columns[i].type || "text";
        const text = cell === null || cell === undefined ? "" : kind === "number" ? number(cell) : kind === "boolean" ? (cell ? "yes" : "no") : String(cell);
        const td = element("td", { class: kind });
        const href = i === 0 && row.url ? link(row.url) : null;
        if (href) {
          const a = element("a", { href, target: "_blank", rel: "noopener noreferrer" }, text);
          a.addEventListener("click", (event) => { event.preventDefault(); open(href); });
          td.append(a);
        } else td.textContent = text;
        tr.append(td);
      });
      body.append(tr);
    }
    node.append(body);
    return node;
  }

  return { element, number, chart, table };
})();

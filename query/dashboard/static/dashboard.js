// The Gazetteer dashboard: one repository's churn, neighborhoods, hubs and freshness,
// redrawn whenever the service's event stream says the read model moved.
"use strict";

const CHURN_PAGE = 100;
const CHURN_TOKENS = 50000;
const PLOT_CONFIG = { displaylogo: false, responsive: true };
const CHURN_SERIES = [
  ["files_added", "files added", "#2f8132"],
  ["files_removed", "files removed", "#b44d12"],
  ["files_changed", "files changed", "#1f5fbf"],
  ["dependencies_added", "dependencies added", "#7fbf7b"],
  ["dependencies_removed", "dependencies removed", "#e8a87c"],
];

const state = {
  repo: null,
  signatures: {},
  refreshing: null,
  again: false,
  updates: 0,
  selected: null,
};

const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;
const short = (sha) => (sha ? sha.slice(0, 7) : "—");
// Plotly reads a subset of HTML in labels: names from the repository are shown as text.
const esc = (text) =>
  String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function getJson(path) {
  const response = await fetch(path, { cache: "no-store" });
  if (!response.ok) {
    throw new HttpError(response.status, `${path}: ${response.status}`);
  }
  return response.json();
}

function cell(row, text, className) {
  const td = row.insertCell();
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function emptyLayout(message) {
  return {
    margin: { t: 10, r: 10, b: 30, l: 40 },
    xaxis: { visible: false },
    yaxis: { visible: false },
    annotations: [{ text: message, showarrow: false, xref: "paper", yref: "paper", x: 0.5, y: 0.5 }],
  };
}

// Freshness of every repository, and the picker when there are several.
function renderRepositories(items) {
  const picker = $("repo-picker");
  const names = items.map((r) => r.repo);
  if (picker.options.length !== names.length || names.some((n, i) => picker.options[i].value !== n)) {
    picker.replaceChildren(...names.map((n) => new Option(n, n)));
  }
  picker.value = state.repo;
  $("repo-picker-label").hidden = names.length < 2;
  $("repo-name").textContent = names.length < 2 ? state.repo || "no repository indexed yet" : "";
  const body = $("freshness-table").tBodies[0];
  body.replaceChildren();
  for (const item of items) {
    const f = item.freshness;
    const row = body.insertRow();
    row.dataset.repo = item.repo;
    cell(row, item.repo);
    cell(row, f.status, `status-${f.status}`);
    cell(row, `${Math.round(f.lag_ms)} ms`, "num");
    cell(row, String(f.pending_events), "num");
    cell(row, short(f.indexed_commit));
    cell(row, short(f.head_commit) + (f.working_tree_dirty ? " (dirty)" : ""));
    cell(row, String(item.files), "num");
    cell(row, f.reason);
  }
}

// The neighborhood map: nodes on the positions the service computed, links by weight.
async function renderMap(data) {
  const nodes = data.neighborhoods;
  const at = new Map(nodes.map((n) => [n.id, n]));
  const heaviest = Math.max(1, ...data.links.map((l) => l.weight));
  const widths = new Map();
  for (const link of data.links) {
    const width = 1 + Math.round((4 * link.weight) / heaviest);
    if (!widths.has(width)) widths.set(width, { x: [], y: [] });
    const line = widths.get(width);
    const a = at.get(link.a);
    const b = at.get(link.b);
    line.x.push(a.x, b.x, null);
    line.y.push(a.y, b.y, null);
  }
  const linkTraces = [...widths.entries()]
    .sort((p, q) => p[0] - q[0])
    .map(([width, line]) => ({
      type: "scatter",
      mode: "lines",
      name: `links (width ${width})`,
      x: line.x,
      y: line.y,
      line: { width, color: "#9aa5b1" },
      hoverinfo: "skip",
      showlegend: false,
    }));
  const largest = Math.max(1, ...nodes.map((n) => n.size));
  const nodeTrace = {
    type: "scatter",
    mode: "markers+text",
    name: "neighborhoods",
    x: nodes.map((n) => n.x),
    y: nodes.map((n) => n.y),
    text: nodes.map((n) => esc(n.label)),
    textposition: "bottom center",
    customdata: nodes.map((n) => n.id),
    hovertext: nodes.map(
      (n) =>
        `<b>${esc(n.label)}</b> (${n.kind})<br>${n.size} files, cohesion ${n.cohesion.toFixed(2)}` +
        `<br>${n.hubs} hubs<br>entry points: ${esc(n.entry_points.join(", ") || "none")}`,
    ),
    hoverinfo: "text",
    marker: {
      size: nodes.map((n) => 14 + 36 * Math.sqrt(n.size / largest)),
      color: nodes.map((n) => n.cohesion),
      colorscale: "Viridis",
      cmin: 0,
      cmax: 1,
      showscale: true,
      colorbar: { title: { text: "cohesion" }, thickness: 12 },
      line: { width: 1, color: "#1f2933" },
      opacity: 1,
    },
  };
  const layout = nodes.length
    ? {
        margin: { t: 10, r: 10, b: 10, l: 10 },
        xaxis: { visible: false, range: [-1.4, 1.4] },
        yaxis: { visible: false, range: [-1.4, 1.4], scaleanchor: "x" },
        hovermode: "closest",
        showlegend: false,
      }
    : emptyLayout("no neighborhoods yet: the first recluster is due");
  $("map-caption").textContent =
    `${data.neighborhoods_total} neighborhoods, ${data.links_total} links` +
    (data.snapshot.modularity === null ? "" : `, modularity ${data.snapshot.modularity.toFixed(3)}`) +
    (data.snapshot.stale ? " (recluster due)" : "");
  const map = $("neighborhood-map");
  await Plotly.react(map, [...linkTraces, nodeTrace], layout, PLOT_CONFIG);
  if (!map.dataset.clickable) {
    map.dataset.clickable = "yes";
    map.on("plotly_click", (event) => {
      const point = event.points.find((p) => p.data.name === "neighborhoods");
      if (point) showMembers(point.customdata).catch((error) => console.error(error));
    });
  }
}

function renderHubs(data) {
  const hubs = [...data.hubs].reverse();
  $("hubs-caption").textContent = `${data.hubs_total} connected files, hub above ${data.hub_threshold ?? "—"}`;
  const trace = {
    type: "bar",
    orientation: "h",
    name: "degree",
    y: hubs.map((h) => h.path),
    x: hubs.map((h) => h.degree),
    // Opacity by importance; plotly.js 3 warns on numeric bar colours with a colorscale.
    marker: {
      color: hubs.map((h) => `rgba(31, 95, 191, ${(0.3 + 0.7 * Math.min(1, h.importance)).toFixed(3)})`),
      line: { width: hubs.map((h) => (h.hub ? 2 : 0)), color: "#b44d12" },
    },
    hovertext: hubs.map(
      (h) => `${esc(h.path)}<br>in ${h.in_degree}, out ${h.out_degree}<br>importance ${h.importance.toFixed(3)}` +
        (h.hub ? "<br><b>hub</b>" : ""),
    ),
    hoverinfo: "text",
  };
  const layout = hubs.length
    ? { margin: { t: 10, r: 10, b: 30, l: 180 }, yaxis: { type: "category", automargin: true } }
    : emptyLayout("no dependencies between files yet");
  return Plotly.react($("hubs-chart"), [trace], layout, PLOT_CONFIG);
}

async function showMembers(nid) {
  state.selected = nid;
  const detail = await getJson(`repositories/${enc(state.repo)}/neighborhoods/${enc(nid)}?limit=50`);
  const n = detail.neighborhood;
  $("members-caption").textContent = `${n.label}: ${detail.members_total} files, cohesion ${n.cohesion.toFixed(2)}`;
  const body = $("members-table").tBodies[0];
  body.replaceChildren();
  for (const m of detail.members) {
    const row = body.insertRow();
    cell(row, m.path);
    cell(row, String(m.degree), "num");
    cell(row, m.importance.toFixed(3), "num");
    cell(row, m.hub ? "hub" : m.expansion_hub ? "expansion hub" : "");
  }
  $("members-links").replaceChildren(
    ...detail.links.map((l) => {
      const li = document.createElement("li");
      li.textContent = `linked to ${l.label} (weight ${l.weight})`;
      return li;
    }),
  );
}

// Churn: the ledger's newest entries, oldest first. The service keeps the oldest of a
// page when the token budget cuts it, so the page asked for ends at the newest entry.
async function loadChurn(repo) {
  const base = `repositories/${enc(repo)}/churn?max_tokens=${CHURN_TOKENS}`;
  const probe = await getJson(`${base}&limit=1`);
  let page = await getJson(`${base}&limit=${CHURN_PAGE}&offset=${Math.max(0, probe.total - CHURN_PAGE)}`);
  if (page.truncated && page.items.length) {
    const kept = page.items.length;
    page = await getJson(`${base}&limit=${kept}&offset=${Math.max(0, page.total - kept)}`);
  }
  return page.items;
}

function entryLabel(entry, seen) {
  let label;
  if (entry.kind === "commit") label = short(entry.commit);
  else if (entry.kind === "scan") label = `scan ${entry.commit ? short(entry.commit) : entry.first_seq}`;
  else label = "working tree";
  while (seen.has(label)) label += "'";
  seen.add(label);
  return label;
}

function renderChurn(entries, message) {
  $("churn-empty").hidden = !message;
  $("churn-empty").textContent = message || "";
  const seen = new Set();
  const x = entries.map((e) => entryLabel(e, seen));
  const hover = entries.map(
    (e) => `<b>${esc(e.subject || e.kind)}</b><br>${esc(e.id)}` +
      (e.committed_at ? `<br>${new Date(e.committed_at * 1000).toISOString()}` : ""),
  );
  const bars = CHURN_SERIES.map(([field, name, color]) => ({
    type: "bar",
    name,
    x,
    y: entries.map((e) => e[field]),
    customdata: entries.map((e) => e.id),
    hovertext: hover,
    hovertemplate: `%{hovertext}<br>${name}: %{y}<extra></extra>`,
    marker: { color },
  }));
  const barLayout = entries.length
    ? { barmode: "stack", margin: { t: 10, r: 10, b: 40, l: 40 }, xaxis: { type: "category" } }
    : emptyLayout(message || "no churn recorded yet");
  const when = entries.map((e) => new Date(e.indexed_at * 1000));
  const sizes = [
    ["files", (e) => e.size.files, "y"],
    ["edges", (e) => e.size.edges, "y"],
    ["neighborhoods", (e) => e.size.neighborhoods, "y"],
    ["modularity", (e) => e.modularity, "y2"],
  ].map(([name, value, yaxis]) => ({
    type: "scatter",
    mode: "lines+markers",
    name,
    x: when,
    y: entries.map(value),
    yaxis,
    text: x,
    hovertemplate: `%{text}<br>${name}: %{y}<extra></extra>`,
    line: { dash: yaxis === "y2" ? "dot" : "solid" },
  }));
  const sizeLayout = entries.length
    ? {
        margin: { t: 10, r: 50, b: 60, l: 50 },
        yaxis: { title: { text: "graph size" }, rangemode: "tozero" },
        yaxis2: {
          title: { text: "modularity" },
          overlaying: "y",
          side: "right",
          range: [0, 1],
          tickmode: "auto",
          showgrid: false,
        },
        legend: { orientation: "h" },
      }
    : emptyLayout(message || "no churn recorded yet");
  const trend = [
    ["hubs gained", (e) => e.hubs_gained.length, (e) => e.hubs_gained, "#2f8132"],
    ["hubs lost", (e) => -e.hubs_lost.length, (e) => e.hubs_lost, "#b44d12"],
  ].map(([name, value, paths, color]) => ({
    type: "bar",
    name,
    x,
    y: entries.map(value),
    hovertext: entries.map((e) => paths(e).map(esc).join("<br>") || "none"),
    hovertemplate: `${name}: %{y}<br>%{hovertext}<extra></extra>`,
    marker: { color },
  }));
  const moved = entries.some((e) => e.hubs_gained.length || e.hubs_lost.length);
  const trendLayout = entries.length
    ? {
        barmode: "relative",
        margin: { t: 10, r: 10, b: 40, l: 40 },
        xaxis: { type: "category" },
        annotations: moved
          ? []
          : [{ text: "no file crossed the hub threshold", showarrow: false, xref: "paper", yref: "paper", x: 0.5, y: 0.9 }],
      }
    : emptyLayout(message || "no churn recorded yet");
  return Promise.all([
    Plotly.react($("churn-chart"), bars, barLayout, PLOT_CONFIG),
    Plotly.react($("size-chart"), sizes, sizeLayout, PLOT_CONFIG),
    Plotly.react($("hubs-trend-chart"), trend, trendLayout, PLOT_CONFIG),
  ]);
}

async function refreshChurn(repo) {
  try {
    await renderChurn(await loadChurn(repo), "");
  } catch (error) {
    if (!(error instanceof HttpError) || error.status !== 404) throw error;
    await renderChurn([], "The churn ledger is not available on this service yet.");
  }
}

async function refresh() {
  const repositories = await getJson("repositories");
  const names = repositories.items.map((r) => r.repo);
  const wanted = new URLSearchParams(location.search).get("repo");
  if (!names.includes(state.repo)) state.repo = names.includes(wanted) ? wanted : names[0] || null;
  renderRepositories(repositories.items);
  if (state.repo === null) return;
  const repo = state.repo;
  const data = await getJson(`dashboard/data/${enc(repo)}`);
  await Promise.all([renderMap(data), renderHubs(data), refreshChurn(repo)]);
  if (state.selected !== null && data.neighborhoods.some((n) => n.id === state.selected)) {
    await showMembers(state.selected);
  }
  state.updates += 1;
  document.body.dataset.repo = repo;
  document.body.dataset.deltaSeq = String(data.delta_seq);
  document.body.dataset.updates = String(state.updates);
}

// One refresh at a time; events arriving meanwhile fold into one more refresh.
function scheduleRefresh() {
  if (state.refreshing) {
    state.again = true;
    return state.refreshing;
  }
  state.refreshing = refresh()
    .catch((error) => console.error("dashboard refresh failed", error))
    .finally(() => {
      state.refreshing = null;
      if (state.again) {
        state.again = false;
        scheduleRefresh();
      }
    });
  return state.refreshing;
}

function listen() {
  const events = new EventSource("dashboard/events");
  const status = $("live-status");
  events.onopen = () => {
    status.textContent = "live";
    status.classList.add("live");
  };
  // The service ends each stream after a while and the browser reconnects at once:
  // only a stream that stays down is worth showing.
  events.onerror = () => {
    setTimeout(() => {
      if (events.readyState !== EventSource.OPEN) {
        status.textContent = "reconnecting";
        status.classList.remove("live");
      }
    }, 3000);
  };
  events.addEventListener("model", (message) => {
    const repos = JSON.parse(message.data).repos;
    const before = JSON.stringify(state.signatures);
    state.signatures = repos;
    if (JSON.stringify(repos) !== before) scheduleRefresh();
  });
}

function start() {
  $("repo-picker").addEventListener("change", (event) => {
    state.repo = event.target.value;
    state.selected = null;
    const url = new URL(location.href);
    url.searchParams.set("repo", state.repo);
    history.replaceState(null, "", url);
    scheduleRefresh();
  });
  scheduleRefresh();
  listen();
}

start();

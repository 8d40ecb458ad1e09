/**
 * The operators' status page (issue 17 item 5), GET /status on the operator listener: one HTML document with
 * its style and script inline (no build step, no external asset), which fetches `/health` (the public route's
 * body, served on the operator listener too) and `/status/data` (relayer queues, recent settlements:
 * src/Observability/StatusPageRepo.ts) every `?refresh=<seconds>` (default 5) and renders them. Every value is written
 * with textContent (nothing the service returns is parsed as HTML). Cells carry `data-k` names and rows
 * `data-id`, so a test (test/integration/status-page.test.ts) reads them back in a real browser.
 */
export const STATUS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Settlement service status</title>
<style>
  :root { color-scheme: light dark; --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; --muted: #6e7781; }
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; }
  h1 { font-size: 1.3rem; margin: 0 0 .25rem; }
  h2 { font-size: 1.05rem; margin: 1.5rem 0 .4rem; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: .25rem .6rem; border-bottom: 1px solid #8884; vertical-align: top; }
  th { font-weight: 600; color: var(--muted); }
  td.num { font-variant-numeric: tabular-nums; }
  code, .mono { font-family: ui-monospace, monospace; font-size: 12px; }
  .ok { color: var(--ok); font-weight: 600; } .bad { color: var(--bad); font-weight: 600; }
  .warn { color: var(--warn); } .muted { color: var(--muted); }
  #status { font-size: 1.1rem; }
  .empty { color: var(--muted); font-style: italic; }
  .steps span { display: inline-block; margin-right: .6rem; }
</style>
</head>
<body>
<h1>Settlement service <span id="status" data-k="status">…</span></h1>
<div class="muted">server time <span data-k="server_time">…</span>; page updated <span data-k="updated">never</span>
  (every <span data-k="refresh"></span> s) <span id="error" class="bad" data-k="error"></span></div>

<h2>Waiting for a person</h2>
<table id="alerts"><thead><tr><th>kind</th><th>subject</th><th>what</th><th>since</th></tr></thead><tbody></tbody></table>

<h2>Chains</h2>
<table id="chains"><thead><tr><th>venue</th><th>chain</th><th>ready</th><th>head</th><th>finalized</th>
  <th>lag (blocks)</th><th>operator gas (wei)</th><th>checked</th><th>why not ready</th></tr></thead><tbody></tbody></table>

<h2>Relayer queues</h2>
<div class="muted">pending transactions (readiness: fewer than 32): <span data-k="pending_transactions">…</span></div>
<table id="relayer"><thead><tr><th>venue</th><th>queued</th><th>pending</th><th>included</th><th>oldest (s)</th></tr></thead>
  <tbody></tbody></table>

<h2>Journal</h2>
<div>unpublished rows <span data-k="journal_unpublished">…</span>, oldest
  <span data-k="journal_oldest_unpublished_seconds">…</span> s</div>

<h2>Actors</h2>
<div class="muted">unprocessed cluster messages: <span data-k="mailbox_depth">…</span></div>
<table id="actors"><thead><tr><th>kind</th><th>active</th><th>restarts</th><th>mailbox</th><th>last failure</th></tr></thead>
  <tbody></tbody></table>

<h2>Runners</h2>
<table id="runners"><thead><tr><th>address</th><th>alive</th><th>heartbeat age (ms)</th><th>shards</th><th>singletons</th></tr></thead>
  <tbody></tbody></table>

<h2>Recent settlements</h2>
<table id="settlements"><thead><tr><th>take</th><th>state</th><th>route</th><th>created</th><th>fills and their calls</th></tr></thead>
  <tbody></tbody></table>

<script>
"use strict";
const params = new URLSearchParams(location.search);
const refresh = Math.max(1, Number(params.get("refresh")) || 5);
const $ = (sel) => document.querySelector(sel);
const text = (el, value) => { el.textContent = value === null || value === undefined ? "" : String(value); return el; };
const cell = (k, value, cls) => { const td = document.createElement("td"); td.dataset.k = k; if (cls) td.className = cls; return text(td, value); };
const fill = (table, rows, empty, columns) => {
  const body = $(table + " tbody");
  body.replaceChildren();
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = text(document.createElement("td"), empty);
    td.colSpan = columns; td.className = "empty"; tr.append(td); body.append(tr);
    return;
  }
  for (const [id, cells] of rows) {
    const tr = document.createElement("tr");
    tr.dataset.id = id;
    tr.append(...cells);
    body.append(tr);
  }
};
const yes = (b) => (b ? "yes" : "no");
const lag = (a, b) => { try { const d = BigInt(a) - BigInt(b); return (d < 0n ? 0n : d).toString(); } catch { return ""; } };

function render(health, data) {
  const status = text($("#status"), health.status);
  status.className = health.status === "ok" ? "ok" : "bad";
  text($('[data-k="server_time"]'), health.server_time);
  text($('[data-k="pending_transactions"]'), health.pending_transactions);
  text($('[data-k="journal_unpublished"]'), health.journal_unpublished);
  text($('[data-k="journal_oldest_unpublished_seconds"]'), health.journal_oldest_unpublished_seconds);
  text($('[data-k="mailbox_depth"]'), health.cluster.mailbox_depth);
  fill("#alerts", health.alerts.map((a, i) => [a.kind + ":" + a.subject + ":" + i, [
    cell("kind", a.kind, a.degrades ? "bad" : "warn"), cell("subject", a.subject, "mono"),
    cell("message", a.message), cell("since", a.since)]]), "nothing", 4);
  fill("#chains", health.chains.map((c) => [c.venue, [
    cell("venue", c.venue), cell("chain_id", c.chain_id, "num"), cell("ready", yes(c.ready), c.ready ? "ok" : "bad"),
    cell("block", c.block, "num"), cell("finalized_block", c.finalized_block, "num"),
    cell("lag", lag(c.block, c.finalized_block), "num"), cell("operator_gas", c.operator_gas, "num"),
    cell("checked_at", c.checked_at), cell("error", c.integrity_mismatch ? "integrity mismatch: " + c.integrity_error : c.error)]]),
    "no chain configured", 9);
  fill("#relayer", data.relayer.map((q) => [q.venue, [
    cell("venue", q.venue), cell("queued", q.queued, "num"), cell("pending", q.pending, "num"),
    cell("included", q.included, "num"), cell("oldest_seconds", q.oldest_seconds, "num")]]), "no open requests", 5);
  fill("#actors", health.cluster.actors.map((a) => [a.kind, [
    cell("kind", a.kind), cell("active", a.active, "num"), cell("restarts", a.restarts, "num"),
    cell("mailbox_depth", a.mailbox_depth, "num"),
    cell("last_failure", a.last_failure ? a.last_failure.at + " on " + a.last_failure.runner + ": " + a.last_failure.message : "")]]),
    "no actor reported (no cluster runner)", 5);
  fill("#runners", health.cluster.runners.map((r) => [r.address, [
    cell("address", r.address, "mono"), cell("alive", yes(r.alive), r.alive ? "ok" : "bad"),
    cell("heartbeat_age_ms", r.heartbeat_age_ms, "num"), cell("shards", r.shards, "num"),
    cell("singletons", r.singletons.join(", "))]]), "no runner", 5);
  fill("#settlements", data.settlements.map((t) => {
    const steps = document.createElement("td");
    steps.dataset.k = "fills";
    for (const f of t.fills) {
      const line = document.createElement("div");
      line.className = "steps";
      line.dataset.fill = f.id;
      const head = text(document.createElement("span"), f.id.slice(0, 8) + " " + f.state);
      head.className = "mono";
      line.append(head);
      for (const s of f.steps) {
        const step = text(document.createElement("span"),
          s.call + (s.attempt > 1 ? " #" + s.attempt : "") + ": " + s.status + (s.reason ? " (" + s.reason + ")" : ""));
        step.className = s.status === "final" ? "ok" : s.status === "reverted" || s.status === "replaced" ? "bad" : "warn";
        if (s.tx_hash) step.title = s.tx_hash;
        line.append(step);
      }
      steps.append(line);
    }
    return [t.take_id, [cell("take_id", t.take_id.slice(0, 8), "mono"), cell("state", t.state),
      cell("route", t.from_venue + " → " + t.to_venue), cell("created_at", t.created_at), steps]];
  }), "no settlement yet", 5);
}

async function load() {
  try {
    const [h, d] = await Promise.all([fetch("health", { cache: "no-store" }), fetch("status/data", { cache: "no-store" })]);
    if (!d.ok) throw new Error("status/data answered " + d.status);
    const health = await h.json();
    const data = await d.json();
    render(health, data);
    window.__status = { health, data, renders: ((window.__status && window.__status.renders) || 0) + 1 };
    text($('[data-k="updated"]'), new Date().toISOString());
    text($("#error"), "");
  } catch (e) {
    text($("#error"), "cannot load: " + (e && e.message ? e.message : e));
  }
}
text($('[data-k="refresh"]'), refresh);
load();
setInterval(load, refresh * 1000);
</script>
</body>
</html>
`

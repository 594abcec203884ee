/**
 * The task dashboard: one read-only HTML page, rendered here with the tasks as they stand (so it shows
 * something without JavaScript), whose small inline script then refreshes it from `dashboard/data` and
 * draws the last hour as an SVG chart. No build step, nothing loaded from elsewhere; the script runs
 * under a Content-Security-Policy that allows only itself.
 *
 * Every string from a task (tool name, status message) is escaped on the server and set as text by the
 * script, never as markup.
 */
import type { BoardSnapshot, BoardTask } from './task-board.js';

export const DEFAULT_REFRESH_MS = 2_000;

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text made safe for HTML content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char]!);
}

/** 850 → "850 ms", 12_300 → "12.3 s", 245_000 → "4 min 5 s", 7_380_000 → "2 h 3 min". */
export function formatDuration(ms: number): string {
  const value = Math.max(0, ms);
  if (value < 1_000) return `${Math.round(value)} ms`;
  if (value < 60_000) return `${(value / 1_000).toFixed(1)} s`;
  const seconds = Math.floor(value / 1_000);
  if (seconds < 3_600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  return `${Math.floor(seconds / 3_600)} h ${Math.floor((seconds % 3_600) / 60)} min`;
}

/** The last column: for a live task how long since it last changed, for a finished one how long it ran. */
function lastColumnOf(task: BoardTask, now: number): number {
  const live = task.status === 'working' || task.status === 'input_required';
  return live ? now - task.updatedAt : task.updatedAt - task.createdAt;
}

/** The Server column is shown only when some task names one (several servers behind one endpoint). */
const hasServers = (snapshot: BoardSnapshot): boolean =>
  [...snapshot.live, ...snapshot.recent].some((task) => task.server !== undefined);

function row(task: BoardTask, now: number, servers: boolean): string {
  const cells = [
    `<td class="id">${escapeHtml(task.id)}</td>`,
    `<td class="tool">${escapeHtml(task.tool)}</td>`,
    ...(servers ? [`<td class="server">${escapeHtml(task.server ?? '')}</td>`] : []),
    `<td class="run-by">${escapeHtml(task.runBy)}</td>`,
    `<td><span class="status status-${escapeHtml(task.status)}">${escapeHtml(task.status)}</span></td>`,
    `<td class="message">${escapeHtml(task.statusMessage ?? '')}</td>`,
    `<td class="progress">${escapeHtml(task.progress ?? '')}</td>`,
    `<td class="num">${escapeHtml(formatDuration(now - task.createdAt))}</td>`,
    `<td class="num">${escapeHtml(formatDuration(lastColumnOf(task, now)))}</td>`,
  ];
  return `<tr data-task="${escapeHtml(task.id)}" data-status="${escapeHtml(task.status)}">${cells.join('')}</tr>`;
}

function table(
  id: string,
  tasks: BoardTask[],
  now: number,
  text: { empty: string; lastColumn: string },
  servers: boolean,
): string {
  const body =
    tasks.length === 0
      ? `<tr class="empty"><td colspan="${servers ? 9 : 8}">${escapeHtml(text.empty)}</td></tr>`
      : tasks.map((task) => row(task, now, servers)).join('\n');
  const server = servers ? '<th class="server">Server</th>' : '';
  const { lastColumn } = text;
  return `<table id="${id}">
<thead><tr><th>Task</th><th>Tool</th>${server}<th>Run by</th><th>Status</th><th>Status message</th><th>Progress</th><th>Age</th><th>${lastColumn}</th></tr></thead>
<tbody>${body}</tbody>
</table>`;
}

/** Live tasks now, and the tasks that finished in the last hour, by status. */
function summary(snapshot: BoardSnapshot): string {
  const count = (status: 'completed' | 'failed' | 'cancelled'): number =>
    snapshot.history.buckets.reduce((sum, bucket) => sum + bucket[status], 0);
  const cards: [string, number, string][] = [
    ['working', snapshot.liveByStatus.working, 'working now'],
    ['input_required', snapshot.liveByStatus.input_required, 'input_required now'],
    ['completed', count('completed'), 'completed, last hour'],
    ['failed', count('failed'), 'failed, last hour'],
    ['cancelled', count('cancelled'), 'cancelled, last hour'],
  ];
  return cards
    .map(
      ([status, n, label]) =>
        `<div class="card" data-status="${status}"><b>${n}</b><span>${label}</span></div>`,
    )
    .join('');
}

export interface DashboardPageOptions {
  /** A fresh random value per response: the only script and style the page may run. */
  nonce: string;
  refreshMs: number;
}

export function renderDashboard(snapshot: BoardSnapshot, options: DashboardPageOptions): string {
  const { nonce, refreshMs } = options;
  const { now } = snapshot;
  const servers = hasServers(snapshot);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>taskgate · tasks</title>
<style nonce="${escapeHtml(nonce)}">${STYLE}</style>
</head>
<body data-refresh="${Math.round(refreshMs)}" data-updated="${now}">
<header>
  <h1>taskgate <span>tasks</span></h1>
  <p id="updated" class="muted">as of ${escapeHtml(new Date(now).toISOString())}</p>
</header>
<section class="summary" id="summary">${summary(snapshot)}</section>
<section>
  <h2>Tasks by status, last hour</h2>
  <svg id="chart" viewBox="0 0 ${CHART.width} ${CHART.height}" role="img" aria-label="Tasks by status per minute over the last hour"></svg>
  <p class="legend" id="legend"></p>
  <p class="muted note">Each task active in a minute counts once: by the status it ended with in that minute, or else by its status at the minute's end.</p>
</section>
<section>
  <h2>Live tasks <span class="muted" id="live-total">${snapshot.liveTotal}</span></h2>
  ${table('live', snapshot.live, now, { empty: 'No task is running.', lastColumn: 'Last change' }, servers)}
</section>
<section>
  <h2>Recently finished</h2>
  ${table('recent', snapshot.recent, now, { empty: 'No task has finished yet.', lastColumn: 'Duration' }, servers)}
</section>
<footer class="muted">Task ids are cut to their first 8 characters. "Run by server": a task the upstream server runs itself, as taskgate saw it pass. Read-only; refreshes every ${escapeHtml(formatDuration(refreshMs))}. Metrics: <a href="metrics">/metrics</a>.</footer>
<script nonce="${escapeHtml(nonce)}">${SCRIPT}</script>
</body>
</html>
`;
}

const CHART = { width: 720, height: 200, top: 10, bottom: 22, left: 36, right: 6 };

const STYLE = `
:root { color-scheme: light; --fg: #1d232b; --muted: #6b7480; --line: #e3e6ea; --bg: #f7f8fa;
  --working: #2f6fde; --input_required: #d9a400; --completed: #2e9d5b; --failed: #d64545; --cancelled: #8a8f98; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1100px; padding: 20px 24px 40px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; align-items: baseline; justify-content: space-between; }
h1 { font-size: 20px; margin: 0 0 12px; } h1 span { font-weight: 400; color: var(--muted); }
h2 { font-size: 15px; margin: 22px 0 8px; }
.muted { color: var(--muted); } .note { font-size: 12px; margin: 4px 0 0; }
.summary { display: flex; gap: 10px; flex-wrap: wrap; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 8px 14px; min-width: 120px; }
.card b { display: block; font-size: 22px; } .card span { color: var(--muted); font-size: 12px; }
svg { width: 100%; height: auto; background: #fff; border: 1px solid var(--line); border-radius: 8px; }
svg text { font-size: 10px; fill: var(--muted); }
.legend { display: flex; gap: 14px; margin: 6px 0 0; font-size: 12px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: -1px; }
table { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid var(--line); border-radius: 8px; overflow: hidden; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; font-size: 12px; color: var(--muted); background: #fbfbfc; }
td.id { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
td.num { white-space: nowrap; font-variant-numeric: tabular-nums; }
td.message { max-width: 420px; overflow-wrap: anywhere; }
tr.empty td { color: var(--muted); text-align: center; }
.status { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; color: #fff; white-space: nowrap; }
.status-working, .swatch-working { background: var(--working); }
.status-input_required, .swatch-input_required { background: var(--input_required); }
.status-completed, .swatch-completed { background: var(--completed); }
.status-failed, .swatch-failed { background: var(--failed); }
.status-cancelled, .swatch-cancelled { background: var(--cancelled); }
body.stale #updated { color: var(--failed); }
footer { margin-top: 24px; font-size: 12px; }
`;

/**
 * The page's script, plain ES2020 for any current browser. It only reads `dashboard/data` and writes text
 * and SVG attributes: no markup from data ever reaches innerHTML.
 */
const SCRIPT = `
(() => {
  'use strict';
  const STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
  const COLORS = { working: '#2f6fde', input_required: '#d9a400', completed: '#2e9d5b', failed: '#d64545', cancelled: '#8a8f98' };
  const C = ${JSON.stringify(CHART)};
  const SVG = 'http://www.w3.org/2000/svg';
  const refreshMs = Number(document.body.dataset.refresh) || ${DEFAULT_REFRESH_MS};

  const duration = (ms) => {
    const v = Math.max(0, ms);
    if (v < 1000) return Math.round(v) + ' ms';
    if (v < 60000) return (v / 1000).toFixed(1) + ' s';
    const s = Math.floor(v / 1000);
    if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
    return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
  };
  const el = (tag, attrs, text) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const svg = (tag, attrs) => {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    return node;
  };

  function rows(table, tasks, now, empty, servers) {
    const head = table.querySelector('thead tr'), th = head.querySelector('th.server');
    if (servers && !th) head.children[1].after(el('th', { class: 'server' }, 'Server'));
    if (!servers && th) th.remove();
    const fresh = tasks.map((t) => {
      const live = t.status === 'working' || t.status === 'input_required';
      const tr = el('tr', { 'data-task': t.id, 'data-status': t.status });
      tr.append(el('td', { class: 'id' }, t.id), el('td', { class: 'tool' }, t.tool));
      if (servers) tr.append(el('td', { class: 'server' }, t.server || ''));
      tr.append(el('td', { class: 'run-by' }, t.runBy));
      const status = el('td');
      status.append(el('span', { class: 'status status-' + t.status }, t.status));
      tr.append(status, el('td', { class: 'message' }, t.statusMessage || ''));
      tr.append(el('td', { class: 'progress' }, t.progress || ''));
      tr.append(el('td', { class: 'num' }, duration(now - t.createdAt)));
      tr.append(el('td', { class: 'num' }, duration(live ? now - t.updatedAt : t.updatedAt - t.createdAt)));
      return tr;
    });
    if (fresh.length === 0) {
      const tr = el('tr', { class: 'empty' });
      tr.append(el('td', { colspan: servers ? '9' : '8' }, empty));
      fresh.push(tr);
    }
    table.querySelector('tbody').replaceChildren(...fresh);
  }

  function summary(data) {
    const totals = { ...data.liveByStatus, completed: 0, failed: 0, cancelled: 0 };
    for (const b of data.history.buckets) for (const s of ['completed', 'failed', 'cancelled']) totals[s] += b[s];
    const cards = STATUSES.map((s) => {
      const card = el('div', { class: 'card', 'data-status': s });
      const live = s === 'working' || s === 'input_required';
      card.append(el('b', {}, String(totals[s])), el('span', {}, s + (live ? ' now' : ', last hour')));
      return card;
    });
    document.getElementById('summary').replaceChildren(...cards);
  }

  function chart(data) {
    const { buckets, bucketMs, start } = data.history;
    const node = document.getElementById('chart');
    const w = C.width - C.left - C.right, h = C.height - C.top - C.bottom;
    const max = Math.max(1, ...buckets.map((b) => STATUSES.reduce((sum, s) => sum + b[s], 0)));
    const step = w / buckets.length, bar = Math.max(1, step - 2);
    const parts = [];
    for (const tick of new Set([0, Math.round(max / 2), max])) {
      const y = C.top + h - (tick / max) * h;
      parts.push(svg('line', { x1: C.left, x2: C.width - C.right, y1: y, y2: y, stroke: '#e3e6ea' }));
      const label = svg('text', { x: C.left - 6, y: y + 3, 'text-anchor': 'end' });
      label.textContent = String(tick);
      parts.push(label);
    }
    buckets.forEach((b, i) => {
      let y = C.top + h;
      const group = svg('g', { 'data-minute': i });
      const title = svg('title', {});
      const at = new Date(start + i * bucketMs);
      title.textContent = at.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) + ' — ' +
        STATUSES.filter((s) => b[s] > 0).map((s) => s + ' ' + b[s]).join(', ');
      group.append(title);
      for (const s of STATUSES) {
        if (b[s] === 0) continue;
        const height = (b[s] / max) * h;
        y -= height;
        group.append(svg('rect', { x: C.left + i * step + 1, y, width: bar, height, fill: COLORS[s], 'data-status': s }));
      }
      parts.push(group);
    });
    for (const [i, text] of [[0, '−60 min'], [buckets.length / 2, '−30 min'], [buckets.length - 1, 'now']]) {
      const label = svg('text', { x: C.left + i * step + step / 2, y: C.height - 6, 'text-anchor': 'middle' });
      label.textContent = text;
      parts.push(label);
    }
    node.replaceChildren(...parts);
  }

  function legend() {
    const items = STATUSES.map((s) => {
      const item = el('span');
      item.append(el('span', { class: 'swatch swatch-' + s }), document.createTextNode(s));
      return item;
    });
    document.getElementById('legend').replaceChildren(...items);
  }

  function render(data) {
    const servers = data.live.concat(data.recent).some((t) => t.server !== undefined);
    rows(document.getElementById('live'), data.live, data.now, 'No task is running.', servers);
    rows(document.getElementById('recent'), data.recent, data.now, 'No task has finished yet.', servers);
    document.getElementById('live-total').textContent = String(data.liveTotal);
    document.getElementById('updated').textContent = 'as of ' + new Date(data.now).toLocaleTimeString();
    summary(data);
    chart(data);
    document.body.dataset.updated = String(data.now);
    document.body.classList.remove('stale');
  }

  async function refresh() {
    try {
      const response = await fetch('dashboard/data', { cache: 'no-store', credentials: 'same-origin' });
      if (!response.ok) throw new Error('HTTP ' + response.status);
      render(await response.json());
    } catch (error) {
      document.body.classList.add('stale');
      document.getElementById('updated').textContent = 'not updated: ' + error.message;
    } finally {
      setTimeout(refresh, refreshMs);
    }
  }

  legend();
  refresh();
})();
`;

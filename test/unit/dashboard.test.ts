/**
 * The dashboard's data (the task board) and its page, without a browser; test/integration/dashboard-browser
 * drives the page in Chromium.
 */
import { request, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startAdminListener, type AdminListener } from '../../src/observability/admin.js';
import { parseListen } from '../../src/transport/listen.js';
import { escapeHtml, formatDuration, renderDashboard } from '../../src/observability/dashboard.js';
import { PrometheusMetrics } from '../../src/observability/metrics.js';
import { observeTasks } from '../../src/observability/observe.js';
import { operationsRoutes, type Verdict } from '../../src/observability/routes.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { BUCKET_MS, HISTORY_BUCKETS, TaskBoard } from '../../src/observability/task-board.js';
import type { TaskRecord } from '../../src/tasks/state.js';
import { taskRecord } from '../helpers/records.js';

const T0 = Date.UTC(2026, 0, 5, 12, 0, 0);

const record = (id: number, overrides: Partial<TaskRecord> = {}): TaskRecord =>
  taskRecord({
    taskId: `${String(id).padStart(8, '0')}-aaaa-4bbb-8ccc-dddddddddddd`,
    createdAt: T0,
    lastUpdatedAt: T0,
    ...overrides,
  });

describe('TaskBoard', () => {
  it('shows live tasks, then moves them to the recent ones when they end, with only 8 characters of id', () => {
    let now = T0;
    const board = new TaskBoard({ now: () => now });
    board.created(record(1));
    board.created(record(2, { toolName: 'fast' }));
    now += 1_500;
    board.changed(record(1, { status: 'input_required', lastUpdatedAt: now }));
    let snapshot = board.snapshot();
    expect(snapshot.live.map((task) => [task.id, task.status])).toEqual([
      ['00000001', 'input_required'],
      ['00000002', 'working'],
    ]);
    expect(snapshot.liveByStatus).toEqual({ working: 1, input_required: 1 });
    expect(JSON.stringify(snapshot)).not.toContain('aaaa-4bbb');
    now += 1_000;
    board.changed(record(1, { status: 'completed', lastUpdatedAt: now }));
    board.changed(
      record(2, {
        toolName: 'fast',
        status: 'failed',
        statusMessage: 'Tool call failed: boom',
        lastUpdatedAt: now,
      }),
    );
    snapshot = board.snapshot();
    expect(snapshot.live).toEqual([]);
    expect(snapshot.liveTotal).toBe(0);
    expect(snapshot.recent).toEqual([
      {
        id: '00000002',
        tool: 'fast',
        status: 'failed',
        statusMessage: 'Tool call failed: boom',
        runBy: 'taskgate',
        createdAt: T0,
        updatedAt: T0 + 2_500,
      },
      {
        id: '00000001',
        tool: 'slow',
        status: 'completed',
        runBy: 'taskgate',
        createdAt: T0,
        updatedAt: T0 + 2_500,
      },
    ]);
  });

  it('issue 14.12: shows the tasks servers run themselves, once each, and the last progress of a call', () => {
    let now = T0;
    const board = new TaskBoard({ now: () => now });
    const upstream = (status: 'working' | 'completed', statusMessage?: string) => ({
      taskId: 'upstream-task-1',
      status,
      createdAt: new Date(T0).toISOString(),
      lastUpdatedAt: new Date(now).toISOString(),
      ttl: 60_000,
      ...(statusMessage === undefined ? {} : { statusMessage }),
    });
    board.upstreamTask('s1 upstream-task-1', upstream('working'), 'research');
    board.upstreamTask('s2 upstream-task-1', upstream('working'));
    board.created(record(1));
    board.progress(record(1).taskId, { progress: 3, total: 10, message: 'fetching' });
    now += 1_000;
    board.upstreamTask('s1 upstream-task-1', upstream('working', 'Analyzing sources...'));
    let snapshot = board.snapshot();
    expect(
      snapshot.live.map((task) => [task.id, task.tool, task.runBy, task.statusMessage, task.progress]),
    ).toEqual([
      ['upstream', 'research', 'server', 'Analyzing sources...', undefined],
      ['00000001', 'slow', 'taskgate', undefined, '3/10 · fetching'],
      ['upstream', '(unknown)', 'server', undefined, undefined],
    ]);
    now += 1_000;
    board.upstreamTask('s1 upstream-task-1', upstream('completed'));
    board.upstreamTask('s1 upstream-task-1', upstream('completed'));
    snapshot = board.snapshot();
    expect(snapshot.liveTotal).toBe(2);
    expect(snapshot.recent.map((task) => [task.tool, task.status])).toEqual([['research', 'completed']]);
    expect(snapshot.history.buckets.at(-1)?.completed).toBe(1);
  });

  it('issue 27: counts a server’s task never seen to end as live only until its ttl, or until forgotten', () => {
    let now = T0;
    const board = new TaskBoard({ now: () => now });
    const upstream = (taskId: string, ttl: number | null) => ({
      taskId,
      status: 'working',
      createdAt: new Date(T0).toISOString(),
      lastUpdatedAt: new Date(T0).toISOString(),
      ttl,
    });
    board.upstreamTask('s1 short', upstream('short', 60_000), 'research');
    board.upstreamTask('s1 long', upstream('long', 600_000), 'research');
    board.upstreamTask('s1 forever', upstream('forever', null), 'research');
    expect(board.liveByStatus().working).toBe(3);
    now = T0 + 60_000;
    expect(board.liveByStatus().working).toBe(2);
    expect(board.snapshot().live.map((task) => task.id)).toEqual(['forever', 'long']);
    board.sightingsOf('s1').upstreamTaskForgotten('forever');
    expect(board.snapshot().liveTotal).toBe(1);
    // Forgotten or expired, a task did not end: the last hour counts no end for either.
    expect(board.snapshot().recent).toEqual([]);
    // Seen again after its ttl (a late tasks/get), an expired task stays gone.
    board.upstreamTask('s1 short', upstream('short', 60_000), 'research');
    expect(board.liveByStatus().working).toBe(1);
  });

  it('issue 27: counts progress as a change: "Last change" and the order of the live tasks follow it', () => {
    let now = T0;
    const board = new TaskBoard({ now: () => now });
    board.created(record(1));
    now += 1_000;
    board.created(record(2, { createdAt: now, lastUpdatedAt: now }));
    now += 5_000;
    board.progress(record(1).taskId, { progress: 1, total: 4 });
    board.sightingsOf('s1').upstreamProgress('none', { progress: 1 });
    const { live } = board.snapshot();
    expect(live.map((task) => [task.id, task.updatedAt, task.progress])).toEqual([
      ['00000001', now, '1/4'],
      ['00000002', T0 + 1_000, undefined],
    ]);
    expect(renderDashboard(board.snapshot(), { nonce: 'n', refreshMs: 2_000 })).toContain(
      '<td class="progress">1/4</td><td class="num">6.0 s</td><td class="num">0 ms</td>',
    );
  });

  it('counts each task once per minute: by how it ended in that minute, or its status at the end of it', () => {
    let now = T0 + 5_000;
    const board = new TaskBoard({ now: () => now });
    board.created(record(1));
    board.created(record(2));
    board.created(record(3));
    board.changed(record(1, { status: 'input_required' }));
    board.changed(record(1, { status: 'completed' }));
    board.changed(record(2, { status: 'cancelled' }));
    board.created(record(4));
    board.changed(record(4, { status: 'input_required' }));
    now = T0 + 3 * BUCKET_MS + 1;
    board.changed(record(3, { status: 'failed' }));
    const { history } = board.snapshot();
    expect(history.buckets).toHaveLength(HISTORY_BUCKETS);
    expect(history.bucketMs).toBe(BUCKET_MS);
    expect(history.start).toBe(T0 + 3 * BUCKET_MS - (HISTORY_BUCKETS - 1) * BUCKET_MS);
    const empty = { working: 0, input_required: 0, completed: 0, failed: 0, cancelled: 0 };
    expect(history.buckets.slice(-4)).toEqual([
      { ...empty, working: 1, input_required: 1, completed: 1, cancelled: 1 },
      // Minutes with no change hold the live tasks as they stood.
      { ...empty, working: 1, input_required: 1 },
      { ...empty, working: 1, input_required: 1 },
      // The current minute: task 3 ended in it, task 4 is still waiting.
      { ...empty, input_required: 1, failed: 1 },
    ]);
    const before = history.buckets.slice(0, -4);
    expect(before.every((bucket) => Object.values(bucket).every((n) => n === 0))).toBe(true);
  });

  it('keeps an hour of history and a bounded number of tasks', () => {
    let now = T0;
    const board = new TaskBoard({ now: () => now, recent: 3, maxLive: 2 });
    for (let i = 1; i <= 5; i++) board.changed(record(i, { status: 'completed' }));
    board.created(record(10));
    board.created(record(11));
    board.created(record(12));
    now += 2 * 60 * BUCKET_MS;
    const snapshot = board.snapshot();
    expect(snapshot.recent.map((task) => task.id)).toEqual(['00000005', '00000004', '00000003']);
    expect(snapshot.live.map((task) => task.id)).toEqual(['00000012', '00000011']);
    expect(board.liveByStatus()).toEqual({ working: 2, input_required: 0 });
    expect(snapshot.history.buckets).toHaveLength(HISTORY_BUCKETS);
    expect(snapshot.history.buckets.every((bucket) => bucket.completed === 0 && bucket.working === 2)).toBe(
      true,
    );
  });

  it('cuts long tool names and status messages', () => {
    const board = new TaskBoard();
    board.created(record(1, { toolName: 'x'.repeat(10_000), statusMessage: 'y'.repeat(10_000) }));
    const [task] = board.snapshot().live;
    expect(task!.tool.length).toBeLessThan(400);
    expect(task!.statusMessage!.length).toBeLessThan(400);
  });
});

describe('the dashboard page', () => {
  it('escapes every string from a task', () => {
    const board = new TaskBoard();
    const evil = '<script>alert("x")</script>&\'';
    board.created(record(1, { toolName: evil, statusMessage: `<img src=x onerror=alert(1)>` }));
    board.changed(record(2, { status: 'failed', toolName: evil, statusMessage: '</td></tr><b>' }));
    const html = renderDashboard(board.snapshot(), { nonce: 'n0nce', refreshMs: 1_000 });
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain('<img');
    expect(html).not.toContain('</td></tr><b>');
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;');
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).toContain('<script nonce="n0nce">');
    expect(html).toContain('data-task="00000001" data-status="working"');
    expect(html).toContain('data-refresh="1000"');
  });

  it('issue 32: shows a Server column only when some task names the server it was made through', () => {
    const board = new TaskBoard();
    board.created(record(1));
    const one = renderDashboard(board.snapshot(), { nonce: 'n', refreshMs: 1_000 });
    expect(one).not.toContain('>Server</th>');
    expect(one).not.toContain('class="server"');
    board.created(record(2, { server: 'files' }));
    const snapshot = board.snapshot();
    expect(snapshot.live.map((task) => task.server)).toEqual(['files', undefined]);
    expect(board.liveByServer()).toEqual(
      new Map([
        [undefined, { working: 1, input_required: 0 }],
        ['files', { working: 1, input_required: 0 }],
      ]),
    );
    const several = renderDashboard(snapshot, { nonce: 'n', refreshMs: 1_000 });
    expect(several.match(/<th class="server">Server<\/th>/g)).toHaveLength(2);
    expect(several).toContain('<td class="tool">slow</td><td class="server">files</td>');
    expect(several).toContain('<td colspan="9">No task has finished yet.</td>');
    board
      .sightingsOf('s')
      .upstreamTask(
        { taskId: 'native-1', status: 'working', createdAt: new Date(T0).toISOString() },
        'echo',
        'native',
      );
    board
      .sightingsOf('s')
      .upstreamTask(
        { taskId: 'native-1', status: 'completed', createdAt: new Date(T0).toISOString() },
        undefined,
      );
    expect(board.snapshot().recent).toEqual([
      expect.objectContaining({ id: 'native-1', tool: 'echo', server: 'native', runBy: 'server' }),
    ]);
  });

  it('formats durations for people', () => {
    expect(escapeHtml(`a<b>"c"&'d'`)).toBe('a&lt;b&gt;&quot;c&quot;&amp;&#39;d&#39;');
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(12_340)).toBe('12.3 s');
    expect(formatDuration(245_000)).toBe('4 min 5 s');
    expect(formatDuration(7_380_000)).toBe('2 h 3 min');
    expect(formatDuration(-5)).toBe('0 ms');
  });
});

describe('the admin listener', () => {
  /** The upstream can be started, as far as /readyz is concerned. */
  const ready = (): Promise<string | undefined> => Promise.resolve(undefined);
  let admin: AdminListener | undefined;
  afterEach(async () => {
    await admin?.close();
    admin = undefined;
  });

  function get(
    path: string,
    options: { method?: string; host?: string } = {},
  ): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request(
        new URL(path, admin!.url),
        { method: options.method ?? 'GET', ...(options.host ? { headers: { host: options.host } } : {}) },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  async function start(authorize?: () => Verdict): Promise<TaskBoard> {
    const board = new TaskBoard();
    const metrics = new PrometheusMetrics({ defaultMetrics: false });
    const routes = operationsRoutes({ metrics, board, ...(authorize ? { authorize } : {}) });
    admin = await startAdminListener('127.0.0.1:0', routes, { error: () => undefined } as never, ready);
    return board;
  }

  it('serves /metrics, /healthz, /dashboard and its data on the loopback', async () => {
    const board = await start();
    board.created(record(7, { toolName: 'echo' }));
    expect(admin!.url.hostname).toBe('127.0.0.1');
    const metrics = await get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(metrics.body).toContain('# TYPE taskgate_tasks_created_total counter');
    expect((await get('/healthz')).body).toBe('{"status":"ok"}');
    const page = await get('/dashboard?refresh=50');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    const csp = String(page.headers['content-security-policy']);
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    expect(nonce).toBeDefined();
    expect(page.body).toContain(`<script nonce="${nonce}">`);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    // Refresh is bounded below.
    expect(page.body).toContain('data-refresh="250"');
    const data = await get('/dashboard/data');
    expect(JSON.parse(data.body)).toMatchObject({
      live: [{ id: '00000007', tool: 'echo', status: 'working' }],
    });
  });

  it('issue 14.12: answers its root with links to the others, and /dashboard/ with a redirect', async () => {
    await start();
    const root = await get('/');
    expect(root.status).toBe(200);
    for (const path of ['/dashboard', '/metrics', '/healthz']) expect(root.body).toContain(`href="${path}"`);
    const slash = await get('/dashboard/');
    expect([slash.status, slash.headers.location]).toEqual([308, '/dashboard']);
  });

  it('refuses other methods, unknown paths, a foreign Host, and what authorize refuses', async () => {
    await start();
    expect((await get('/metrics', { method: 'POST' })).status).toBe(405);
    expect((await get('/nothing')).status).toBe(404);
    expect((await get('/dashboard', { host: 'evil.example:80' })).status).toBe(403);
    await admin!.close();
    await start(() => 'unauthenticated');
    expect((await get('/dashboard')).status).toBe(401);
    await admin!.close();
    await start(() => 'forbidden');
    const forbidden = await get('/dashboard');
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toMatch(/for operators.*auth\.adminSubjects/);
    expect((await get('/healthz')).status).toBe(200);
  });

  it('puts the pages of observeTasks behind the authorize it is given', async () => {
    const store = new MemoryTaskStore({ maxTasks: 10, maxResultBytes: 1_000 });
    const metrics = new PrometheusMetrics({ defaultMetrics: false });
    const seen: string[] = [];
    const authorize = (req: IncomingMessage): Verdict => {
      seen.push(req.url ?? '');
      return req.headers.authorization === 'Bearer operator' ? 'allowed' : 'unauthenticated';
    };
    const observed = observeTasks(store, metrics, { debug: () => undefined } as never, { authorize });
    admin = await startAdminListener(
      '127.0.0.1:0',
      observed.routes,
      { error: () => undefined } as never,
      ready,
    );
    expect((await get('/metrics')).status).toBe(401);
    expect((await get('/dashboard/data')).status).toBe(401);
    expect(seen).toEqual(['/metrics', '/dashboard/data']);
    observed.close();
    await store.close();
  });

  it('binds the loopback when given only a port', () => {
    expect(parseListen('9464')).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(parseListen('0.0.0.0:9464')).toEqual({ host: '0.0.0.0', port: 9464 });
    expect(parseListen('[::1]:9464')).toEqual({ host: '[::1]', port: 9464 });
  });
});

/**
 * The task dashboard in a real headless Chromium (Debian's chromium, driven by playwright-core): the page
 * loads from a running taskgate, shows a task the test created, and follows it to its end by itself.
 * A screenshot is kept as test-artifacts/dashboard.png.
 *
 * Needs /usr/bin/chromium (`apt-get install chromium`; .ci/run installs it). Without it the test is
 * skipped, except under CI, where it fails.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, Gateway, TASK_AWARE } from '../helpers/taskgate.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));
/** The flags this machine needs (docs: machines/node-svc): no sandbox as root, no network of its own. */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const WAIT = { timeout: 15_000 };

const available = existsSync(CHROMIUM);
if (!available && process.env.CI)
  throw new Error(`${CHROMIUM} is missing: .ci/run should have installed chromium`);

describe.skipIf(!available)('the task dashboard in Chromium', () => {
  let gateway: Gateway;
  let browser: Browser;
  let client: Client;

  beforeAll(async () => {
    gateway = await Gateway.start([process.execPath, FIXTURES.legacy]);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    client = new Client({ name: 'dashboard-test', version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(new StreamableHTTPClientTransport(gateway.url));
  });

  afterAll(async () => {
    await client?.close();
    await browser?.close();
    await gateway?.stop();
  });

  it('shows a task the test created, and follows it until it completes', async () => {
    const page: Page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    await page.goto(new URL('/dashboard?refresh=250', gateway.url).href);
    await page.waitForSelector('#live tr.empty', WAIT);
    expect(await page.title()).toBe('taskgate · tasks');

    // The task waits on an elicitation that the test answers when it chooses: no timing involved.
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    let asked!: () => void;
    const wasAsked = new Promise<void>((resolve) => (asked = resolve));
    client.setRequestHandler(ElicitRequestSchema, async () => {
      asked();
      await answered;
      return { action: 'accept', content: { answer: 'yes' } };
    });
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'elicit', arguments: { message: 'go on?' }, task: {} } },
      CreateTaskResultSchema,
    );
    const result = client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    const id = task.taskId.slice(0, 8);

    await wasAsked;
    const live = await page.waitForSelector(
      `#live tr[data-task="${id}"][data-status="input_required"]`,
      WAIT,
    );
    expect(await live.$eval('td.tool', (cell) => cell.textContent)).toBe('elicit');
    await page.waitForSelector('#summary .card[data-status="input_required"] b:text-is("1")', WAIT);

    answer();
    await result;
    const done = await page.waitForSelector(`#recent tr[data-task="${id}"][data-status="completed"]`, WAIT);
    expect(await done.$eval('td .status', (badge) => badge.textContent)).toBe('completed');
    expect(await page.$(`#live tr[data-task="${id}"]`)).toBeNull();
    await page.waitForSelector('#chart rect[data-status="completed"]', WAIT);
    expect(await page.$eval('body', (body) => body.classList.contains('stale'))).toBe(false);
    // The page never holds the whole task id.
    expect(await page.content()).not.toContain(task.taskId);

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: `${ARTIFACTS}dashboard.png`, fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it("issue 14.12: shows the last progress of a task's call", async () => {
    const page: Page = await browser.newPage();
    await page.goto(new URL('/dashboard?refresh=250', gateway.url).href);
    const { task } = await client.request(
      {
        method: 'tools/call',
        params: { name: 'progress', arguments: { steps: 3 }, task: {}, _meta: { progressToken: 'board' } },
      },
      CreateTaskResultSchema,
    );
    await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    const row = `#recent tr[data-task="${task.taskId.slice(0, 8)}"]`;
    await page.waitForSelector(`${row} td.progress:text-is("3/3 · step 3")`, WAIT);
    expect(await page.$eval(`${row} td.run-by`, (cell) => cell.textContent)).toBe('taskgate');
    await page.close();
  });

  it('issue 14.12: shows a task the server runs itself, passed through, until it ends', async () => {
    const native = await Gateway.start([process.execPath, FIXTURES.native]);
    const nativeClient = new Client({ name: 'dashboard-test', version: '1' }, { capabilities: TASK_AWARE });
    try {
      await nativeClient.connect(new StreamableHTTPClientTransport(native.url));
      const page: Page = await browser.newPage();
      await page.goto(new URL('/dashboard?refresh=250', native.url).href);
      const { task } = await nativeClient.request(
        { method: 'tools/call', params: { name: 'sleep', arguments: { ms: 60_000 }, task: {} } },
        CreateTaskResultSchema,
      );
      const id = task.taskId.slice(0, 8);
      const live = await page.waitForSelector(`#live tr[data-task="${id}"][data-status="working"]`, WAIT);
      expect(await live.$eval('td.run-by', (cell) => cell.textContent)).toBe('server');
      expect(await live.$eval('td.tool', (cell) => cell.textContent)).toBe('sleep');
      await nativeClient.experimental.tasks.cancelTask(task.taskId);
      await page.waitForSelector(`#recent tr[data-task="${id}"][data-status="cancelled"]`, WAIT);
      await page.close();
    } finally {
      await nativeClient.close();
      await native.stop();
    }
  });
});

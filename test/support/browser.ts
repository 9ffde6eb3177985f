/**
 * The console in a real browser: Debian's Chromium (installed by scripts/deps) driven by playwright-core,
 * each page checked by axe-core and photographed into test-artifacts/console/.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { AxeBuilder } from '@axe-core/playwright';

export const CHROMIUM = process.env.AGENTPLANE_CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS = resolve(fileURLToPath(import.meta.url), '../../../../test-artifacts/console');

let launched: Promise<Browser> | undefined;

/** One browser for the whole run; each suite opens contexts (cookie jars) of its own. */
export function browser(): Promise<Browser> {
  // Root cannot use Chromium's sandbox; the pages are the project's own.
  return (launched ??= chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] }));
}

export async function closeBrowser(): Promise<void> {
  if (launched) await (await launched).close();
  launched = undefined;
}

export interface ConsoleSession {
  context: BrowserContext;
  page: Page;
  /** The console's own URL: `<api>/console/`. */
  consoleUrl: string;
  close(): Promise<void>;
}

/** A fresh browser profile on the console's sign-in page. */
export async function openConsole(
  apiUrl: string,
  options: { colorScheme?: 'light' | 'dark'; prefix?: string } = {},
): Promise<ConsoleSession> {
  const context = await (
    await browser()
  ).newContext({ colorScheme: options.colorScheme ?? 'light', viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(20_000);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  const consoleUrl = `${apiUrl}${options.prefix ?? ''}/console/`;
  await page.goto(consoleUrl);
  return {
    context,
    page,
    consoleUrl,
    async close() {
      await context.close();
      assert.deepEqual(errors, [], 'the console threw in the page');
    },
  };
}

/** Signs in with the form, as a person would, and waits for the navigation. */
export async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Console' }).waitFor();
}

/** Goes to a console path (`/runs/run_…`) the way a deep link would. */
export async function visit(session: ConsoleSession, path: string): Promise<void> {
  await session.page.goto(session.consoleUrl + path.replace(/^\//, ''));
}

/**
 * No serious or critical accessibility violation on the page as it is now. The console has no frames, so axe runs
 * in the page itself: by default it would open a blank page for every scan to merge frames' results, which costs
 * more than the scan.
 */
export async function assertAccessible(page: Page, what: string): Promise<void> {
  const results = await new AxeBuilder({ page }).setLegacyMode().analyze();
  const grave = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(
    grave.map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help} — ${v.nodes
          .map((n) => n.target.join(' '))
          .slice(0, 3)
          .join('; ')}`,
    ),
    [],
    `accessibility violations on ${what}`,
  );
}

/** Keeps a picture of the page as a test artifact. */
export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import { STORE } from './app.js';
import { ROOT } from './process.js';

/** Debian's Chromium, driven by playwright-core in the browser tests. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = path.join(ROOT, 'test/artifacts');
// axe-core's own file, run in the page through the DevTools protocol: a <script> tag added by the
// test (addScriptTag) is inline, which the dashboard's CSP rightly refuses, and the CSP stays on.
const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core'), 'utf8');

/**
 * A screenshot of the page, and axe-core run on it: no violation of any rule axe runs by default
 * (WCAG 2 A/AA and best practices: contrast, labels, empty table headers, ...). No CSS or text
 * breaks a word in the middle either (overflow-wrap: anywhere, word-break: break-all).
 * `fullPage: false` takes the screenshot of the viewport only, for a page as long as the API
 * reference, whose whole picture costs seconds on a busy machine; axe and the checks still read all of it.
 */
export async function checkPage(
  page: Page,
  name: string,
  options: { fullPage?: boolean } = {},
): Promise<void> {
  const fullPage = options.fullPage ?? true;
  await page.screenshot({ path: path.join(ARTIFACTS, `${STORE}-${name}.png`), fullPage });
  await page.evaluate(AXE);
  // Strings run in the page (this file is compiled without the DOM's types).
  const violations = await page.evaluate(`axe.run().then((result) =>
    result.violations.map((v) => v.id + ': ' + v.nodes.map((n) => JSON.stringify(n.target)).join(' ')))`);
  expect(violations, `${name}: axe violations`).toEqual([]);
  // Every word (between spaces and hyphens) as laid out sits on one line. Secrets and keys are
  // one long token each and may wrap: they are excluded.
  const broken = await page.evaluate(`(() => {
    const out = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement.closest('.secret, script, style')) continue;
      for (const match of node.data.matchAll(/[^\\s-]+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        if (lines.size > 1) out.push(match[0]);
      }
    }
    return out;
  })()`);
  expect(broken, `${name}: words broken across lines`).toEqual([]);
  const breaking = await page.evaluate(`[...document.querySelectorAll('body *')]
    .filter((el) => getComputedStyle(el).overflowWrap === 'anywhere' || getComputedStyle(el).wordBreak === 'break-all')
    .map((el) => el.tagName)`);
  expect(breaking, `${name}: elements that break words`).toEqual([]);
}

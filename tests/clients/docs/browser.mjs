// `make docs-check` (scripts/serve.py --docs): `make serve`'s /docs page in headless Chromium
// (Debian's /usr/bin/chromium driven by playwright-core; no browser of Playwright's own).
// Fails unless Swagger UI finished rendering, lists every operation of the OpenAPI document
// (each method + path, nothing else), opens each one (its parameters, body and answers shown)
// without showing its own error box, and the page raised no
// console error, no uncaught exception, no failed or 4xx/5xx request and no request to another
// origin (the page must work offline). Keeps a full-page screenshot either way.
//
//   node tests/clients/docs/browser.mjs <page url> <openapi.json> <screenshot.png>
//
// HONGBAO_CHROMIUM overrides the browser (default /usr/bin/chromium).

import { mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { chromium } from "playwright-core";

const RENDER_TIMEOUT_MS = 30_000;
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

const [pageUrl, specPath, screenshot] = process.argv.slice(2);
if (!screenshot) {
  console.error("usage: browser.mjs <page url> <openapi.json> <screenshot.png>");
  process.exit(2);
}
const spec = JSON.parse(readFileSync(specPath, "utf8"));
const expected = Object.entries(spec.paths ?? {}).flatMap(([path, item]) =>
  METHODS.filter((m) => m in item).map((m) => `${m.toUpperCase()} ${path}`),
);
const origin = new URL(pageUrl).origin;
const problems = [];

const browser = await chromium.launch({
  executablePath: process.env.HONGBAO_CHROMIUM || "/usr/bin/chromium",
  // playwright-core gives every launch a fresh temporary profile (user-data-dir). Root needs
  // --no-sandbox; the rest keeps Chromium from reaching for the network or a GPU on its own.
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.push(`console error: ${msg.text()}`);
  });
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("request", (req) => {
    if (new URL(req.url()).origin !== origin) problems.push(`request off the server: ${req.url()}`);
  });
  page.on("requestfailed", (req) =>
    problems.push(`request failed: ${req.url()} (${req.failure()?.errorText})`),
  );
  page.on("response", (resp) => {
    if (resp.status() >= 400) problems.push(`HTTP ${resp.status()}: ${resp.url()}`);
  });

  await page.goto(pageUrl);
  try {
    // The page's onComplete mark: Swagger UI has loaded the document and rendered it.
    await page.waitForSelector("body[data-rendered=true]", { timeout: RENDER_TIMEOUT_MS });
    await page.waitForLoadState("networkidle");
  } catch {
    problems.push(`Swagger UI did not finish rendering within ${RENDER_TIMEOUT_MS / 1000} s`);
  }

  // Each operation is an .opblock: its method's label and its path's data-path.
  const listed = await page.$$eval(".swagger-ui .opblock", (blocks) =>
    blocks.map(
      (b) =>
        `${b.querySelector(".opblock-summary-method")?.textContent?.trim()} ` +
        `${b.querySelector(".opblock-summary-path")?.getAttribute("data-path")}`,
    ),
  );
  const shown = new Set(listed);
  for (const op of expected) if (!shown.has(op)) problems.push(`not listed: ${op}`);
  for (const op of shown) if (!expected.includes(op)) problems.push(`listed, not in ${specPath}: ${op}`);
  mkdirSync(dirname(screenshot), { recursive: true });
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(`${listed.length} operations listed (${expected.length} in ${specPath})`);
  console.log(`screenshot: ${screenshot}`);

  // Swagger UI resolves an operation's parameters, bodies and answers when it is opened: open
  // each one, so their rendering is checked too (errors land in the console or the error box).
  const blocks = await page.$$(".swagger-ui .opblock");
  for (const block of blocks) {
    await (await block.$(".opblock-summary-control"))?.click();
    await block.waitForSelector(".opblock-body .responses-wrapper", { timeout: 10_000 }).catch(
      () => problems.push(`did not open: ${listed[blocks.indexOf(block)]}`),
    );
  }
  await page.waitForLoadState("networkidle");
  const errorBox = await page.$(".swagger-ui .errors-wrapper");
  if (errorBox) problems.push(`Swagger UI shows errors: ${(await errorBox.innerText()).trim()}`);
  console.log(`${blocks.length} operations opened`);
} finally {
  await browser.close();
}

if (problems.length) {
  console.error(`FAIL  ${pageUrl}:\n` + problems.map((p) => `      ${p}`).join("\n"));
  process.exit(1);
}
console.log(`PASS  ${pageUrl}: every operation listed, no console error, no page error`);

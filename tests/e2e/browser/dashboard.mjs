// Loads ospreyd's dashboard in Debian's headless Chromium (no browser is
// downloaded: playwright-core drives /usr/bin/chromium) while the test
// keeps frames flowing, reads the model's frames/s as the page shows it
// for a while, and saves a screenshot.
//
//   node dashboard.mjs URL SCREENSHOT MODEL USER_DATA_DIR
//
// Prints one JSON line: {"fps": [values seen], "state": "...", "url": the page's URL at the
// end (a token given in its fragment is taken out of it), "screenshot": path}.
// Exit 0 when the frames/s became non-zero and changed, 1 otherwise.
import { chromium } from "playwright-core";

const [url, shot, model, userDir] = process.argv.slice(2);
const SAMPLE_MS = 500, MAX_MS = 30000;

const ctx = await chromium.launchPersistentContext(userDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 800 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let ok = false;
const fps = [];
let state = null;
let at = null;
try {
  const page = ctx.pages()[0] || (await ctx.newPage());
  page.on("pageerror", (e) => console.error("page error:", e.message));
  await page.goto(url);
  const card = `.model[data-model="${model}"]`;
  await page.waitForSelector(`${card} .fps`, { timeout: 15000 });
  const end = Date.now() + MAX_MS;
  while (Date.now() < end) {
    const v = Number(await page.textContent(`${card} .fps`));
    state = await page.textContent(`${card} .state`);
    fps.push(v);
    const nonzero = fps.filter((x) => x > 0);
    if (nonzero.length >= 3 && new Set(nonzero).size >= 2) { ok = true; break; }
    await page.waitForTimeout(SAMPLE_MS);
  }
  await page.waitForTimeout(1200); // one more event: the chart has a few points
  await page.screenshot({ path: shot, fullPage: true });
  at = page.url();
} finally {
  await ctx.close();
}
console.log(JSON.stringify({ fps, state, url: at, screenshot: shot }));
process.exit(ok ? 0 : 1);

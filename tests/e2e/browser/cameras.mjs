// Loads ospreyd's dashboard in Debian's headless Chromium while ospreyd
// watches a camera: waits until the camera's card shows its newest frame
// (a picture fetched with the token) and a non-zero frames/s, and the
// cameras' event list has events, one with its snapshot; then saves a
// screenshot.
//
//   node cameras.mjs URL SCREENSHOT CAMERA EVENT_WITH_SNAPSHOT USER_DATA_DIR
//
// Prints one JSON line: {"fps": [values seen], "frames": distinct pictures
// seen, "width": the picture's natural width, "events": rows listed,
// "thumb": the natural width of the event's snapshot, "screenshot": path}.
// Exit 0 when all of that was seen within the time, 1 otherwise.
import { chromium } from "playwright-core";

const [url, shot, camera, eventId, userDir] = process.argv.slice(2);
const SAMPLE_MS = 500, MAX_MS = 40000;

const ctx = await chromium.launchPersistentContext(userDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 1000 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let ok = false;
const fps = [], srcs = new Set();
let width = 0, events = 0, thumb = 0;
try {
  const page = ctx.pages()[0] || (await ctx.newPage());
  page.on("pageerror", (e) => console.error("page error:", e.message));
  await page.goto(url);
  const card = `.camera[data-camera="${camera}"]`;
  await page.waitForSelector(`${card} .fps`, { timeout: 15000 });
  const end = Date.now() + MAX_MS;
  while (Date.now() < end) {
    fps.push(Number(await page.textContent(`${card} .fps`)));
    const img = await page.$eval(`${card} img`, (i) => ({ src: i.src, w: i.naturalWidth }));
    if (img.w > 0) { srcs.add(img.src); width = img.w; }
    events = await page.$$eval("#camevents li[data-id]", (l) => l.length);
    thumb = await page.$$eval(`#camevents li[data-id="${eventId}"] img`, (l) => (l.length ? l[0].naturalWidth : 0));
    if (fps.some((x) => x > 0) && srcs.size >= 2 && events > 0 && thumb > 0) { ok = true; break; }
    await page.waitForTimeout(SAMPLE_MS);
  }
  await page.screenshot({ path: shot, fullPage: true });
} finally {
  await ctx.close();
}
console.log(JSON.stringify({ fps, frames: srcs.size, width, events, thumb, screenshot: shot }));
process.exit(ok ? 0 : 1);

// End-to-end test of the web console in headless Chromium, run by
// host/console/e2e_test.go (make test) against a real gateway on loopback:
// sign in with a management key, set and remove the response cache
// default, create a key, send a request with it, and
// find the request in the activity list and its cost in the usage chart.
// Environment: SWITCHYARD_BASE (http://127.0.0.1:port), SWITCHYARD_KEY (a
// management key), CHROMIUM (the browser binary), ARTIFACTS (screenshot
// directory).
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const base = process.env.SWITCHYARD_BASE;
const mgmtKey = process.env.SWITCHYARD_KEY;
const artifacts = process.env.ARTIFACTS ?? "build/test-artifacts/console";
const wasmDir = process.env.WASM_DIR ?? "../build/wasm";
assert.ok(base && mgmtKey && process.env.CHROMIUM, "SWITCHYARD_BASE, SWITCHYARD_KEY and CHROMIUM must be set");
mkdirSync(artifacts, { recursive: true });

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  headless: true,
  // Containers often run as root without user namespaces.
  args: ["--no-sandbox", "--disable-dev-shm-usage"],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
// Generous bounds: make test runs this beside every other package.
// Bounds, not timing assertions: under `go test -race` beside other packages
// on two cores, publishing a module (compiling it) took over 30 s.
page.setDefaultTimeout(120_000);
const problems = [];
page.on("pageerror", (e) => problems.push("page error: " + e.message));
page.on("console", (m) => {
  if (m.type() === "error" && !/status of 40\d/.test(m.text())) problems.push("console error: " + m.text());
});
const tmp = mkdtempSync(join(tmpdir(), "console-e2e-"));
let step = 0;
const shot = (name) => page.screenshot({ path: join(artifacts, `${String(++step).padStart(2, "0")}-${name}.png`), fullPage: true });

try {
  // 1. Sign in. A wrong key is refused first.
  await page.goto(base + "/console/");
  await page.fill("#login input[name=key]", "sk-sy-v1-wrong");
  await page.click("#login button[type=submit]");
  await page.getByText("The gateway does not accept this key.").waitFor();
  await shot("login-refused");
  await page.fill("#login input[name=key]", mgmtKey);
  await page.click("#login button[type=submit]");
  await page.locator("#keys").waitFor();
  await shot("keys");

  // 1b. The response cache's default for the account: saved, refused
  // when the plugin's schema refuses it, removed.
  await page.fill("#cache-default textarea[name=options]", '{"ttl": 600}');
  await page.click("#cache-default button[type=submit]");
  await page.locator("#response-cache .current", { hasText: '"ttl":600' }).waitFor();
  await page.fill("#cache-default textarea[name=options]", '{"mode": "fuzzy"}');
  await page.click("#cache-default button[type=submit]");
  await page.locator("#response-cache .error", { hasText: "mode" }).waitFor();
  await page.locator("#response-cache .current", { hasText: '"ttl":600' }).waitFor();
  await shot("response-cache-default");
  await page.click("#cache-default button[type=button]");
  await page.locator("#response-cache .current", { hasText: "No default" }).waitFor();

  // 2. Create a key. Its name is markup, which must show as text.
  const keyName = `e2e <img src=x onerror=alert(1)> ${Date.now()}`;
  await page.fill("#create-key input[name=name]", keyName);
  await page.fill("#create-key input[name=limit]", "5");
  await page.click("#create-key button[type=submit]");
  const secret = await page.locator("#created-key input.secret").inputValue();
  assert.match(secret, /^sk-sy-v1-/, "the new key's secret is shown");
  const row = page.locator("#keys tbody tr", { hasText: keyName });
  await row.waitFor();
  assert.equal(await page.locator("#keys img").count(), 0, "a key name became markup");
  assert.match(await row.innerText(), /\$5\.0000/, "the new key's limit is listed");
  await shot("key-created");

  // 3. A request with the new key, as a client would send it.
  const resp = await fetch(base + "/api/v1/chat/completions", {
    method: "POST",
    headers: { Authorization: "Bearer " + secret, "Content-Type": "application/json" },
    body: JSON.stringify({ model: "test/chat", messages: [{ role: "user", content: "hello from the console test" }], max_tokens: 16 }),
  });
  const body = await resp.json();
  assert.equal(resp.status, 200, JSON.stringify(body));
  const genId = body.id;
  const cost = body.usage.cost;
  assert.ok(genId && cost > 0, "the request has an id and a cost: " + JSON.stringify(body.usage));

  // 4. The request in the activity list, reached from the key's row (the
  // list filtered by the key). Records settle asynchronously: reload the
  // list until it shows, for a bounded time.
  await row.locator("a").click();
  await page.waitForURL(/#\/activity\?key=/);
  const genRow = page.locator(`#generations tr[data-id="${genId}"]`);
  for (let i = 0; ; i++) {
    await page.locator("#activity-list").waitFor();
    if (await genRow.count()) break;
    if (i >= 40) {
      await shot("activity-missing");
      assert.fail(`generation ${genId} is not in the activity list: ${await page.locator("#activity-list").innerText()}`);
    }
    await page.waitForTimeout(250);
    await page.click("#screen form button[type=submit]");
  }
  assert.match(await genRow.innerText(), /test\/chat/);
  await genRow.click();
  await page.locator('#generation-detail dd[data-field="id"]', { hasText: genId }).waitFor();
  const charged = Number(await page.locator('#generation-detail dd[data-field="total_cost"]').innerText());
  assert.ok(Math.abs(charged - cost) < 1e-12, `detail total_cost ${charged}, response usage.cost ${cost}`);
  // Content storage is off by default: the detail says how to turn it on.
  await page.locator("#generation-content", { hasText: "store_content" }).waitFor();
  await shot("activity-detail");

  // 4b. The switch turns content storage on: the next request's prompt and
  // completion show in its detail.
  const storeSwitch = page.locator("#store-content input[name=store_content]");
  assert.equal(await storeSwitch.isChecked(), false, "content storage is off by default");
  await storeSwitch.check();
  await page.locator("#store-content", { hasText: "the account's choice" }).waitFor();
  const stored = await fetch(base + "/api/v1/chat/completions", {
    method: "POST",
    headers: { Authorization: "Bearer " + secret, "Content-Type": "application/json" },
    body: JSON.stringify({ model: "test/chat", messages: [{ role: "user", content: "keep this prompt" }], max_tokens: 16 }),
  }).then((r) => r.json());
  const storedRow = page.locator(`#generations tr[data-id="${stored.id}"]`);
  for (let i = 0; !(await storedRow.count()); i++) {
    assert.ok(i < 40, `generation ${stored.id} is not in the activity list`);
    await page.waitForTimeout(250);
    await page.click("#screen form button[type=submit]");
  }
  await storedRow.click();
  await page.locator("#generation-content").getByText("keep this prompt", { exact: true }).waitFor();
  await shot("activity-content");
  await storeSwitch.uncheck();
  await page.locator("#store-content", { hasText: "the account's choice" }).waitFor();
  assert.equal(await storeSwitch.isChecked(), false, "the switch turned storage off again");

  // 5. Their cost in the usage chart: today's test/chat bar is these two
  // requests (the only ones this gateway served).
  await page.click("nav a[href='#/usage']");
  const today = new Date().toISOString().slice(0, 10);
  const bar = page.locator(`#usage-chart rect[data-day="${today}"][data-series="test/chat"]`);
  await bar.waitFor();
  const shown = Number((await bar.getAttribute("data-value")).replace(/^\$/, ""));
  const both = cost + stored.usage.cost;
  assert.ok(Math.abs(shown - both) < 1e-12, `chart shows ${shown} for test/chat today, the two requests cost ${both}`);
  await page.locator("#credits dd").first().waitFor();
  await shot("usage");

  // 6. Modules: publish two versions of a plugin in the account's scope,
  // roll back to the first, make it default-on.
  await page.click("nav a[href='#/modules']");
  await page.locator('#modules tr[data-module="openai"]').first().waitFor();
  const manifest = JSON.parse(readFileSync(join(wasmDir, "response-healing.json"), "utf8"));
  for (const version of ["1.0.0", "1.1.0"]) {
    const mf = join(tmp, `healer-${version}.json`);
    // A time limit a loaded machine cannot run into while the module's
    // runtime initialises (the gateway's ceiling is raised to match).
    writeFileSync(mf, JSON.stringify({ ...manifest, name: "healer", version, limits: { ...manifest.limits, timeout_ms: 20000 }, config_schema: { ...manifest.config_schema, properties: { id: { const: "healer" }, enabled: { type: "boolean" } } } }));
    await page.setInputFiles("#publish-module input[name=manifest]", mf);
    await page.setInputFiles("#publish-module input[name=wasm]", join(wasmDir, "response-healing.wasm"));
    await page.selectOption("#publish-module select[name=scope]", "account");
    await page.click("#publish-module button[type=submit]");
    await page.getByText(`Published healer@${version} and activated it.`).waitFor();
  }
  const healer = page.locator('#modules tr[data-module="healer"]');
  assert.equal(await healer.count(), 2);
  assert.match(await page.locator('#modules tr.active[data-module="healer"]').innerText(), /1\.1\.0/);
  await page.locator('#modules tr.active[data-module="healer"] button', { hasText: "Roll back" }).click();
  await page.getByText("Rolled healer back.").waitFor();
  assert.match(await page.locator('#modules tr.active[data-module="healer"]').innerText(), /1\.0\.0/, "rollback activated 1.0.0");
  await page.locator('#modules tr.active[data-module="healer"] input[type=checkbox]').check();
  await page.getByText("healer is now default-on.").waitFor();
  assert.ok(await page.locator('#modules tr.active[data-module="healer"] input[type=checkbox]').isChecked());
  // The version no longer active goes (after the confirmation dialog).
  page.once("dialog", (d) => d.accept());
  await page.locator('#modules tr[data-module="healer"]:not(.active) button', { hasText: "Delete" }).click();
  await page.getByText("Deleted healer@1.1.0.").waitFor();
  assert.equal(await healer.count(), 1, "one version of healer left after the delete");
  await shot("modules");
  // 7. Provider health.
  await page.click("nav a[href='#/providers']");
  const alpha = page.locator('#providers section[data-provider="alpha"]');
  await alpha.waitFor();
  assert.match(await alpha.innerText(), /test\/chat/);
  await shot("providers");

  assert.deepEqual(problems, [], "the page logged errors");
  console.log("console e2e: ok");
} catch (err) {
  await shot("failure").catch(() => {});
  console.error(err);
  console.log("console e2e: FAILED");
  process.exitCode = 1;
} finally {
  await browser.close();
  rmSync(tmp, { recursive: true, force: true });
}

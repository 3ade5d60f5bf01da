import { get, put } from "../api";
import { clear, h } from "../dom";
import { errorBox, fail, ok } from "../ui";

// The response cache's default for the account's requests (PUT
// /accounts/me/response_cache, docs/response-cache.md "Turning it on"):
// the options of the cache plugin's plugins[] item, as JSON. Each key can
// have its own (the Keys table's "Cache" button), over the account's.

type Options = Record<string, unknown> | null;

export function cachePanel(): HTMLElement {
  const current = h("p", { class: "current" });
  const input = h("textarea", {
    name: "options",
    rows: 2,
    cols: 60,
    placeholder: '{"mode": "semantic", "ttl": 600}',
    "aria-label": "response cache default options (JSON)",
  });
  const save = h("button", { type: "submit" }, "Save default");
  const off = h("button", { type: "button" }, "Remove default");
  const form = h("form", { id: "cache-default", class: "inline" }, h("label", {}, "Options ", input), save, off);
  const panel = h(
    "section",
    { id: "response-cache" },
    h("h3", {}, "Response cache"),
    h("p", {}, "On for every request of this account when set; a request's own plugins entry is merged over it, and a key's default wins over the account's."),
    current,
    form,
  );

  function show(o: Options): void {
    clear(current, o === null ? "No default: the cache runs when a request asks for it." : "Default: " + JSON.stringify(o));
    input.value = o === null ? "" : JSON.stringify(o);
  }
  async function set(o: Options): Promise<void> {
    try {
      const r = await put<{ data: { response_cache: Options } }>("/accounts/me/response_cache", { response_cache: o });
      show(r.data.response_cache);
      ok(panel, o === null ? "Response cache default removed." : "Response cache default saved.");
    } catch (err) {
      fail(panel, err);
    }
  }
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    let o: Options;
    try {
      o = input.value.trim() === "" ? null : JSON.parse(input.value);
    } catch {
      fail(panel, new Error("The options must be a JSON object, e.g. {\"mode\": \"semantic\"}."));
      return;
    }
    await set(o);
  });
  off.addEventListener("click", () => set(null));
  get<{ data: { response_cache: Options } }>("/accounts/me/response_cache").then(
    (r) => show(r.data.response_cache),
    (err) => clear(current, errorBox(err)),
  );
  return panel;
}

// keyCache asks for a key's own default (empty: its account's) and saves it.
export async function keyCache(hash: string, name: string, where: HTMLElement): Promise<void> {
  let was = "";
  try {
    const r = await get<{ data: { response_cache: Options } }>(`/keys/${encodeURIComponent(hash)}/response_cache`);
    was = r.data.response_cache === null ? "" : JSON.stringify(r.data.response_cache);
  } catch (err) {
    fail(where, err);
    return;
  }
  const v = window.prompt(`Response cache options for “${name}” as JSON (empty: the account's default; {"enabled": false}: off)`, was);
  if (v === null) return;
  try {
    const o = v.trim() === "" ? null : JSON.parse(v);
    await put(`/keys/${encodeURIComponent(hash)}/response_cache`, { response_cache: o });
    ok(where, `Response cache of “${name}” updated.`);
  } catch (err) {
    fail(where, err instanceof SyntaxError ? new Error("The options must be a JSON object.") : err);
  }
}

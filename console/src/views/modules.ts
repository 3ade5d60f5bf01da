import { del, get, post, put } from "../api";
import { clear, h, when } from "../dom";
import { errorBox, fail, ok } from "../ui";

interface Module {
  name: string;
  version: string;
  scope: string;
  sha256: string;
  active: boolean;
  default: boolean;
  source: string;
  published_at: string;
}

// The API's scope parameter for a module as listed: "" is gateway-wide.
const scopeParam = (m: Module) => (m.scope === "" || m.scope === "global" ? "global" : "account");

export async function modulesView(root: HTMLElement): Promise<void> {
  const list = h("div", { id: "modules" });
  const manifest = h("input", { type: "file", name: "manifest", accept: ".json,application/json", required: true });
  const wasm = h("input", { type: "file", name: "wasm", accept: ".wasm,application/wasm", required: true });
  const scope = h("select", { name: "scope" }, h("option", { value: "account" }, "this account"), h("option", { value: "global" }, "gateway-wide (operator)"));
  const activate = h("input", { type: "checkbox", name: "activate", checked: true });
  const form = h(
    "form",
    { class: "inline", id: "publish-module" },
    h("label", {}, "Manifest ", manifest),
    h("label", {}, "Module ", wasm),
    h("label", {}, "Scope ", scope),
    h("label", {}, activate, " activate"),
    h("button", { type: "submit" }, "Publish"),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const mf = manifest.files?.[0];
      const bin = wasm.files?.[0];
      if (!mf || !bin) throw new Error("choose a manifest.json and a .wasm file");
      const m = JSON.parse(await mf.text());
      const r = await post<{ data: { name: string; version: string; active: boolean } }>("/modules", {
        manifest: m,
        wasm: await base64(bin),
        scope: scope.value,
        activate: activate.checked,
      });
      form.reset();
      await load();
      ok(list, `Published ${r.data.name}@${r.data.version}${r.data.active ? " and activated it" : ""}.`);
    } catch (err) {
      fail(list, err);
    }
  });

  async function act(what: string, f: () => Promise<unknown>): Promise<void> {
    try {
      await f();
      await load();
      ok(list, what);
    } catch (err) {
      fail(list, err);
    }
  }

  async function load(): Promise<void> {
    try {
      const mods = (await get<{ data: Module[] }>("/modules")).data ?? [];
      mods.sort((a, b) => a.scope.localeCompare(b.scope) || a.name.localeCompare(b.name) || b.published_at.localeCompare(a.published_at));
      clear(
        list,
        h(
          "table",
          {},
          h("thead", {}, h("tr", {}, ["Name", "Version", "Scope", "Published", "Source", "State", "Default-on", ""].map((t) => h("th", {}, t)))),
          h(
            "tbody",
            {},
            mods.map((m) => {
              const path = `/modules/${encodeURIComponent(m.name)}`;
              const sc = scopeParam(m);
              const actions: HTMLElement[] = [];
              if (!m.active) {
                const b = h("button", { type: "button", class: "small" }, "Activate");
                b.addEventListener("click", () => void act(`Activated ${m.name}@${m.version}.`, () => post(`${path}/activate`, { version: m.version, scope: sc })));
                // A version that is not active can go on its own (the
                // account's quota counts stored versions).
                const d = h("button", { type: "button", class: "small danger" }, "Delete");
                d.addEventListener("click", () => {
                  if (confirm(`Delete ${m.name}@${m.version}? It cannot be activated again.`))
                    void act(`Deleted ${m.name}@${m.version}.`, () => del(`${path}/versions/${encodeURIComponent(m.version)}?scope=${sc}`));
                });
                actions.push(b, d);
              } else {
                const b = h("button", { type: "button", class: "small" }, "Roll back");
                b.addEventListener("click", () => void act(`Rolled ${m.name} back.`, () => post(`${path}/rollback`, { scope: sc })));
                const d = h("button", { type: "button", class: "small danger" }, "Delete module");
                d.addEventListener("click", () => {
                  if (confirm(`Delete every version of ${m.name}? It stops running now.`))
                    void act(`Deleted ${m.name}.`, () => del(`${path}?scope=${sc}`));
                });
                actions.push(b, d);
              }
              const def = h("input", { type: "checkbox", checked: m.default, "aria-label": `default-on ${m.name}` });
              def.addEventListener("change", () => void act(`${m.name} is ${def.checked ? "now" : "no longer"} default-on.`, () => put(`${path}/default`, { enabled: def.checked, scope: sc })));
              return h(
                "tr",
                { "data-module": m.name, class: m.active ? "active" : "" },
                h("td", { class: "mono" }, m.name),
                h("td", { class: "mono" }, m.version),
                h("td", {}, m.scope === "" ? "global" : m.scope),
                h("td", {}, when(m.published_at)),
                h("td", {}, m.source),
                h("td", {}, m.active ? "active" : "inactive"),
                h("td", {}, m.active ? def : ""),
                h("td", {}, actions),
              );
            }),
          ),
        ),
      );
    } catch (err) {
      clear(list, errorBox(err));
    }
  }

  clear(root, h("h2", {}, "Modules"), form, list);
  await load();
}

async function base64(f: File): Promise<string> {
  const bytes = new Uint8Array(await f.arrayBuffer());
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

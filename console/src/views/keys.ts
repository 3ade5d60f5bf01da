import { get, patch, post, qs } from "../api";
import { clear, h, usd, when } from "../dom";
import { errorBox, fail, ok } from "../ui";
import { cachePanel, keyCache } from "./cache";

interface Key {
  hash: string;
  name: string;
  label: string;
  disabled: boolean;
  is_management_key: boolean;
  limit: number | null;
  limit_remaining: number | null;
  limit_reset: string | null;
  usage: number;
  usage_daily: number;
  created_at: string;
}

export async function keysView(root: HTMLElement): Promise<void> {
  const list = h("div");
  const created = h("div", { id: "created-key" });
  const name = h("input", { name: "name", required: true, maxlength: 256, placeholder: "ci-pipeline" });
  const limit = h("input", { name: "limit", type: "number", min: 0, step: "any", placeholder: "none" });
  const reset = h(
    "select",
    { name: "limit_reset" },
    h("option", { value: "" }, "lifetime"),
    h("option", { value: "daily" }, "daily"),
    h("option", { value: "weekly" }, "weekly"),
    h("option", { value: "monthly" }, "monthly"),
  );
  const mgmt = h("input", { name: "management", type: "checkbox" });
  const form = h(
    "form",
    { class: "inline", id: "create-key" },
    h("label", {}, "Name ", name),
    h("label", {}, "Limit (USD) ", limit),
    h("label", {}, "Reset ", reset),
    h("label", {}, mgmt, " management key"),
    h("button", { type: "submit" }, "Create key"),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body: Record<string, unknown> = { name: name.value.trim(), management: mgmt.checked };
    if (limit.value !== "") body.limit = Number(limit.value);
    if (reset.value) body.limit_reset = reset.value;
    try {
      const r = await post<{ data: Key; key: string }>("/keys", body);
      // The secret is shown once, as text in a read-only field to copy.
      clear(
        created,
        h(
          "div",
          { class: "notice" },
          h("p", {}, `Key “${r.data.name}” created. Copy the secret now: it is not shown again.`),
          h("input", { readonly: true, class: "secret", value: r.key, "aria-label": "new key secret" }),
        ),
      );
      form.reset();
      await load();
    } catch (err) {
      fail(created, err);
    }
  });

  async function load(): Promise<void> {
    try {
      const r = await get<{ data: Key[] }>("/keys" + qs({ include_disabled: "true", limit: 1000 }));
      clear(list, table(r.data));
    } catch (err) {
      clear(list, errorBox(err));
    }
  }

  function table(keys: Key[]): HTMLElement {
    return h(
      "table",
      { id: "keys" },
      h("thead", {}, h("tr", {}, ["Name", "Key", "Kind", "Limit", "Remaining", "Usage (today / all)", "Created", "State", ""].map((t) => h("th", {}, t)))),
      h(
        "tbody",
        {},
        keys.map((k) => {
          const setLimit = h("button", { type: "button", class: "small" }, "Set limit");
          setLimit.addEventListener("click", async () => {
            const v = window.prompt(`Spending limit for “${k.name}” in USD (empty: no limit)`, k.limit === null ? "" : String(k.limit));
            if (v === null) return;
            try {
              await patch(`/keys/${encodeURIComponent(k.hash)}`, { limit: v.trim() === "" ? null : Number(v) });
              ok(list, `Limit of “${k.name}” updated.`);
              await load();
            } catch (err) {
              fail(list, err);
            }
          });
          const cache = h("button", { type: "button", class: "small" }, "Cache");
          cache.addEventListener("click", () => keyCache(k.hash, k.name, list));
          const toggle = h("button", { type: "button", class: "small" }, k.disabled ? "Enable" : "Disable");
          toggle.addEventListener("click", async () => {
            try {
              await patch(`/keys/${encodeURIComponent(k.hash)}`, { disabled: !k.disabled });
              await load();
            } catch (err) {
              fail(list, err);
            }
          });
          return h(
            "tr",
            { "data-hash": k.hash, class: k.disabled ? "disabled" : "" },
            // The key's requests: the activity list filtered by its hash.
            h("td", {}, h("a", { href: "#/activity?key=" + encodeURIComponent(k.hash), title: "this key's requests" }, k.name)),
            h("td", { class: "mono" }, k.label),
            h("td", {}, k.is_management_key ? "management" : "inference"),
            h("td", {}, k.limit === null ? "none" : `${usd(k.limit)}${k.limit_reset ? " " + k.limit_reset : ""}`),
            h("td", {}, k.limit_remaining === null ? "—" : usd(k.limit_remaining)),
            h("td", {}, `${usd(k.usage_daily)} / ${usd(k.usage)}`),
            h("td", {}, when(k.created_at)),
            h("td", {}, k.disabled ? "disabled" : "active"),
            h("td", {}, setLimit, " ", cache, " ", toggle),
          );
        }),
      ),
    );
  }

  clear(root, h("h2", {}, "Keys"), form, created, list, cachePanel());
  await load();
}

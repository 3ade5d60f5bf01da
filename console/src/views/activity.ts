import { get, put, qs } from "../api";
import { clear, h, usd, when } from "../dom";
import { errorBox } from "../ui";

interface Generation {
  id: string;
  key_hash: string;
  model: string;
  provider_name: string;
  status: string;
  finish_reason?: string;
  streamed: boolean;
  usage?: { prompt_tokens?: number; completion_tokens?: number };
  total_cost: number;
  latency_ms?: number;
  created_at: string;
  http_referer?: string | null;
  app_title?: string;
  [k: string]: unknown;
}

// GET /generation/content's data (docs/api.md): stored only when the
// account turned content storage on.
interface Content {
  input: { messages?: { role?: string; content?: unknown }[]; prompt?: string };
  output: { completion: string | null; reasoning: string | null };
  truncated?: boolean;
}

export async function activityView(root: HTMLElement): Promise<void> {
  const list = h("div", { id: "activity-list" });
  const detail = h("div", { id: "generation-detail" });
  const more = h("button", { type: "button", hidden: true }, "Older");
  const model = h("input", { name: "model", placeholder: "model id" });
  // #/activity?key=<hash> (from the keys screen) pre-fills the filter.
  const params = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const key = h("input", { name: "key", placeholder: "key hash", value: params.get("key") ?? "" });
  const provider = h("input", { name: "provider", placeholder: "provider" });
  const status = h(
    "select",
    { name: "status" },
    ["", "success", "error", "cancelled", "interrupted", "expired"].map((s) => h("option", { value: s }, s || "any status")),
  );
  const form = h(
    "form",
    { class: "inline" },
    h("label", {}, model),
    h("label", {}, provider),
    h("label", {}, key),
    h("label", {}, status),
    h("button", { type: "submit" }, "Filter"),
  );
  let cursor = "";
  const body = h("tbody");
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void load(true);
  });
  more.addEventListener("click", () => void load(false));

  async function load(fresh: boolean): Promise<void> {
    if (fresh) {
      cursor = "";
      body.replaceChildren();
    }
    try {
      const r = await get<{ data: Generation[]; next_cursor?: string }>(
        "/generations" + qs({ limit: 50, cursor, model: model.value.trim(), key: key.value.trim(), provider: provider.value.trim(), status: status.value }),
      );
      for (const g of r.data ?? []) body.appendChild(row(g));
      cursor = r.next_cursor ?? "";
      more.hidden = !cursor;
      if (!body.children.length) clear(list, h("p", { class: "muted" }, "No requests yet."));
      else clear(list, h("table", { id: "generations" }, h("thead", {}, h("tr", {}, ["Time", "Model", "Provider", "App", "Status", "Tokens in / out", "Cost", "Latency"].map((t) => h("th", {}, t)))), body));
    } catch (err) {
      clear(list, errorBox(err));
    }
  }

  function row(g: Generation): HTMLElement {
    const tr = h(
      "tr",
      { "data-id": g.id, class: "clickable", tabindex: 0 },
      h("td", {}, when(g.created_at)),
      h("td", { class: "mono" }, g.model),
      h("td", {}, g.provider_name || "—"),
      // The app its attribution headers named (text, never markup: h sets text).
      h("td", { class: "app", title: g.http_referer ?? "" }, g.app_title || g.http_referer || "—"),
      h("td", { class: "status-" + g.status }, g.status),
      h("td", { class: "num" }, `${g.usage?.prompt_tokens ?? 0} / ${g.usage?.completion_tokens ?? 0}`),
      h("td", { class: "num" }, usd(g.total_cost)),
      h("td", { class: "num" }, g.latency_ms !== undefined ? `${g.latency_ms} ms` : "—"),
    );
    const open = () => void show(g.id);
    tr.addEventListener("click", open);
    tr.addEventListener("keydown", (e) => {
      if ((e as KeyboardEvent).key === "Enter") open();
    });
    return tr;
  }

  async function show(id: string): Promise<void> {
    try {
      const g = (await get<{ data: Record<string, unknown> }>("/generation" + qs({ id }))).data;
      clear(detail, h("h3", {}, "Generation ", h("span", { class: "mono" }, id)), h("dl", { class: "detail" }, flatten(g).map(([k, v]) => [h("dt", {}, k), h("dd", { "data-field": k }, v)])));
      detail.appendChild(await contentOf(id));
      detail.scrollIntoView({ block: "nearest" });
    } catch (err) {
      clear(detail, errorBox(err));
    }
  }

  clear(root, h("h2", {}, "Activity"), await storageSwitch(), form, list, more, detail);
  await load(true);
}

// GET/PUT /accounts/me/store_content's data (docs/api.md).
interface Storage {
  store_content: boolean;
  source: "account" | "operator";
}

// storageSwitch turns the account's content storage on and off (PUT
// /accounts/me/store_content; a management key only: the gateway refuses
// others with 403, shown beside the switch). Off, a generation's detail
// says none was stored; on, what the account's keys send from then on is
// kept for retention.content.
async function storageSwitch(): Promise<HTMLElement> {
  const box = h("input", { type: "checkbox", name: "store_content" }) as HTMLInputElement;
  const note = h("span", { class: "muted" });
  const show = (s: Storage) => {
    box.checked = s.store_content;
    note.textContent = s.source === "account" ? " (the account's choice)" : " (the operator's default)";
  };
  const wrap = h("p", { id: "store-content" }, h("label", {}, box, " Store prompts and completions of new requests"), note);
  try {
    show((await get<{ data: Storage }>("/accounts/me/store_content")).data);
  } catch (err) {
    box.disabled = true;
    note.textContent = " " + (err instanceof Error ? err.message : String(err));
    return wrap;
  }
  box.addEventListener("change", async () => {
    box.disabled = true;
    try {
      show((await put<{ data: Storage }>("/accounts/me/store_content", { store_content: box.checked })).data);
    } catch (err) {
      box.checked = !box.checked;
      note.textContent = " " + (err instanceof Error ? err.message : String(err));
    } finally {
      box.disabled = false;
    }
  });
  return wrap;
}

// contentOf shows a generation's stored prompt and completion, or why
// there is none (the 404 says how to turn storage on).
async function contentOf(id: string): Promise<HTMLElement> {
  try {
    const c = (await get<{ data: Content }>("/generation/content" + qs({ id }))).data;
    const input = c.input.prompt !== undefined ? [["prompt", c.input.prompt]] : (c.input.messages ?? []).map((m) => [m.role ?? "", typeof m.content === "string" ? m.content : JSON.stringify(m.content)]);
    const output = [["completion", c.output.completion ?? "—"], ...(c.output.reasoning ? [["reasoning", c.output.reasoning]] : [])];
    return h(
      "section",
      { id: "generation-content" },
      h("h4", {}, "Stored content", c.truncated ? " (truncated)" : ""),
      h("dl", { class: "detail" }, [...input, ...output].map(([k, v]) => [h("dt", {}, k), h("dd", { class: "pre" }, v)])),
    );
  } catch (err) {
    return h("p", { class: "muted", id: "generation-content" }, err instanceof Error ? err.message : String(err));
  }
}

// flatten lists a record's fields as dotted paths and display strings.
function flatten(v: unknown, prefix = ""): [string, string][] {
  if (v !== null && typeof v === "object" && !Array.isArray(v)) {
    return Object.entries(v as Record<string, unknown>).flatMap(([k, x]) => flatten(x, prefix ? `${prefix}.${k}` : k));
  }
  return [[prefix, v === null || v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v)]];
}

import { get, qs } from "../api";
import { stackedBars, type Point } from "../chart";
import { clear, h, usd } from "../dom";
import { errorBox } from "../ui";

interface Row {
  date: string;
  model?: string;
  key?: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost: string;
}

interface Credits {
  total_credits: number;
  total_usage: number;
  balance: number;
  reserved: number;
  available: number;
}

const day = (d: Date) => d.toISOString().slice(0, 10);

export async function usageView(root: HTMLElement): Promise<void> {
  const credits = h("div", { id: "credits" });
  const chart = h("div", { id: "usage-chart" });
  const tbl = h("div");
  const now = new Date();
  const from = h("input", { type: "date", name: "from", value: day(new Date(now.getTime() - 29 * 86400e3)) });
  const to = h("input", { type: "date", name: "to", value: day(now) });
  const metric = h(
    "select",
    { name: "metric" },
    h("option", { value: "cost" }, "cost"),
    h("option", { value: "requests" }, "requests"),
    h("option", { value: "tokens" }, "tokens"),
  );
  const group = h("select", { name: "group_by" }, h("option", { value: "model" }, "per model"), h("option", { value: "key" }, "per key"));
  const form = h(
    "form",
    { class: "inline" },
    h("label", {}, "From ", from),
    h("label", {}, "To ", to),
    h("label", {}, "Show ", metric),
    h("label", {}, group),
    h("button", { type: "submit" }, "Update"),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void load();
  });
  metric.addEventListener("change", () => void load());
  group.addEventListener("change", () => void load());

  async function loadCredits(): Promise<void> {
    try {
      const c = (await get<{ data: Credits }>("/credits")).data;
      clear(
        credits,
        h(
          "dl",
          { class: "cards" },
          [
            ["Credits", c.total_credits],
            ["Used", c.total_usage],
            ["Balance", c.balance],
            ["Held by requests in flight", c.reserved],
            ["Available", c.available],
          ].map(([k, v]) => h("div", {}, h("dt", {}, String(k)), h("dd", {}, usd(v as number)))),
        ),
      );
    } catch (err) {
      clear(credits, errorBox(err));
    }
  }

  async function load(): Promise<void> {
    try {
      const by = group.value as "model" | "key";
      const rows = (await get<{ data: Row[] }>("/activity" + qs({ from: from.value, to: to.value, group_by: by }))).data ?? [];
      const m = metric.value;
      const points: Point[] = rows.map((r) => {
        const value = m === "cost" ? Number(r.cost) : m === "requests" ? r.requests : r.prompt_tokens + r.completion_tokens;
        return { day: r.date, series: (by === "model" ? r.model : r.key) ?? "—", value, label: m === "cost" ? "$" + r.cost : String(value) };
      });
      clear(chart, stackedBars(points, `${m === "cost" ? "Cost (USD)" : m} per day ${by === "model" ? "and model" : "and key"}`, daysBetween(from.value, to.value)));
      clear(
        tbl,
        h(
          "table",
          { id: "usage-table" },
          h("thead", {}, h("tr", {}, ["Day", by === "model" ? "Model" : "Key", "Requests", "Prompt tokens", "Completion tokens", "Cost"].map((t) => h("th", {}, t)))),
          h(
            "tbody",
            {},
            rows.map((r) =>
              h(
                "tr",
                {},
                h("td", {}, r.date),
                h("td", { class: "mono" }, (by === "model" ? r.model : r.key) ?? "—"),
                h("td", { class: "num" }, r.requests),
                h("td", { class: "num" }, r.prompt_tokens),
                h("td", { class: "num" }, r.completion_tokens),
                h("td", { class: "num" }, "$" + r.cost),
              ),
            ),
          ),
        ),
      );
    } catch (err) {
      clear(chart, errorBox(err));
      clear(tbl);
    }
  }

  clear(root, h("h2", {}, "Credits and usage"), credits, form, chart, tbl);
  await Promise.all([loadCredits(), load()]);
}

// daysBetween lists the dates from a to b (YYYY-MM-DD), at most 366.
function daysBetween(a: string, b: string): string[] {
  const out: string[] = [];
  const end = Date.parse(b + "T00:00:00Z");
  for (let t = Date.parse(a + "T00:00:00Z"); t <= end && out.length < 366; t += 86400e3) out.push(day(new Date(t)));
  return out;
}

import { get } from "../api";
import { clear, h, when } from "../dom";
import { errorBox } from "../ui";

interface Endpoint {
  model: string;
  upstream_model: string;
  prompt_price: number;
  completion_price: number;
  samples: number;
  failures: number;
  error_rate: number;
  latency_p50: number;
  latency_p90: number;
  throughput_p50: number;
  down: boolean;
  down_until: string | null;
}

interface Provider {
  slug: string;
  name: string;
  adapter: string;
  region: string;
  base_url?: string;
  status: string;
  endpoints: Endpoint[];
}

export async function providersView(root: HTMLElement): Promise<void> {
  const out = h("div", { id: "providers" });
  const refresh = h("button", { type: "button" }, "Refresh");
  refresh.addEventListener("click", () => void load());
  async function load(): Promise<void> {
    try {
      const ps = (await get<{ data: Provider[] }>("/admin/providers")).data ?? [];
      clear(
        out,
        ps.map((p) =>
          h(
            "section",
            { class: "provider", "data-provider": p.slug },
            h("h3", {}, p.name || p.slug, " ", h("span", { class: "badge status-" + p.status }, p.status)),
            h("p", { class: "muted" }, `${p.slug} · adapter ${p.adapter}${p.region ? " · region " + p.region : ""}${p.base_url ? " · " + p.base_url : ""}`),
            h(
              "table",
              {},
              h("thead", {}, h("tr", {}, ["Model", "Upstream model", "Price in / out ($/M)", "Samples", "Error rate", "TTFT p50 / p90", "Tokens/s p50", "State"].map((t) => h("th", {}, t)))),
              h(
                "tbody",
                {},
                p.endpoints.map((e) =>
                  h(
                    "tr",
                    {},
                    h("td", { class: "mono" }, e.model),
                    h("td", { class: "mono" }, e.upstream_model),
                    h("td", { class: "num" }, `${e.prompt_price} / ${e.completion_price}`),
                    h("td", { class: "num" }, e.samples),
                    h("td", { class: "num" }, (e.error_rate * 100).toFixed(1) + "%"),
                    h("td", { class: "num" }, e.latency_p50 ? `${secs(e.latency_p50)} / ${secs(e.latency_p90)}` : "—"),
                    h("td", { class: "num" }, e.throughput_p50 ? e.throughput_p50.toFixed(0) : "—"),
                    h("td", { class: e.down ? "status-error" : "" }, e.down ? `down until ${when(e.down_until)}` : "up"),
                  ),
                ),
              ),
            ),
          ),
        ),
      );
    } catch (err) {
      clear(out, errorBox(err));
    }
  }
  clear(root, h("h2", {}, "Provider health"), h("p", { class: "muted" }, "The router's live window per endpoint: recent outcomes, time to first token, outages. ", refresh), out);
  await load();
}

const secs = (v: number) => (v < 1 ? `${(v * 1000).toFixed(0)} ms` : `${v.toFixed(2)} s`);

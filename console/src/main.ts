import { APIError, call, key, setKey, whenUnauthorized } from "./api";
import { clear, h } from "./dom";
import { activityView } from "./views/activity";
import { keysView } from "./views/keys";
import { modulesView } from "./views/modules";
import { providersView } from "./views/providers";
import { usageView } from "./views/usage";
import "./style.css";

const app = document.getElementById("app")!;

const screens: Record<string, [string, (root: HTMLElement) => Promise<void>]> = {
  keys: ["Keys", keysView],
  usage: ["Credits & usage", usageView],
  activity: ["Activity", activityView],
  modules: ["Modules", modulesView],
  providers: ["Providers", providersView],
};

function login(message = ""): void {
  const input = h("input", {
    type: "password",
    name: "key",
    autocomplete: "off",
    required: true,
    placeholder: "sk-sy-v1-…",
    "aria-label": "management key",
  });
  const msg = h("p", { class: "error", role: "alert" }, message);
  const form = h(
    "form",
    { class: "login", id: "login" },
    h("h1", {}, "Switchyard console"),
    h("p", {}, "Sign in with a management key. It stays in this tab (sessionStorage) and is sent only to this gateway's API."),
    input,
    h("button", { type: "submit" }, "Sign in"),
    msg,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const k = input.value.trim();
    try {
      const me = await call<{ data: { is_management_key: boolean } }>("GET", "/key", undefined, k);
      if (!me.data.is_management_key) {
        msg.textContent = "This is an inference key; the console needs a management key.";
        return;
      }
      setKey(k);
      input.value = "";
      route();
    } catch (err) {
      msg.textContent = err instanceof APIError && err.status === 401 ? "The gateway does not accept this key." : String((err as Error).message ?? err);
    }
  });
  clear(app, form);
  input.focus();
}

function route(): void {
  if (!key()) return login();
  const name = location.hash.replace(/^#\/?/, "").split("?")[0] || "keys";
  const [, view] = screens[name] ?? screens.keys;
  const main = h("main", { id: "screen" });
  const signOut = h("button", { type: "button", class: "link" }, "Sign out");
  signOut.addEventListener("click", () => {
    setKey(null);
    login();
  });
  clear(
    app,
    h(
      "header",
      {},
      h("strong", {}, "Switchyard"),
      h(
        "nav",
        {},
        Object.entries(screens).map(([id, [label]]) => h("a", { href: "#/" + id, class: id === name ? "current" : "", "aria-current": id === name ? "page" : undefined }, label)),
      ),
      signOut,
    ),
    main,
  );
  void view(main);
}

whenUnauthorized(() => {
  setKey(null);
  login("The key was refused (disabled, deleted or expired). Sign in again.");
});
window.addEventListener("hashchange", route);
route();

import { h } from "./dom";

export function errorBox(err: unknown): HTMLElement {
  return h("p", { class: "error", role: "alert" }, err instanceof Error ? err.message : String(err));
}

// fail and ok put a message at the top of el, replacing the last one.
export function fail(el: HTMLElement, err: unknown): void {
  flash(el, errorBox(err));
}

export function ok(el: HTMLElement, msg: string): void {
  flash(el, h("p", { class: "ok", role: "status" }, msg));
}

function flash(el: HTMLElement, msg: HTMLElement): void {
  el.querySelector(":scope > .error, :scope > .ok")?.remove();
  el.prepend(msg);
}

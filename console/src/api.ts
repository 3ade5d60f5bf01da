// The management API with the key the operator typed in. The key lives in
// sessionStorage (this tab only, gone when it closes) and travels only as
// the Authorization header of same-origin fetches: a browser never attaches
// it by itself, so a page on another site cannot make requests with it
// (no cookies, so no CSRF), and the API sends no CORS headers, so another
// origin cannot read answers either.

const STORE = "switchyard.console.key";

export class APIError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
}

export function key(): string | null {
  return sessionStorage.getItem(STORE);
}

export function setKey(k: string | null): void {
  if (k) sessionStorage.setItem(STORE, k);
  else sessionStorage.removeItem(STORE);
}

let onUnauthorized: () => void = () => {};
export function whenUnauthorized(f: () => void): void {
  onUnauthorized = f;
}

export async function call<T = any>(method: string, path: string, body?: unknown, k = key()): Promise<T> {
  const headers: Record<string, string> = { Authorization: "Bearer " + (k ?? "") };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch("/api/v1" + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
    cache: "no-store",
    redirect: "error",
  });
  const text = await resp.text();
  let data: any = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!resp.ok) {
    const msg = data?.error?.message ?? `${resp.status} ${resp.statusText}`;
    if (resp.status === 401 && k === key()) onUnauthorized();
    throw new APIError(resp.status, msg);
  }
  return data as T;
}

export const get = <T = any>(path: string) => call<T>("GET", path);
export const post = <T = any>(path: string, body?: unknown) => call<T>("POST", path, body ?? {});
export const patch = <T = any>(path: string, body: unknown) => call<T>("PATCH", path, body);
export const put = <T = any>(path: string, body: unknown) => call<T>("PUT", path, body);
export const del = <T = any>(path: string) => call<T>("DELETE", path);

export function qs(params: Record<string, string | number | undefined | null>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") u.set(k, String(v));
  const s = u.toString();
  return s ? "?" + s : "";
}

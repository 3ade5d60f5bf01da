//! The host functions of docs/abi.md §5 (import module `switchyard`), with
//! safe wrappers. Each needs its grant in the manifest's
//! `grants.host_functions` ("log", "http", "chat", "count_tokens", "kv",
//! "metrics"):
//! a module importing one it is not granted is refused at load. Only the
//! functions a module calls are imported (the linker drops the rest), so a
//! module that calls none imports nothing from `switchyard`.

use crate::{append_field, fields};

#[cfg(target_arch = "wasm32")]
mod raw {
    #[link(wasm_import_module = "switchyard")]
    extern "C" {
        pub fn log(level: i32, ptr: *const u8, len: i32);
        pub fn http_request(ptr: *const u8, len: i32) -> i64;
        pub fn http_response(ptr: *mut u8, limit: i32) -> i32;
        pub fn chat(ptr: *const u8, len: i32) -> i64;
        pub fn chat_batch(ptr: *const u8, len: i32) -> i64;
        pub fn chat_reserve(ptr: *const u8, len: i32) -> i64;
        pub fn count_tokens(ptr: *const u8, len: i32) -> i64;
        pub fn kv_get(ptr: *const u8, len: i32) -> i64;
        pub fn kv_put(ptr: *const u8, len: i32) -> i64;
        pub fn metric(ptr: *const u8, len: i32) -> i64;
        pub fn result(ptr: *mut u8, limit: i32) -> i32;
    }
}

// Off Wasm (a module's handlers tested natively with `rustc --test`) there
// is no host: every call is denied with a message saying so, and log
// writes to stderr. The same signatures keep the wrappers' code one.
#[cfg(not(target_arch = "wasm32"))]
#[allow(clippy::missing_safety_doc)]
mod raw {
    const NO_HOST: &[u8] = b"switchyard host functions are only available inside a Wasm module";

    pub unsafe fn log(_level: i32, ptr: *const u8, len: i32) {
        let msg = std::slice::from_raw_parts(ptr, len as usize);
        eprintln!("{}", String::from_utf8_lossy(msg));
    }
    pub unsafe extern "C" fn result(ptr: *mut u8, limit: i32) -> i32 {
        let mut f = Vec::new();
        crate::append_field(&mut f, NO_HOST);
        let n = f.len().min(limit.max(0) as usize);
        if n > 0 {
            std::ptr::copy_nonoverlapping(f.as_ptr(), ptr, n);
        }
        f.len() as i32
    }
    pub unsafe extern "C" fn http_response(ptr: *mut u8, limit: i32) -> i32 {
        result(ptr, limit)
    }
    pub unsafe extern "C" fn denied(_ptr: *const u8, _len: i32) -> i64 {
        super::HOST_DENIED
    }
    pub use denied as chat;
    pub use denied as chat_batch;
    pub use denied as chat_reserve;
    pub use denied as count_tokens;
    pub use denied as kv_get;
    pub use denied as kv_put;
    pub use denied as metric;
    pub unsafe fn http_request(ptr: *const u8, len: i32) -> i64 {
        denied(ptr, len)
    }
}

/// Log level debug.
pub const LEVEL_DEBUG: i32 = 0;
/// Log level info.
pub const LEVEL_INFO: i32 = 1;
/// Log level warn.
pub const LEVEL_WARN: i32 = 2;
/// Log level error.
pub const LEVEL_ERROR: i32 = 3;

/// Host call code: not granted, or refused by policy.
pub const HOST_DENIED: i64 = -1;
/// Host call code: the call failed.
pub const HOST_FAILED: i64 = -2;
/// Host call code: kv_get found no such key (or it expired).
pub const HOST_NOT_FOUND: i64 = -3;
/// Host call code: kv_put: the module's store for this account is full.
pub const HOST_QUOTA: i64 = -4;
/// Host call code: the request's budget of calls of this function is spent.
pub const HOST_BUDGET: i64 = -5;

/// At most this many bodies in one `chat_batch`.
pub const MAX_CHAT_BATCH: usize = 8;

/// A host function that failed: `code` is one of the HOST_* codes and
/// `message` the host's explanation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostError {
    /// HOST_DENIED, HOST_FAILED, HOST_NOT_FOUND, HOST_QUOTA or HOST_BUDGET.
    pub code: i64,
    /// What the host said.
    pub message: String,
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn malformed(what: &str) -> HostError {
    HostError { code: HOST_FAILED, message: format!("malformed {} result from host", what) }
}

// The request frame, reused across host calls (a module's instance runs one
// call at a time).
static mut REQ: Vec<u8> = Vec::new();

fn frame(parts: &[&[u8]]) -> &'static [u8] {
    let req = unsafe { &mut *std::ptr::addr_of_mut!(REQ) };
    req.clear();
    for p in parts {
        append_field(req, p);
    }
    req
}

/// Copies a result of `size` bytes through `copy` (http_response or
/// result), split into owned fields; a negative `n` becomes a HostError
/// whose message is the result's first field.
fn collect(n: i64, copy: unsafe extern "C" fn(*mut u8, i32) -> i32, fallback: &str) -> Result<Vec<Vec<u8>>, HostError> {
    let size = if n < 0 { unsafe { copy(std::ptr::null_mut(), 0) as i64 } } else { n };
    let mut buf = vec![0u8; size.max(0) as usize];
    if !buf.is_empty() {
        unsafe { copy(buf.as_mut_ptr(), buf.len() as i32) };
    }
    let mut list = Vec::new();
    let parsed = fields(&mut list, &buf);
    if n < 0 {
        let message = match (parsed, list.first()) {
            (Ok(()), Some(m)) => String::from_utf8_lossy(m).into_owned(),
            _ => fallback.to_string(),
        };
        return Err(HostError { code: n, message });
    }
    if parsed.is_err() {
        return Err(malformed("host function"));
    }
    Ok(list.iter().map(|f| f.to_vec()).collect())
}

fn call(f: unsafe extern "C" fn(*const u8, i32) -> i64, parts: &[&[u8]]) -> Result<Vec<Vec<u8>>, HostError> {
    let req = frame(parts);
    let n = unsafe { f(req.as_ptr(), req.len() as i32) };
    collect(n, raw::result, "host function failed")
}

fn decimal(b: &[u8]) -> i64 {
    std::str::from_utf8(b).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
}

/// Writes a line to the gateway's log, tagged with the module's name (at
/// most 4 KiB a line). Needs the "log" grant.
pub fn log(level: i32, msg: &str) {
    if msg.is_empty() {
        return;
    }
    unsafe { raw::log(level, msg.as_ptr(), msg.len() as i32) }
}

/// An outbound call's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpResponse {
    /// The HTTP status.
    pub status: i64,
    /// `Name: value` lines separated by `\n`.
    pub headers: String,
    /// The body (capped by the host at modules.http.max_response_bytes).
    pub body: Vec<u8>,
}

/// Makes an outbound HTTP call through the host. Needs the "http" grant and
/// the URL's host in `grants.http_domains`. `headers` are `Name: value`
/// lines; a header value or the URL's query may hold `${secret:NAME}` for a
/// secret in `grants.secrets`, which the host substitutes (the module never
/// sees it). Errors: HOST_DENIED (destination or secret not granted, not a
/// public address), HOST_FAILED (connection, timeout, size), HOST_BUDGET.
pub fn http(method: &str, url: &str, headers: &str, body: &[u8]) -> Result<HttpResponse, HostError> {
    let req = frame(&[method.as_bytes(), url.as_bytes(), headers.as_bytes(), body]);
    let n = unsafe { raw::http_request(req.as_ptr(), req.len() as i32) };
    let mut f = collect(n, raw::http_response, "outbound call failed")?;
    if f.len() < 3 {
        return Err(HostError { code: HOST_FAILED, message: "malformed response from host".to_string() });
    }
    let body = f.pop().unwrap_or_default();
    let headers = String::from_utf8_lossy(&f[1]).into_owned();
    Ok(HttpResponse { status: decimal(&f[0]), headers, body })
}

/// One chat sub-request's answer: its HTTP status and body (an error body
/// included: an error status is a result, not a failure).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatResult {
    /// The sub-request's HTTP status.
    pub status: i64,
    /// Its response body.
    pub body: Vec<u8>,
}

fn pairs(f: Vec<Vec<u8>>, want: usize, what: &str) -> Result<Vec<ChatResult>, HostError> {
    if f.len() != 2 * want {
        return Err(malformed(what));
    }
    let mut out = Vec::with_capacity(want);
    let mut it = f.into_iter();
    while let (Some(s), Some(b)) = (it.next(), it.next()) {
        out.push(ChatResult { status: decimal(&s), body: b });
    }
    Ok(out)
}

/// Runs a chat request (an OpenAI-style body; its model is routed like a
/// client's) as a sub-request of the current request, charged to its key
/// and counted in its usage. Needs the "chat" grant. An error is a call
/// that did not run (HOST_DENIED without a request, HOST_BUDGET).
pub fn chat(body: &[u8]) -> Result<ChatResult, HostError> {
    let f = call(raw::chat, &[body])?;
    pairs(f, 1, "chat").map(|mut v| v.remove(0))
}

/// Runs up to MAX_CHAT_BATCH chat sub-requests at the same time; the
/// answers are in the order of `bodies`. A batch that does not fit the
/// request's chat budget is refused whole (HOST_BUDGET); none or too many
/// bodies is HOST_FAILED. Needs the "chat" grant (ABI 1 revision 2).
pub fn chat_batch(bodies: &[&[u8]]) -> Result<Vec<ChatResult>, HostError> {
    let f = call(raw::chat_batch, bodies)?;
    pairs(f, bodies.len(), "chat_batch")
}

/// Holds the worst-case cost of the chat sub-requests the module plans
/// (`{"calls":[{"model","prompt_tokens","max_tokens","turns"?},…]}`) before
/// any runs. Status 200 `{"held","calls"}`, 402 when the account cannot
/// cover them (nothing held). Needs the "chat" grant (revision 2).
pub fn chat_reserve(plan: &[u8]) -> Result<ChatResult, HostError> {
    let f = call(raw::chat_reserve, &[plan])?;
    pairs(f, 1, "chat_reserve").map(|mut v| v.remove(0))
}

/// Counts `text`'s tokens with the gateway's tokenizer for `model`. Needs
/// the "count_tokens" grant.
pub fn count_tokens(model: &str, text: &str) -> Result<u64, HostError> {
    let f = call(raw::count_tokens, &[model.as_bytes(), text.as_bytes()])?;
    let n = f.first().ok_or_else(|| malformed("count_tokens"))?;
    std::str::from_utf8(n).ok().and_then(|s| s.parse().ok()).ok_or_else(|| malformed("count_tokens"))
}

/// Reads `key` from the module's store (scoped to the module and the
/// request's account): `None` when absent or expired. Needs the "kv" grant.
pub fn kv_get(key: &str) -> Result<Option<Vec<u8>>, HostError> {
    match call(raw::kv_get, &[key.as_bytes()]) {
        Ok(mut f) => Ok(Some(if f.is_empty() { Vec::new() } else { f.swap_remove(0) })),
        Err(e) if e.code == HOST_NOT_FOUND => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes `key` (1–512 bytes) = `val` (up to 1 MiB) for `ttl_seconds` (0 =
/// the store's maximum, 30 days). An empty value deletes the key.
/// HOST_QUOTA when the module's store for this account is full. Needs the
/// "kv" grant.
pub fn kv_put(key: &str, val: &[u8], ttl_seconds: u32) -> Result<(), HostError> {
    let ttl = ttl_seconds.to_string();
    call(raw::kv_put, &[key.as_bytes(), val, ttl.as_bytes()]).map(|_| ())
}

/// Deletes `key` (kv_put with an empty value).
pub fn kv_delete(key: &str) -> Result<(), HostError> {
    kv_put(key, b"", 0)
}

/// kv_put for a cache: when the store is full, the host evicts the entries
/// that expire soonest until `val` fits, and says how many it evicted.
/// HOST_QUOTA only for an entry larger than the whole quota.
pub fn kv_put_evicting(key: &str, val: &[u8], ttl_seconds: u32) -> Result<u64, HostError> {
    let ttl = ttl_seconds.to_string();
    let f = call(raw::kv_put, &[key.as_bytes(), val, ttl.as_bytes(), b"evict"])?;
    Ok(f.first().map(|n| decimal(n).max(0) as u64).unwrap_or(0))
}

/// Adds `value` to the counter, or observes it in the histogram, that the
/// module's manifest declares as `name` (`metrics[]`; needs the "metrics"
/// grant). The gateway exports it on /metrics as
/// `switchyard_mod_<name>{module, account}`. An undeclared name is refused
/// (HOST_DENIED), as is a negative counter addition (HOST_FAILED) and a new
/// series past the gateway's bound (HOST_QUOTA).
pub fn metric(name: &str, value: f64) -> Result<(), HostError> {
    let v = value.to_string();
    call(raw::metric, &[name.as_bytes(), v.as_bytes()]).map(|_| ())
}

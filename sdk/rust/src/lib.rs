//! Switchyard guest library for Rust: the guest side of module ABI 1
//! (docs/abi.md), the counterpart of the Go `sdk/`. No dependencies, no
//! build script, and nothing newer than Rust 1.63 (Debian 12's `rustc`,
//! which with `libstd-rust-dev-wasm32` builds for `wasm32-wasi`).
//!
//! A module declares its handlers once with [`export_hooks!`], which
//! writes the ABI's exports (`switchyard_abi_v1`, `sy_input`, `sy_handle`):
//!
//! ```ignore
//! use switchyard::{Hook, In, Out, Error};
//!
//! switchyard::export_hooks! { Hook::PreRequest => pre_request }
//!
//! fn pre_request(input: &In, out: &mut Out) -> Result<(), Error> {
//!     let _ctx = input.field(0);
//!     out.field_str(switchyard::ACTION_CONTINUE);
//!     out.field(b""); // the body is unchanged
//!     out.field(b""); // no summary
//!     Ok(())
//! }
//! ```
//!
//! Frames are read and written as the Go sdk does: an input is split into
//! fields without copying; an output is the status byte 0 followed by
//! fields (a little-endian u32 length, then the bytes), or the status byte
//! 1 followed by the message of the handler's error. The input and output
//! buffers live for the instance and are reused across calls.
//!
//! Panics: Rust's wasm32 targets have no unwinding (the standard library is
//! built with panic=abort, and `-C panic=unwind` is refused), so unlike a
//! Go panic, which the Go sdk recovers into an error output, a Rust panic
//! cannot be turned back into a return from `sy_handle`: it ends in a trap,
//! which the host reports as 502 `module <name>@<version> failed in
//! <hook>: trapped: wasm error: unreachable` and answers by discarding the
//! instance. The library's panic hook writes `panic in <hook>: <message>
//! (at <file>:<line>)` to the module's stderr and, when the crate is built
//! with the `log-panics` feature (`--cfg 'feature="log-panics"'` with plain
//! rustc; the module then imports `log`, so its
//! manifest must grant it), to the gateway's log. Prefer returning
//! [`Error`] from handlers (`?` works with it): that is a clean 502 with
//! your message, and the instance is kept.

#![deny(missing_docs)]

mod host;
pub use host::*;
pub mod json;

use std::fmt;

/// A hook of ABI 1: what a call asks the module to do (docs/abi.md §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Hook {
    /// in: ctx, unified chat request; out: method, path, headers, body.
    ChatRequest = 1,
    /// in: ctx, upstream response body; out: unified chat result.
    ChatResponse = 2,
    /// in: ctx, one SSE event's data, stream state; out: state, chunks….
    ChatStreamEvent = 3,
    /// in: ctx, unified embeddings request; out: method, path, headers, body.
    EmbedRequest = 4,
    /// in: ctx, upstream response body; out: unified embeddings response.
    EmbedResponse = 5,
    /// in: ctx, upstream status, upstream body; out: gateway status, message.
    Error = 6,
    /// in: ctx, unified chat request; out: action, body, summary, optional state.
    PreRequest = 7,
    /// in: ctx, unified chat result; out: action, body, summary.
    PostResponse = 8,
    /// in: ctx, one unified chunk; out: action, then zero or more chunks.
    PostChunk = 9,
    /// in: ctx, tool name, arguments; out: result, cost.
    ToolCall = 10,
}

impl Hook {
    /// The hook with this id, if ABI 1 has one.
    pub fn from_id(id: u32) -> Option<Hook> {
        Some(match id {
            1 => Hook::ChatRequest,
            2 => Hook::ChatResponse,
            3 => Hook::ChatStreamEvent,
            4 => Hook::EmbedRequest,
            5 => Hook::EmbedResponse,
            6 => Hook::Error,
            7 => Hook::PreRequest,
            8 => Hook::PostResponse,
            9 => Hook::PostChunk,
            10 => Hook::ToolCall,
            _ => return None,
        })
    }

    /// The hook's name in manifests and error messages.
    pub fn name(self) -> &'static str {
        match self {
            Hook::ChatRequest => "chat_request",
            Hook::ChatResponse => "chat_response",
            Hook::ChatStreamEvent => "chat_stream_event",
            Hook::EmbedRequest => "embed_request",
            Hook::EmbedResponse => "embed_response",
            Hook::Error => "error",
            Hook::PreRequest => "pre_request",
            Hook::PostResponse => "post_response",
            Hook::PostChunk => "post_chunk",
            Hook::ToolCall => "tool_call",
        }
    }
}

/// Output status byte: fields follow.
pub const STATUS_OK: u8 = 0;
/// Output status byte: the rest is a UTF-8 message; the hook failed.
pub const STATUS_ERROR: u8 = 1;

/// Plugin action: go on; a non-empty body field replaces the body.
pub const ACTION_CONTINUE: &str = "continue";
/// Plugin action: answer now with body (a complete chat result).
pub const ACTION_RESPOND: &str = "respond";
/// Plugin action: refuse; body is `{"code":403,"message":…,"metadata":{…}}`.
pub const ACTION_BLOCK: &str = "block";
/// post_chunk's continue with the plugin's new state first.
pub const ACTION_CONTINUE_STATE: &str = "continue_state";

/// Where the provider's API key goes in a request an adapter builds.
pub const API_KEY_PLACEHOLDER: &str = "${API_KEY}";

/// A hook's failure: its message becomes the output after status byte 1,
/// and the host answers 502 `module … failed in <hook>: <message>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error(pub String);

impl Error {
    /// An error with this message.
    pub fn new(msg: &str) -> Error {
        Error(msg.to_string())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Error {
    fn from(s: &str) -> Error {
        Error(s.to_string())
    }
}

impl From<String> for Error {
    fn from(s: String) -> Error {
        Error(s)
    }
}

impl From<HostError> for Error {
    fn from(e: HostError) -> Error {
        Error(e.message)
    }
}

/// The message of a malformed frame, as abi.ErrFrame words it.
const ERR_FRAME: &str = "abi: malformed frame";

/// A handler runs one hook: `input` holds the input fields, `out` collects
/// the output fields. An `Err` fails the call with its message.
pub type Handler = fn(&In, &mut Out) -> Result<(), Error>;

/// A call's input fields. They borrow the host-written buffer and are
/// valid only during the call.
pub struct In<'a> {
    buf: &'a [u8],
    spans: &'a [(usize, usize)],
}

impl<'a> In<'a> {
    /// The number of input fields.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether there are no input fields.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Field `i`, or an empty slice when absent (the Go sdk's nil).
    pub fn field(&self, i: usize) -> &'a [u8] {
        match self.spans.get(i) {
            Some(&(a, b)) => &self.buf[a..b],
            None => &[],
        }
    }

    /// Field `i` as text; an error when it is not UTF-8.
    pub fn str(&self, i: usize) -> Result<&'a str, Error> {
        std::str::from_utf8(self.field(i)).map_err(|_| Error::new("input field is not UTF-8"))
    }
}

/// Splits `frame` into the (start, end) offsets of its fields, cleared
/// first; a malformed frame is abi.ErrFrame's error.
fn split(dst: &mut Vec<(usize, usize)>, frame: &[u8]) -> Result<(), Error> {
    dst.clear();
    let mut at = 0;
    while at < frame.len() {
        if frame.len() - at < 4 {
            return Err(Error::new(ERR_FRAME));
        }
        let n = u32::from_le_bytes([frame[at], frame[at + 1], frame[at + 2], frame[at + 3]]) as usize;
        at += 4;
        if n > frame.len() - at {
            return Err(Error::new(ERR_FRAME));
        }
        dst.push((at, at + n));
        at += n;
    }
    Ok(())
}

/// Splits `frame` into `dst` (cleared first), as abi.Fields does.
pub fn fields<'a>(dst: &mut Vec<&'a [u8]>, mut frame: &'a [u8]) -> Result<(), Error> {
    dst.clear();
    while !frame.is_empty() {
        if frame.len() < 4 {
            return Err(Error::new(ERR_FRAME));
        }
        let n = u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
        frame = &frame[4..];
        if n > frame.len() {
            return Err(Error::new(ERR_FRAME));
        }
        dst.push(&frame[..n]);
        frame = &frame[n..];
    }
    Ok(())
}

/// Appends one field (length, then bytes) to `dst`, as abi.AppendField does.
pub fn append_field(dst: &mut Vec<u8>, field: &[u8]) {
    dst.extend_from_slice(&(field.len() as u32).to_le_bytes());
    dst.extend_from_slice(field);
}

/// A call's output frame, built in a buffer reused across calls.
pub struct Out {
    buf: Vec<u8>,
    open: Option<usize>,
}

impl Default for Out {
    fn default() -> Out {
        Out::new()
    }
}

impl Out {
    /// An empty output (status ok, no fields).
    pub const fn new() -> Out {
        Out { buf: Vec::new(), open: None }
    }

    fn reset(&mut self) {
        self.buf.clear();
        self.buf.push(STATUS_OK);
        self.open = None;
    }

    /// Appends a complete field.
    pub fn field(&mut self, b: &[u8]) {
        append_field(&mut self.buf, b);
    }

    /// Appends a complete text field.
    pub fn field_str(&mut self, s: &str) {
        append_field(&mut self.buf, s.as_bytes());
    }

    /// Starts a field written piecewise with the write methods; `close`
    /// ends it.
    pub fn open(&mut self) {
        self.open = Some(self.buf.len());
        self.buf.extend_from_slice(&[0, 0, 0, 0]);
    }

    /// Appends to the open field.
    pub fn write(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    /// Appends text to the open field.
    pub fn write_str(&mut self, s: &str) {
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// Appends one byte to the open field.
    pub fn byte(&mut self, c: u8) {
        self.buf.push(c);
    }

    /// Ends the open field by patching its length.
    pub fn close(&mut self) {
        if let Some(at) = self.open.take() {
            let n = (self.buf.len() - at - 4) as u32;
            self.buf[at..at + 4].copy_from_slice(&n.to_le_bytes());
        }
    }

    /// The bytes written to the open field so far (0 when none is open).
    pub fn len(&self) -> usize {
        match self.open {
            Some(at) => self.buf.len() - at - 4,
            None => 0,
        }
    }

    /// Whether the open field is empty so far.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The output frame as the host gets it: the status byte, then the
    /// fields or the message.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    fn fail(&mut self, msg: &str) {
        self.buf.clear();
        self.buf.push(STATUS_ERROR);
        self.buf.extend_from_slice(msg.as_bytes());
        self.open = None;
    }
}

/// Runs `h` on one input frame and leaves the output (fields, or status
/// byte 1 and the error's message) in `out`. This is what `sy_handle`
/// does; on the host it tests a handler through the frame encoding.
pub fn call(h: Handler, frame: &[u8], out: &mut Out) {
    let mut spans = Vec::new();
    run(h, frame, &mut spans, out);
}

fn run(h: Handler, frame: &[u8], spans: &mut Vec<(usize, usize)>, out: &mut Out) {
    out.reset();
    let r = match split(spans, frame) {
        Ok(()) => h(&In { buf: frame, spans }, out),
        Err(e) => Err(e),
    };
    if let Err(e) = r {
        out.fail(&e.0);
    }
}

/// The guest's side of the exports. Not for direct use: `export_hooks!`
/// calls it.
#[doc(hidden)]
pub mod rt {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    // The instance's reused buffers. One instance runs one call at a time
    // (Wasm instances are single threaded), so only one call ever holds
    // the reference state() returns.
    struct State {
        input: Vec<u8>,
        output: Out,
        fields: Vec<(usize, usize)>,
        started: bool,
    }

    static mut STATE: State = State { input: Vec::new(), output: Out::new(), fields: Vec::new(), started: false };
    static CURRENT: AtomicU32 = AtomicU32::new(0);

    fn state() -> &'static mut State {
        unsafe { &mut *std::ptr::addr_of_mut!(STATE) }
    }

    /// sy_input: the reused input buffer, grown only when needed.
    pub fn input(size: u32) -> *mut u8 {
        let st = start();
        // The host writes every byte before sy_handle reads them; the zero
        // fill (of new bytes only) keeps the buffer initialised for Rust.
        st.input.resize(size as usize, 0);
        st.input.as_mut_ptr()
    }

    /// sy_handle: runs the handler `pick` finds for `hook`.
    pub fn handle(hook: u32, size: u32, pick: fn(u32) -> Option<Handler>) -> u64 {
        let st = start();
        CURRENT.store(hook, Ordering::Relaxed);
        match pick(hook) {
            None => {
                let name = Hook::from_id(hook).map(Hook::name).unwrap_or("unknown");
                st.output.fail(&format!("hook {} is not implemented by this module", name));
            }
            Some(h) => {
                let input = &st.input[..(size as usize).min(st.input.len())];
                run(h, input, &mut st.fields, &mut st.output);
            }
        }
        CURRENT.store(0, Ordering::Relaxed);
        let out = &st.output.buf;
        ((out.as_ptr() as u64) << 32) | out.len() as u64
    }

    // start sizes the reused buffers for a usual request (16 KiB in, 4 KiB
    // out, as the Go sdk does) and installs the panic hook, once.
    fn start() -> &'static mut State {
        let st = state();
        if st.started {
            return st;
        }
        st.started = true;
        st.input.reserve(16 << 10);
        st.output.buf.reserve(4 << 10);
        st.fields.reserve(8);
        std::panic::set_hook(Box::new(|info| {
            let hook = Hook::from_id(CURRENT.load(Ordering::Relaxed)).map(Hook::name).unwrap_or("unknown");
            let msg = if let Some(s) = info.payload().downcast_ref::<&str>() {
                *s
            } else if let Some(s) = info.payload().downcast_ref::<String>() {
                s.as_str()
            } else {
                "Box<dyn Any>"
            };
            let line = match info.location() {
                Some(l) => format!("panic in {}: {} (at {}:{})", hook, msg, l.file(), l.line()),
                None => format!("panic in {}: {}", hook, msg),
            };
            eprintln!("{}", line);
            #[cfg(feature = "log-panics")]
            super::log(LEVEL_ERROR, &line);
        }));
        st
    }
}

/// Writes the ABI's exports for the given handlers: the marker
/// `switchyard_abi_v1`, `sy_input` and `sy_handle`. Use it once, at the
/// top level of the module's crate (a `cdylib`). A hook without a handler
/// answers "hook <name> is not implemented by this module", as the Go sdk
/// does.
#[macro_export]
macro_rules! export_hooks {
    ($($hook:expr => $handler:expr),* $(,)?) => {
        #[no_mangle]
        pub extern "C" fn switchyard_abi_v1() {}

        #[no_mangle]
        pub extern "C" fn sy_input(size: u32) -> *mut u8 {
            $crate::rt::input(size)
        }

        #[no_mangle]
        pub extern "C" fn sy_handle(hook: u32, size: u32) -> u64 {
            fn pick(hook: u32) -> Option<$crate::Handler> {
                $(
                    if hook == ($hook as $crate::Hook) as u32 {
                        return Some($handler as $crate::Handler);
                    }
                )*
                None
            }
            $crate::rt::handle(hook, size, pick)
        }
    };
}

#[cfg(test)]
mod tests;

// Switchyard guest library for AssemblyScript on the native ABI (docs/abi.md):
// no Extism, no npm dependency but the AssemblyScript compiler. One file, to
// import by a relative path or to copy into a project (`syctl plugin new
// NAME --lang assemblyscript` does).
//
// A plugin's entry file re-exports the ABI's functions and registers its
// hooks at start, after the globals its hooks read (AssemblyScript runs
// top-level statements in order, at instantiation):
//
//   import { Hook, input, output, register } from "./switchyard";
//   export { switchyard_abi_v1, sy_input, sy_handle } from "./switchyard";
//
//   function preRequest(): void {
//     const ctx = input.string(0); // the ctx JSON
//     output.fieldString("continue");
//     output.field(0, 0); // body unchanged
//     output.field(0, 0); // no summary
//   }
//
//   register(Hook.PreRequest, preRequest);
//
// Build with `asc assembly/index.ts --optimize --noAssert --use abort=`
// (an abort then traps instead of importing env.abort, which the host
// refuses). A hook that returns leaves output as the call's output (status
// ok); output.fail(msg) makes the call a failure with that message (the
// client gets a 502 naming the module and the hook). The input, output and
// host-result buffers are reused and grow only when a call needs more than
// any call before; only the string conveniences (Frame.string and bytes,
// fieldString, log, fail) allocate, so a hot path uses ptr/len, field and
// fieldASCII instead.
//
// Host functions are imported only when used (AssemblyScript leaves unused
// declarations out), so a module imports exactly what it calls, and the
// manifest must grant it (grants.host_functions) or the host refuses the
// module at load.

// ---- buffers ----

// Buf is a growable byte buffer in linear memory, reused across calls.
export class Buf {
  data: ArrayBuffer = new ArrayBuffer(256);
  len: u32 = 0;

  @inline get ptr(): usize {
    return changetype<usize>(this.data);
  }

  reserve(n: u32): void {
    const cap = <u32>this.data.byteLength;
    if (this.len + n <= cap) return;
    let c = cap;
    while (c < this.len + n) c *= 2;
    const next = new ArrayBuffer(<i32>c);
    memory.copy(changetype<usize>(next), this.ptr, this.len);
    this.data = next;
  }

  byte(c: u32): void {
    this.reserve(1);
    store<u8>(this.ptr + this.len, <u8>c);
    this.len++;
  }

  bytes(src: usize, n: u32): void {
    this.reserve(n);
    memory.copy(this.ptr + this.len, src, n);
    this.len += n;
  }

  // ascii appends s, which must be ASCII (one byte per character).
  ascii(s: string): void {
    const n = <u32>s.length;
    this.reserve(n);
    const p = this.ptr + this.len;
    for (let i: u32 = 0; i < n; i++) store<u8>(p + i, <u8>s.charCodeAt(i));
    this.len += n;
  }

  // utf8 appends s encoded as UTF-8.
  utf8(s: string): void {
    const b = String.UTF8.encode(s);
    this.bytes(changetype<usize>(b), <u32>b.byteLength);
  }
}

// ---- frames ----

// Frame reads a frame (docs/abi.md section 2: fields, each a little-endian
// u32 length and its bytes) held in a Buf. field(k) finds field k and
// leaves it in ptr and len.
export class Frame {
  buf: Buf = new Buf();
  ptr: usize = 0;
  len: u32 = 0;

  // field finds field k: ptr and len, or false when the frame has fewer
  // fields (or is malformed).
  field(k: i32): bool {
    const base = this.buf.ptr;
    const size = this.buf.len;
    let pos: u32 = 0;
    for (let j = 0; ; j++) {
      if (size - pos < 4) return false;
      const n = load<u32>(base + pos);
      pos += 4;
      if (n > size - pos) return false;
      if (j == k) {
        this.ptr = base + pos;
        this.len = n;
        return true;
      }
      pos += n;
    }
    return false; // not reached
  }

  // count is the number of well-formed fields.
  count(): i32 {
    let k = 0;
    while (this.field(k)) k++;
    return k;
  }

  // string is field k decoded as UTF-8 ("" when missing). It allocates.
  string(k: i32): string {
    if (!this.field(k)) return "";
    return String.UTF8.decodeUnsafe(this.ptr, this.len);
  }

  // bytes is a copy of field k (empty when missing).
  bytes(k: i32): Uint8Array {
    if (!this.field(k)) return new Uint8Array(0);
    const a = new Uint8Array(this.len);
    memory.copy(a.dataStart, this.ptr, this.len);
    return a;
  }
}

// FrameWriter writes a frame into a Buf.
export class FrameWriter {
  buf: Buf = new Buf();
  private at: u32 = 0;

  reset(): FrameWriter {
    this.buf.len = 0;
    return this;
  }

  // open starts a field whose bytes the caller then appends to buf;
  // close ends it (its length is written then).
  open(): void {
    this.at = this.buf.len;
    this.buf.reserve(4);
    store<u32>(this.buf.ptr + this.buf.len, 0);
    this.buf.len += 4;
  }

  close(): void {
    store<u32>(this.buf.ptr + this.at, this.buf.len - this.at - 4); // wasm is little-endian
  }

  // field appends a field of n bytes at ptr.
  field(ptr: usize, n: u32): FrameWriter {
    this.open();
    this.buf.bytes(ptr, n);
    this.close();
    return this;
  }

  // fieldString appends a field of s as UTF-8.
  fieldString(s: string): FrameWriter {
    this.open();
    this.buf.utf8(s);
    this.close();
    return this;
  }

  // fieldASCII appends a field of s, which must be ASCII (no allocation).
  fieldASCII(s: string): FrameWriter {
    this.open();
    this.buf.ascii(s);
    this.close();
    return this;
  }

  fieldBytes(b: Uint8Array): FrameWriter {
    return this.field(b.dataStart, <u32>b.length);
  }
}

// ---- hooks ----

// Hook numbers (docs/abi.md section 3).
export enum Hook {
  ChatRequest = 1,
  ChatResponse = 2,
  ChatStreamEvent = 3,
  EmbedRequest = 4,
  EmbedResponse = 5,
  Error = 6,
  PreRequest = 7,
  PostResponse = 8,
  PostChunk = 9,
  ToolCall = 10,
}

// Output is the call's output: a status byte, then the fields the hook
// appends (status ok), or a message (after fail).
export class Output extends FrameWriter {
  failed: bool = false;

  // fail makes the call a failure with msg; fields written before are
  // dropped, and fields written after it are ignored by the host.
  fail(msg: string): void {
    this.buf.len = 0;
    this.buf.byte(1);
    this.buf.utf8(msg);
    this.failed = true;
  }
}

// input is the current call's input frame (ctx first); output its output.
export const input = new Frame();
export const output = new Output();

const handlers = new StaticArray<(() => void) | null>(16);

// register makes fn the handler of hook. A call of a hook nobody
// registered fails, naming it (the manifest should not declare it).
export function register(hook: Hook, fn: () => void): void {
  unchecked((handlers[<i32>hook] = fn));
}

// switchyard_abi_v1 is the marker of ABI version 1: never called.
export function switchyard_abi_v1(): void {}

// sy_input returns the (reused) buffer the host writes size input bytes to.
export function sy_input(size: u32): usize {
  input.buf.len = 0;
  input.buf.reserve(size);
  input.buf.len = size;
  return input.buf.ptr;
}

// sy_handle runs hook on the input and returns (ptr << 32) | len of the
// output, which stays valid until the next call.
export function sy_handle(hook: u32, size: u32): u64 {
  input.buf.len = size;
  output.buf.len = 0;
  output.failed = false;
  output.buf.byte(0);
  const fn = hook < 16 ? unchecked(handlers[<i32>hook]) : null;
  if (fn === null) {
    output.fail("hook " + hook.toString() + " is not implemented by this module");
  } else {
    fn();
  }
  return (<u64>output.buf.ptr << 32) | <u64>output.buf.len;
}

// ---- host functions (docs/abi.md section 5) ----

@external("switchyard", "log")
declare function sy_log(level: i32, ptr: usize, len: u32): void;
@external("switchyard", "http_request")
declare function sy_http_request(ptr: usize, len: u32): i64;
@external("switchyard", "http_response")
declare function sy_http_response(ptr: usize, limit: u32): u32;
@external("switchyard", "result")
declare function sy_result(ptr: usize, limit: u32): u32;
@external("switchyard", "chat")
declare function sy_chat(ptr: usize, len: u32): i64;
@external("switchyard", "chat_batch")
declare function sy_chat_batch(ptr: usize, len: u32): i64;
@external("switchyard", "chat_reserve")
declare function sy_chat_reserve(ptr: usize, len: u32): i64;
@external("switchyard", "count_tokens")
declare function sy_count_tokens(ptr: usize, len: u32): i64;
@external("switchyard", "kv_get")
declare function sy_kv_get(ptr: usize, len: u32): i64;
@external("switchyard", "kv_put")
declare function sy_kv_put(ptr: usize, len: u32): i64;
@external("switchyard", "embed")
declare function sy_embed(ptr: usize, len: u32): i64;
@external("switchyard", "vector_put")
declare function sy_vector_put(ptr: usize, len: u32): i64;
@external("switchyard", "vector_search")
declare function sy_vector_search(ptr: usize, len: u32): i64;
@external("switchyard", "metric")
declare function sy_metric(ptr: usize, len: u32): i64;

// Log levels of log.
export enum Level {
  Debug = 0,
  Info = 1,
  Warn = 2,
  Error = 3,
}

const logBuf = new Buf();

// log writes a line to the gateway's log, tagged with the module (grant
// "log"; the host caps a line at 4 KiB and a call's lines by budget).
export function log(level: Level, msg: string): void {
  logBuf.len = 0;
  logBuf.utf8(msg);
  sy_log(<i32>level, logBuf.ptr, logBuf.len);
}

// Codes of a failed host call (docs/abi.md): result.code is one of them,
// and result field 0 is the host's message.
export const HOST_DENIED: i64 = -1;
export const HOST_FAILED: i64 = -2;
export const HOST_NOT_FOUND: i64 = -3;
export const HOST_QUOTA: i64 = -4;
export const HOST_BUDGET: i64 = -5;

// HostResult is the answer of the last host call: code >= 0 (the result
// frame's size) and the frame's fields, or a negative code and one field,
// the message. It is reused: read it before the next host call.
export class HostResult extends Frame {
  code: i64 = 0;

  @inline get ok(): bool {
    return this.code >= 0;
  }
}

export const result = new HostResult();

// request is a reusable frame writer for host calls' inputs:
// request.reset().fieldString(…) and pass it.
export const request = new FrameWriter();

// fetch copies the result of the call that returned code with copy
// (result or http_response) into result.
function fetch(code: i64, http: bool): HostResult {
  result.code = code;
  const full = <u32>(code >= 0 ? code : 0);
  result.buf.len = 0;
  // A failure's message is copied the same way: ask for the full size
  // first with an empty buffer when the size is unknown.
  let need = full;
  if (code < 0) need = http ? sy_http_response(0, 0) : sy_result(0, 0);
  result.buf.reserve(need);
  const got = http ? sy_http_response(result.buf.ptr, need) : sy_result(result.buf.ptr, need);
  result.buf.len = got < need ? got : need;
  return result;
}

// http makes an outbound call (grant "http", to grants.http_domains):
// req is [method, url, headers ("Name: value" lines), body]; the result is
// [status, headers, body].
export function http(req: FrameWriter): HostResult {
  return fetch(sy_http_request(req.buf.ptr, req.buf.len), true);
}

// chat runs [body] as a chat sub-request: [status, body] (grant "chat").
export function chat(req: FrameWriter): HostResult {
  return fetch(sy_chat(req.buf.ptr, req.buf.len), false);
}

// chatBatch runs [body 1, …, body N] at once: [status 1, body 1, …].
export function chatBatch(req: FrameWriter): HostResult {
  return fetch(sy_chat_batch(req.buf.ptr, req.buf.len), false);
}

// chatReserve holds a plan's cost: [plan JSON] -> [status, body].
export function chatReserve(req: FrameWriter): HostResult {
  return fetch(sy_chat_reserve(req.buf.ptr, req.buf.len), false);
}

// countTokens: [model, text] -> [decimal count] (grant "count_tokens").
export function countTokens(req: FrameWriter): HostResult {
  return fetch(sy_count_tokens(req.buf.ptr, req.buf.len), false);
}

// kvGet: [key] -> [value], or HOST_NOT_FOUND (grant "kv").
export function kvGet(req: FrameWriter): HostResult {
  return fetch(sy_kv_get(req.buf.ptr, req.buf.len), false);
}

// kvPut: [key, value, ttl seconds] -> [] (an empty value deletes).
export function kvPut(req: FrameWriter): HostResult {
  return fetch(sy_kv_put(req.buf.ptr, req.buf.len), false);
}

// embed: [embeddings request JSON] -> [status, body] (grant "embed").
export function embed(req: FrameWriter): HostResult {
  return fetch(sy_embed(req.buf.ptr, req.buf.len), false);
}

// vectorPut: [partition, id, tag, vector, ttl] -> [evicted] (grant "vector").
export function vectorPut(req: FrameWriter): HostResult {
  return fetch(sy_vector_put(req.buf.ptr, req.buf.len), false);
}

// vectorSearch: [partition, tag, vector, min] -> [id, similarity, age].
export function vectorSearch(req: FrameWriter): HostResult {
  return fetch(sy_vector_search(req.buf.ptr, req.buf.len), false);
}

const metricReq = new FrameWriter();

// metric adds value to the counter, or observes it in the histogram, that
// the manifest declares as name (grant "metrics"; docs/abi.md, "metric"):
// 0, or a HOST_* code (an undeclared name is refused). A count that fails
// should not fail the request: callers may ignore the code.
export function metric(name: string, value: f64): i64 {
  metricReq.reset().fieldString(name).fieldString(value.toString());
  return fetch(sy_metric(metricReq.buf.ptr, metricReq.buf.len), false).code;
}

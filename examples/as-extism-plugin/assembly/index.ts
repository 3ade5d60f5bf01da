// Keyword guardrail for Switchyard in AssemblyScript, built with the Extism
// PDK and run by the host's Extism runtime ("runtime": "extism").
//
// The Go (examples/go-native-plugin) and C (examples/c-native-plugin)
// versions do exactly the same thing, byte for byte; see the Go version for
// the rules. The Extism contract (docs/plugins.md):
//
//   - one exported function per hook, named like the hook: pre_request;
//   - its Extism input is the native ABI's input frame: fields, each a
//     little-endian u32 length and its bytes (here ctx and the request);
//   - its Extism output is the native ABI's output: byte 0 and a frame of
//     fields, or byte 1 and an error message.
//
// Buffers are allocated once and grown only when a call needs more than any
// call before, so a call allocates nothing.

import {
  alloc,
  error_set,
  input_length,
  input_load_u64,
  input_load_u8,
  output_set,
  store_u64,
} from "@extism/as-pdk/lib/env";
import { Memory } from "@extism/as-pdk";

const MAX_PATTERNS = 64;
const MAX_DEPTH = 64;
const BAD: u32 = 0xffffffff;

// Buf is a growable byte buffer in linear memory, reused across calls.
class Buf {
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

  ascii(s: string): void {
    const n = <u32>s.length;
    this.reserve(n);
    const p = this.ptr + this.len;
    for (let i: u32 = 0; i < n; i++) store<u8>(p + i, <u8>s.charCodeAt(i));
    this.len += n;
  }
}

const input = new Buf();
const out = new Buf();
const text = new Buf();
const pats = new Buf();

// The patterns: the configured token (quotes included, an offset in ctx)
// and its decoded, lower-cased form (an offset in pats).
const rawOff = new StaticArray<u32>(MAX_PATTERNS);
const rawLen = new StaticArray<u32>(MAX_PATTERNS);
const foldOff = new StaticArray<u32>(MAX_PATTERNS);
const foldLen = new StaticArray<u32>(MAX_PATTERNS);
const matched = new StaticArray<bool>(MAX_PATTERNS);
let npat = 0;

// The span being scanned (ctx or the request), as a pointer and a length.
let sb: usize = 0;
let sn: u32 = 0;

@inline function at(i: u32): u32 {
  return load<u8>(sb + i);
}

function isWS(c: u32): bool {
  return c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d;
}

function isDelim(c: u32): bool {
  return c == 0x2c || c == 0x5d || c == 0x7d || isWS(c);
}

function skipWS(i: u32): u32 {
  while (i < sn && isWS(at(i))) i++;
  return i;
}

function stringEnd(i: u32): u32 {
  for (i++; i < sn; i++) {
    const c = at(i);
    if (c == 0x5c) i++;
    else if (c == 0x22) return i + 1;
  }
  return BAD;
}

function keyIs(start: u32, end: u32, key: string): bool {
  const n = end - start;
  if (n != <u32>key.length) return false;
  for (let i: u32 = 0; i < n; i++) {
    if (at(start + i) != <u32>key.charCodeAt(i)) return false;
  }
  return true;
}

@inline function lower(c: u32): u32 {
  return c >= 0x41 && c <= 0x5a ? c + 32 : c;
}

let hexGot: u32 = 0;

function hex4(s: usize, n: u32, i: u32): u32 {
  let r: u32 = 0;
  let k: u32 = 0;
  for (; k < 4 && i + k < n; k++) {
    const c = <u32>load<u8>(s + i + k);
    if (c >= 0x30 && c <= 0x39) r = (r << 4) | (c - 0x30);
    else if (c >= 0x61 && c <= 0x66) r = (r << 4) | (c - 0x61 + 10);
    else if (c >= 0x41 && c <= 0x46) r = (r << 4) | (c - 0x41 + 10);
    else break;
  }
  hexGot = k;
  return r;
}

function putUTF8(d: Buf, r: u32): void {
  if (r < 0x80) {
    d.byte(r);
  } else if (r < 0x800) {
    d.byte(0xc0 | (r >> 6));
    d.byte(0x80 | (r & 0x3f));
  } else if (r < 0x10000) {
    d.byte(0xe0 | (r >> 12));
    d.byte(0x80 | ((r >> 6) & 0x3f));
    d.byte(0x80 | (r & 0x3f));
  } else {
    d.byte(0xf0 | (r >> 18));
    d.byte(0x80 | ((r >> 12) & 0x3f));
    d.byte(0x80 | ((r >> 6) & 0x3f));
    d.byte(0x80 | (r & 0x3f));
  }
}

// decode appends the string content at s (n bytes, no quotes) to d, escapes
// decoded and ASCII letters lower-cased.
function decode(d: Buf, s: usize, n: u32): void {
  d.reserve(n); // decoding never makes a string longer
  for (let i: u32 = 0; i < n; i++) {
    const c = <u32>load<u8>(s + i);
    if (c != 0x5c) {
      store<u8>(d.ptr + d.len, <u8>lower(c));
      d.len++;
      continue;
    }
    if (++i >= n) break;
    const e = <u32>load<u8>(s + i);
    if (e == 0x62) d.byte(0x08);
    else if (e == 0x66) d.byte(0x0c);
    else if (e == 0x6e) d.byte(0x0a);
    else if (e == 0x72) d.byte(0x0d);
    else if (e == 0x74) d.byte(0x09);
    else if (e == 0x75) {
      let r = hex4(s, n, i + 1);
      const got = hexGot;
      i += got;
      if (r >= 0xd800 && r < 0xdc00 && i + 2 < n && load<u8>(s + i + 1) == 0x5c && load<u8>(s + i + 2) == 0x75) {
        const lo = hex4(s, n, i + 3);
        if (hexGot == 4 && lo >= 0xdc00 && lo < 0xe000) {
          r = 0x10000 + ((r - 0xd800) << 10) + (lo - 0xdc00);
          i += 2 + hexGot;
        }
      }
      if (got < 4 || (r >= 0xd800 && r < 0xe000)) r = 0xfffd;
      putUTF8(d, lower(r));
    } else d.byte(lower(e));
  }
}

function contains(s: usize, n: u32, pat: usize, m: u32): bool {
  const first = load<u8>(pat);
  for (let i: u32 = 0; i + m <= n; i++) {
    if (load<u8>(s + i) != first) continue;
    let k: u32 = 1;
    while (k < m && load<u8>(s + i + k) == load<u8>(pat + k)) k++;
    if (k == m) return true;
  }
  return false;
}

function check(s: usize, n: u32): void {
  text.len = 0;
  decode(text, s, n);
  for (let p = 0; p < npat; p++) {
    if (!unchecked(matched[p]) && contains(text.ptr, text.len, pats.ptr + unchecked(foldOff[p]), unchecked(foldLen[p]))) {
      unchecked((matched[p] = true));
    }
  }
}

// walk returns the offset just past the value at i, or BAD. With chk set,
// strings under a "content" or "text" member are checked.
function walk(i: u32, depth: i32, chk: bool, textKey: bool): u32 {
  if (depth > MAX_DEPTH || i >= sn) return BAD;
  const c = at(i);
  if (c == 0x7b) {
    // {
    i = skipWS(i + 1);
    if (i < sn && at(i) == 0x7d) return i + 1;
    for (;;) {
      i = skipWS(i);
      if (i >= sn || at(i) != 0x22) return BAD;
      const kend = stringEnd(i);
      if (kend == BAD) return BAD;
      const isText = keyIs(i + 1, kend - 1, "content") || keyIs(i + 1, kend - 1, "text");
      i = skipWS(kend);
      if (i >= sn || at(i) != 0x3a) return BAD;
      i = walk(skipWS(i + 1), depth + 1, chk, isText);
      if (i == BAD) return BAD;
      i = skipWS(i);
      if (i >= sn) return BAD;
      if (at(i) == 0x7d) return i + 1;
      if (at(i) != 0x2c) return BAD;
      i++;
    }
  }
  if (c == 0x5b) {
    // [
    i = skipWS(i + 1);
    if (i < sn && at(i) == 0x5d) return i + 1;
    for (;;) {
      i = walk(skipWS(i), depth + 1, chk, textKey);
      if (i == BAD) return BAD;
      i = skipWS(i);
      if (i >= sn) return BAD;
      if (at(i) == 0x5d) return i + 1;
      if (at(i) != 0x2c) return BAD;
      i++;
    }
  }
  if (c == 0x22) {
    const end = stringEnd(i);
    if (end == BAD) return BAD;
    if (chk && textKey) check(sb + i + 1, end - i - 2);
    return end;
  }
  const start = i;
  while (i < sn && !isDelim(at(i))) i++;
  return i == start ? BAD : i;
}

let found = false;

// member returns the offset of key's value in the object at i (found says
// whether it was there), or BAD when malformed.
function member(i: u32, key: string): u32 {
  found = false;
  if (i >= sn || at(i) != 0x7b) return 0;
  i = skipWS(i + 1);
  if (i < sn && at(i) == 0x7d) return 0;
  for (;;) {
    i = skipWS(i);
    if (i >= sn || at(i) != 0x22) return BAD;
    const kend = stringEnd(i);
    if (kend == BAD) return BAD;
    const hit = keyIs(i + 1, kend - 1, key);
    i = skipWS(kend);
    if (i >= sn || at(i) != 0x3a) return BAD;
    i = skipWS(i + 1);
    if (hit) {
      found = true;
      return i;
    }
    i = walk(i, 0, false, false);
    if (i == BAD) return BAD;
    i = skipWS(i);
    if (i >= sn) return BAD;
    if (at(i) == 0x7d) return 0;
    if (at(i) != 0x2c) return BAD;
    i++;
  }
  return BAD; // not reached
}

// loadPatterns reads ctx.config.blocked (the current span); false when
// ctx is malformed.
function loadPatterns(): bool {
  npat = 0;
  pats.len = 0;
  for (let p = 0; p < MAX_PATTERNS; p++) unchecked((matched[p] = false));
  const cfg = member(skipWS(0), "config");
  if (cfg == BAD) return false;
  if (!found) return true;
  let i = member(cfg, "blocked");
  if (i == BAD) return false;
  if (!found || at(i) != 0x5b) return true;
  i = skipWS(i + 1);
  if (i < sn && at(i) == 0x5d) return true;
  for (;;) {
    i = skipWS(i);
    if (i >= sn) return false;
    const end = walk(i, 0, false, false);
    if (end == BAD) return false;
    if (at(i) == 0x22 && end - i > 2 && npat < MAX_PATTERNS) {
      unchecked((rawOff[npat] = i));
      unchecked((rawLen[npat] = end - i));
      unchecked((foldOff[npat] = pats.len));
      decode(pats, sb + i + 1, end - i - 2);
      const n = pats.len - unchecked(foldOff[npat]);
      unchecked((foldLen[npat] = n));
      if (n > 0) npat++;
    }
    i = skipWS(end);
    if (i >= sn) return false;
    if (at(i) == 0x5d) return true;
    if (at(i) != 0x2c) return false;
    i++;
  }
  return false; // not reached
}

// scanRequest checks the text under the request's "messages" (the current
// span); false when malformed.
function scanRequest(): bool {
  let i = skipWS(0);
  if (i >= sn || at(i) != 0x7b) return false;
  i = skipWS(i + 1);
  if (i < sn && at(i) == 0x7d) return true;
  for (;;) {
    i = skipWS(i);
    if (i >= sn || at(i) != 0x22) return false;
    const kend = stringEnd(i);
    if (kend == BAD) return false;
    const messages = keyIs(i + 1, kend - 1, "messages");
    i = skipWS(kend);
    if (i >= sn || at(i) != 0x3a) return false;
    i = walk(skipWS(i + 1), 1, messages, false);
    if (i == BAD) return false;
    i = skipWS(i);
    if (i >= sn) return false;
    if (at(i) == 0x7d) return true;
    if (at(i) != 0x2c) return false;
    i++;
  }
  return false; // not reached
}

// ---- output ----

let fieldAt: u32 = 0;

function openField(): void {
  fieldAt = out.len;
  out.reserve(4);
  store<u32>(out.ptr + out.len, 0);
  out.len += 4;
}

function closeField(): void {
  store<u32>(out.ptr + fieldAt, out.len - fieldAt - 4); // wasm is little-endian
}

function fieldASCII(s: string): void {
  openField();
  out.ascii(s);
  closeField();
}

function putMatched(ctx: usize): void {
  out.byte(0x5b);
  let first = true;
  for (let p = 0; p < npat; p++) {
    if (!unchecked(matched[p])) continue;
    if (!first) out.byte(0x2c);
    first = false;
    out.bytes(ctx + unchecked(rawOff[p]), unchecked(rawLen[p]));
  }
  out.byte(0x5d);
}

function putInt(n: i32): void {
  if (n >= 10) putInt(n / 10);
  out.byte(<u32>(0x30 + (n % 10)));
}

// emit hands out's bytes to the Extism kernel as the call's output.
//
// Cost note: with the Extism Go SDK, every kernel call that is not a plain
// load or store (alloc, output_set, input_load_u8, store_u8, …) makes the
// host allocate a wazero call engine (~20 KB). So the output is written in
// 8-byte words only, into a block rounded up to 8 bytes, and the input is
// read the same way below: three such calls per hook instead of up to
// seventeen.
function emit(): void {
  const n = <u64>out.len;
  out.reserve(8); // the last word may read past len
  const off = alloc((n + 7) & ~7);
  const p = out.ptr;
  for (let i: u64 = 0; i < n; i += 8) store_u64(off + i, load<u64>(p + <usize>i));
  output_set(off, n);
}

function fail(msg: string): i32 {
  out.len = 0;
  out.byte(1);
  out.ascii(msg);
  emit();
  return 0;
}

// readInput copies the Extism input into the reused input buffer, in
// 8-byte words (the last one overlapping its predecessor).
function readInput(): u32 {
  const n = input_length();
  input.len = 0;
  input.reserve(<u32>n);
  const p = input.ptr;
  if (n < 8) {
    for (let i: u64 = 0; i < n; i++) store<u8>(p + <usize>i, input_load_u8(i));
  } else {
    let i: u64 = 0;
    for (; i + 8 <= n; i += 8) store<u64>(p + <usize>i, input_load_u64(i));
    if (i < n) store<u64>(p + <usize>(n - 8), input_load_u64(n - 8));
  }
  input.len = <u32>n;
  return <u32>n;
}

// field finds field k of the input frame: fieldPtr/fieldLen, or false.
let fieldPtr: usize = 0;
let fieldLen: u32 = 0;

function field(size: u32, k: i32): bool {
  let pos: u32 = 0;
  for (let j = 0; ; j++) {
    if (pos + 4 > size) return false;
    const n = load<u32>(input.ptr + pos);
    pos += 4;
    if (n > size - pos) return false;
    if (j == k) {
      fieldPtr = input.ptr + pos;
      fieldLen = n;
      return true;
    }
    pos += n;
  }
  return false; // not reached
}

export function pre_request(): i32 {
  const size = readInput();
  out.len = 0;
  if (!field(size, 0)) return fail("malformed input frame");
  const ctxPtr = fieldPtr;
  const ctxLen = fieldLen;
  if (!field(size, 1)) return fail("malformed input frame");
  const bodyPtr = fieldPtr;
  const bodyLen = fieldLen;

  sb = ctxPtr;
  sn = ctxLen;
  if (!loadPatterns()) return fail("ctx is not valid JSON");
  if (npat > 0) {
    sb = bodyPtr;
    sn = bodyLen;
    if (!scanRequest()) return fail("the request is not valid JSON");
  }
  let n = 0;
  for (let p = 0; p < npat; p++) if (unchecked(matched[p])) n++;

  out.byte(0);
  if (n == 0) {
    fieldASCII("continue");
    openField(); // the body is unchanged
    closeField();
    openField(); // no summary
    closeField();
    emit();
    return 0;
  }
  fieldASCII("block");
  openField();
  out.ascii('{"code":403,"message":"request blocked: it contains a blocked pattern","metadata":{"patterns":');
  putMatched(ctxPtr);
  out.ascii("}}");
  closeField();
  openField();
  out.ascii('{"type":"guardrail","summary":"matched ');
  putInt(n);
  out.ascii(' blocked pattern(s)","data":{"action":"block","detected":true,"patterns":');
  putMatched(ctxPtr);
  out.ascii("}}");
  closeField();
  emit();
  return 0;
}

// guardAbort replaces AssemblyScript's default abort, which would import
// env.abort (the host refuses modules that import it): it reports the
// message as the Extism error and traps, so the host discards the instance
// and fails the call with the message.
function guardAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  const msg = (message !== null ? message : "abort") + " at " + (fileName !== null ? fileName : "?") + ":" + line.toString() + ":" + column.toString();
  error_set(Memory.allocateString(msg).offset);
  unreachable();
}

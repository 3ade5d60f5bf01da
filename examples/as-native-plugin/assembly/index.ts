// Keyword guardrail for Switchyard in AssemblyScript on the native ABI
// (docs/abi.md), with the guest library sdk/assemblyscript/switchyard.ts:
// no Extism. The Go, C, Rust and AssemblyScript/Extism versions do exactly
// the same thing, byte for byte; see the Go version
// (examples/go-native-plugin) for the rules. The JSON scanning is the
// Extism version's; only the input and output go through the library.
//
// Buffers (the library's input and output, and the decode buffers here)
// are allocated once and grown only when a call needs more than any call
// before, so a call allocates nothing.

import { Buf, Hook, input, output, register } from "../../../sdk/assemblyscript/switchyard";
export { switchyard_abi_v1, sy_input, sy_handle } from "../../../sdk/assemblyscript/switchyard";

// out is the output buffer the hook appends to.
const out = output.buf;

const MAX_PATTERNS = 64;
const MAX_DEPTH = 64;
const BAD: u32 = 0xffffffff;

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


function putInt(n: i32): void {
  if (n >= 10) putInt(n / 10);
  out.byte(<u32>(0x30 + (n % 10)));
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

function preRequest(): void {
  if (!input.field(0)) return output.fail("malformed input frame");
  const ctxPtr = input.ptr;
  const ctxLen = input.len;
  if (!input.field(1)) return output.fail("malformed input frame");
  const bodyPtr = input.ptr;
  const bodyLen = input.len;

  sb = ctxPtr;
  sn = ctxLen;
  if (!loadPatterns()) return output.fail("ctx is not valid JSON");
  if (npat > 0) {
    sb = bodyPtr;
    sn = bodyLen;
    if (!scanRequest()) return output.fail("the request is not valid JSON");
  }
  let n = 0;
  for (let p = 0; p < npat; p++) if (unchecked(matched[p])) n++;

  if (n == 0) {
    output.fieldASCII("continue");
    output.field(0, 0); // the body is unchanged
    output.field(0, 0); // no summary
    return;
  }
  output.fieldASCII("block");
  output.open();
  out.ascii('{"code":403,"message":"request blocked: it contains a blocked pattern","metadata":{"patterns":');
  putMatched(ctxPtr);
  out.ascii("}}");
  output.close();
  output.open();
  out.ascii('{"type":"guardrail","summary":"matched ');
  putInt(n);
  out.ascii(' blocked pattern(s)","data":{"action":"block","detected":true,"patterns":');
  putMatched(ctxPtr);
  out.ascii("}}");
  output.close();
}

// Registered last: AssemblyScript runs top-level statements in order, and
// the hook reads the globals above.
register(Hook.PreRequest, preRequest);

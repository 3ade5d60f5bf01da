//! The keyword guardrail written in Rust against the native ABI with the
//! Rust guest library (sdk/rust). The Go (examples/go-native-plugin), C
//! (examples/c-native-plugin) and AssemblyScript (examples/as-extism-plugin)
//! versions do exactly the same thing, byte for byte; see the Go version
//! for the rules.
//!
//! Build (Debian 12: apt-get install rustc libstd-rust-dev-wasm32), as
//! examples/Makefile does:
//!
//!   rustc --edition 2021 --target wasm32-wasi --crate-type rlib \
//!         --crate-name switchyard -O sdk/rust/src/lib.rs --out-dir lib
//!   rustc --edition 2021 --target wasm32-wasi --crate-type cdylib -O \
//!         -C strip=symbols --extern switchyard=lib/libswitchyard.rlib \
//!         -o guardrail.wasm examples/rust-native-plugin/src/lib.rs
//!
//! The scanner's buffers live for the instance and are reused across
//! calls; a call allocates nothing once they have grown.

use switchyard::{Error, Hook, In, Out, ACTION_BLOCK, ACTION_CONTINUE};

switchyard::export_hooks! { Hook::PreRequest => pre_request }

const MAX_PATTERNS: usize = 64;
const MAX_DEPTH: usize = 64;

/// A configured pattern: the JSON string token as configured (quotes
/// included) for the output, and its decoded, lower-cased text for matching.
struct Pattern {
    raw: Vec<u8>,
    folded: Vec<u8>,
}

/// The guardrail's reused state for one call.
struct Guard {
    patterns: Vec<Pattern>,
    npat: usize,
    matched: [bool; MAX_PATTERNS],
    text: Vec<u8>,
}

/// Malformed JSON; the caller says where.
struct Malformed;

type Res<T> = Result<T, Malformed>;

static mut GUARD: Option<Guard> = None;

fn guard() -> &'static mut Guard {
    // One instance runs one call at a time, so one call holds this.
    let g = unsafe { &mut *std::ptr::addr_of_mut!(GUARD) };
    g.get_or_insert_with(|| Guard {
        patterns: Vec::with_capacity(MAX_PATTERNS),
        npat: 0,
        matched: [false; MAX_PATTERNS],
        text: Vec::with_capacity(16 << 10),
    })
}

fn pre_request(input: &In, out: &mut Out) -> Result<(), Error> {
    let g = guard();
    let ctx = input.field(0);
    if g.load_patterns(ctx).is_err() {
        return Err(Error::new("ctx is not valid JSON"));
    }
    if g.npat > 0 && g.scan_request(input.field(1)).is_err() {
        return Err(Error::new("the request is not valid JSON"));
    }
    let n = g.matched[..g.npat].iter().filter(|m| **m).count();
    if n == 0 {
        out.field_str(ACTION_CONTINUE);
        out.field(b""); // the body is unchanged
        out.field(b"");
        return Ok(());
    }
    out.field_str(ACTION_BLOCK);
    out.open();
    out.write_str(r#"{"code":403,"message":"request blocked: it contains a blocked pattern","metadata":{"patterns":"#);
    g.write_matched(out);
    out.write_str("}}");
    out.close();
    out.open();
    out.write_str(r#"{"type":"guardrail","summary":"matched "#);
    write_int(out, n);
    out.write_str(r#" blocked pattern(s)","data":{"action":"block","detected":true,"patterns":"#);
    g.write_matched(out);
    out.write_str("}}");
    out.close();
    Ok(())
}

fn write_int(out: &mut Out, n: usize) {
    if n >= 10 {
        write_int(out, n / 10);
    }
    out.byte(b'0' + (n % 10) as u8);
}

impl Guard {
    fn write_matched(&self, out: &mut Out) {
        out.byte(b'[');
        let mut first = true;
        for p in 0..self.npat {
            if !self.matched[p] {
                continue;
            }
            if !first {
                out.byte(b',');
            }
            first = false;
            out.write(&self.patterns[p].raw);
        }
        out.byte(b']');
    }

    /// Reads ctx.config.blocked.
    fn load_patterns(&mut self, ctx: &[u8]) -> Res<()> {
        self.npat = 0;
        self.matched = [false; MAX_PATTERNS];
        let cfg = match member(ctx, skip_ws(ctx, 0), b"config")? {
            Some(i) => i,
            None => return Ok(()),
        };
        let list = match member(ctx, cfg, b"blocked")? {
            Some(i) if ctx[i] == b'[' => i,
            _ => return Ok(()),
        };
        let mut i = skip_ws(ctx, list + 1);
        if i < ctx.len() && ctx[i] == b']' {
            return Ok(());
        }
        loop {
            i = skip_ws(ctx, i);
            if i >= ctx.len() {
                return Err(Malformed);
            }
            let end = self.walk(ctx, i, 0, false, false)?;
            if ctx[i] == b'"' && end - i > 2 && self.npat < MAX_PATTERNS {
                if self.npat == self.patterns.len() {
                    self.patterns.push(Pattern { raw: Vec::new(), folded: Vec::new() });
                }
                let p = &mut self.patterns[self.npat];
                p.raw.clear();
                p.raw.extend_from_slice(&ctx[i..end]);
                p.folded.clear();
                decode(&mut p.folded, &ctx[i + 1..end - 1]);
                if !p.folded.is_empty() {
                    self.npat += 1;
                }
            }
            i = skip_ws(ctx, end);
            if i >= ctx.len() {
                return Err(Malformed);
            }
            if ctx[i] == b']' {
                return Ok(());
            }
            if ctx[i] != b',' {
                return Err(Malformed);
            }
            i += 1;
        }
    }

    /// Checks the text of the request's messages.
    fn scan_request(&mut self, body: &[u8]) -> Res<()> {
        let mut i = skip_ws(body, 0);
        if i >= body.len() || body[i] != b'{' {
            return Err(Malformed);
        }
        i = skip_ws(body, i + 1);
        if i < body.len() && body[i] == b'}' {
            return Ok(());
        }
        loop {
            i = skip_ws(body, i);
            if i >= body.len() || body[i] != b'"' {
                return Err(Malformed);
            }
            let kend = string_end(body, i)?;
            let messages = &body[i + 1..kend - 1] == b"messages";
            i = skip_ws(body, kend);
            if i >= body.len() || body[i] != b':' {
                return Err(Malformed);
            }
            i = skip_ws(body, i + 1);
            let end = self.walk(body, i, 1, messages, false)?;
            i = skip_ws(body, end);
            if i >= body.len() {
                return Err(Malformed);
            }
            if body[i] == b'}' {
                return Ok(());
            }
            if body[i] != b',' {
                return Err(Malformed);
            }
            i += 1;
        }
    }

    /// Returns the offset just past the value at i; with `check`, every
    /// string under a "content" or "text" member is checked against the
    /// patterns.
    fn walk(&mut self, b: &[u8], mut i: usize, depth: usize, check: bool, text_key: bool) -> Res<usize> {
        if depth > MAX_DEPTH || i >= b.len() {
            return Err(Malformed);
        }
        match b[i] {
            b'{' => {
                i = skip_ws(b, i + 1);
                if i < b.len() && b[i] == b'}' {
                    return Ok(i + 1);
                }
                loop {
                    i = skip_ws(b, i);
                    if i >= b.len() || b[i] != b'"' {
                        return Err(Malformed);
                    }
                    let kend = string_end(b, i)?;
                    let k = &b[i + 1..kend - 1];
                    let is_text = k == b"content" || k == b"text";
                    i = skip_ws(b, kend);
                    if i >= b.len() || b[i] != b':' {
                        return Err(Malformed);
                    }
                    i = skip_ws(b, i + 1);
                    i = self.walk(b, i, depth + 1, check, is_text)?;
                    i = skip_ws(b, i);
                    if i >= b.len() {
                        return Err(Malformed);
                    }
                    if b[i] == b'}' {
                        return Ok(i + 1);
                    }
                    if b[i] != b',' {
                        return Err(Malformed);
                    }
                    i += 1;
                }
            }
            b'[' => {
                i = skip_ws(b, i + 1);
                if i < b.len() && b[i] == b']' {
                    return Ok(i + 1);
                }
                loop {
                    i = skip_ws(b, i);
                    i = self.walk(b, i, depth + 1, check, text_key)?;
                    i = skip_ws(b, i);
                    if i >= b.len() {
                        return Err(Malformed);
                    }
                    if b[i] == b']' {
                        return Ok(i + 1);
                    }
                    if b[i] != b',' {
                        return Err(Malformed);
                    }
                    i += 1;
                }
            }
            b'"' => {
                let end = string_end(b, i)?;
                if check && text_key {
                    self.text.clear();
                    decode(&mut self.text, &b[i + 1..end - 1]);
                    for p in 0..self.npat {
                        if !self.matched[p] && contains(&self.text, &self.patterns[p].folded) {
                            self.matched[p] = true;
                        }
                    }
                }
                Ok(end)
            }
            _ => {
                // a number, true, false or null
                let start = i;
                while i < b.len() && !is_delim(b[i]) {
                    i += 1;
                }
                if i == start {
                    return Err(Malformed);
                }
                Ok(i)
            }
        }
    }
}

/// Returns the offset of the value of `key` in the object at i, or None
/// when i is not an object or has no such member.
fn member(b: &[u8], mut i: usize, key: &[u8]) -> Res<Option<usize>> {
    if i >= b.len() || b[i] != b'{' {
        return Ok(None);
    }
    i = skip_ws(b, i + 1);
    if i < b.len() && b[i] == b'}' {
        return Ok(None);
    }
    loop {
        i = skip_ws(b, i);
        if i >= b.len() || b[i] != b'"' {
            return Err(Malformed);
        }
        let kend = string_end(b, i)?;
        let hit = &b[i + 1..kend - 1] == key;
        i = skip_ws(b, kend);
        if i >= b.len() || b[i] != b':' {
            return Err(Malformed);
        }
        i = skip_ws(b, i + 1);
        if hit {
            return Ok(Some(i));
        }
        i = skip_ws(b, skip(b, i, 0)?);
        if i >= b.len() {
            return Err(Malformed);
        }
        if b[i] == b'}' {
            return Ok(None);
        }
        if b[i] != b',' {
            return Err(Malformed);
        }
        i += 1;
    }
}

/// skip is walk without checking (no patterns involved).
fn skip(b: &[u8], i: usize, depth: usize) -> Res<usize> {
    let mut g = Guard { patterns: Vec::new(), npat: 0, matched: [false; MAX_PATTERNS], text: Vec::new() };
    g.walk(b, i, depth, false, false)
}

fn is_delim(c: u8) -> bool {
    c == b',' || c == b']' || c == b'}' || c == b' ' || c == b'\t' || c == b'\n' || c == b'\r'
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t' || b[i] == b'\n' || b[i] == b'\r') {
        i += 1;
    }
    i
}

/// Returns the offset just past the closing quote of the string whose
/// opening quote is at i.
fn string_end(b: &[u8], mut i: usize) -> Res<usize> {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'"' => return Ok(i + 1),
            _ => {}
        }
        i += 1;
    }
    Err(Malformed)
}

fn lower(c: u8) -> u8 {
    c.to_ascii_lowercase()
}

/// Appends the JSON string content s (without quotes) to dst with its
/// escapes decoded and ASCII letters lower-cased.
fn decode(dst: &mut Vec<u8>, s: &[u8]) {
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c != b'\\' {
            dst.push(lower(c));
            i += 1;
            continue;
        }
        i += 1;
        if i >= s.len() {
            break;
        }
        match s[i] {
            b'b' => dst.push(8),
            b'f' => dst.push(12),
            b'n' => dst.push(b'\n'),
            b'r' => dst.push(b'\r'),
            b't' => dst.push(b'\t'),
            b'u' => {
                let (mut r, n) = hex4(s, i + 1);
                i += n;
                if (0xD800..0xDC00).contains(&r) && i + 2 < s.len() && s[i + 1] == b'\\' && s[i + 2] == b'u' {
                    let (lo, n2) = hex4(s, i + 3);
                    if n2 == 4 && (0xDC00..0xE000).contains(&lo) {
                        r = 0x10000 + ((r - 0xD800) << 10) + (lo - 0xDC00);
                        i += 2 + n2;
                    }
                }
                if n < 4 || (0xD800..0xE000).contains(&r) {
                    r = 0xFFFD;
                }
                if (b'A' as u32..=b'Z' as u32).contains(&r) {
                    r += (b'a' - b'A') as u32;
                }
                append_utf8(dst, r);
            }
            // " \ / and anything else stand for themselves
            other => dst.push(lower(other)),
        }
        i += 1;
    }
}

/// Reads up to four hex digits at i: the value and how many were read.
fn hex4(s: &[u8], i: usize) -> (u32, usize) {
    let mut r = 0u32;
    let mut n = 0;
    while n < 4 && i + n < s.len() {
        let d = match s[i + n] {
            c @ b'0'..=b'9' => c - b'0',
            c @ b'a'..=b'f' => c - b'a' + 10,
            c @ b'A'..=b'F' => c - b'A' + 10,
            _ => break,
        };
        r = r << 4 | d as u32;
        n += 1;
    }
    (r, n)
}

fn append_utf8(dst: &mut Vec<u8>, r: u32) {
    if r < 0x80 {
        dst.push(r as u8);
    } else if r < 0x800 {
        dst.extend_from_slice(&[0xC0 | (r >> 6) as u8, 0x80 | (r & 0x3F) as u8]);
    } else if r < 0x10000 {
        dst.extend_from_slice(&[0xE0 | (r >> 12) as u8, 0x80 | ((r >> 6) & 0x3F) as u8, 0x80 | (r & 0x3F) as u8]);
    } else {
        dst.extend_from_slice(&[
            0xF0 | (r >> 18) as u8,
            0x80 | ((r >> 12) & 0x3F) as u8,
            0x80 | ((r >> 6) & 0x3F) as u8,
            0x80 | (r & 0x3F) as u8,
        ]);
    }
}

/// Whether pat occurs in s.
fn contains(s: &[u8], pat: &[u8]) -> bool {
    let n = pat.len();
    n > 0 && n <= s.len() && s.windows(n).any(|w| w == pat)
}

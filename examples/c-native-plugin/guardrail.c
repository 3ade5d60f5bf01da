/*
 * Keyword guardrail for Switchyard, in C against the native ABI v1
 * (docs/abi.md) with the header-only guest library abi/c/switchyard.h over
 * wasi-libc. The Go (examples/go-native-plugin), Rust
 * (examples/rust-native-plugin) and AssemblyScript
 * (examples/as-extism-plugin) versions do exactly the same thing, byte for
 * byte; see the Go version for the rules.
 *
 * Build (Debian: apt-get install clang-14 lld-14 wasi-libc
 * libclang-rt-14-dev-wasm32), as examples/Makefile does:
 *
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 -mbulk-memory \
 *         -I abi/c -Wl,--strip-all -o guardrail.wasm guardrail.c
 *
 * Memory: the library's input and output buffers and the decode buffers
 * here are malloc'd, reused across calls and only grow (doubling) when a
 * call needs more than any call before. Growth past the module's memory cap
 * traps; the host then discards the instance and fails that call with 502.
 */

#define SWITCHYARD_IMPLEMENTATION
#include "switchyard.h"

typedef uint8_t u8;
typedef uint32_t u32;

enum { MAX_PATTERNS = 64, MAX_DEPTH = 64 };

static sy_buf text, pats;

static void putc_(sy_buf *b, u8 c) {
	sy_buf_reserve(b, 1);
	b->p[b->len++] = c;
}

static u32 cstrlen(const char *s) { return (u32)strlen(s); }

/* ---- JSON scanning ---- */

typedef struct {
	u32 raw_off, raw_len;       /* the configured token, quotes included, in ctx */
	u32 folded_off, folded_len; /* decoded and lower-cased, in pats */
} pattern;

static pattern patterns[MAX_PATTERNS];
static int npat;
static u8 matched[MAX_PATTERNS];

typedef struct {
	const u8 *b;
	u32 n;
} span;

#define BAD 0xffffffffu

static int is_ws(u8 c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int is_delim(u8 c) { return c == ',' || c == ']' || c == '}' || is_ws(c); }

static u32 skip_ws(span s, u32 i) {
	while (i < s.n && is_ws(s.b[i]))
		i++;
	return i;
}

static u32 string_end(span s, u32 i) {
	for (i++; i < s.n; i++) {
		if (s.b[i] == '\\')
			i++;
		else if (s.b[i] == '"')
			return i + 1;
	}
	return BAD;
}

static int key_is(span s, u32 start, u32 end, const char *key) {
	u32 n = end - start;
	if (n != cstrlen(key))
		return 0;
	for (u32 i = 0; i < n; i++)
		if (s.b[start + i] != (u8)key[i])
			return 0;
	return 1;
}

static u8 lower(u8 c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

static u32 hex4(const u8 *s, u32 n, u32 i, u32 *got) {
	u32 r = 0, k = 0;
	for (; k < 4 && i + k < n; k++) {
		u8 c = s[i + k];
		if (c >= '0' && c <= '9')
			r = r << 4 | (u32)(c - '0');
		else if (c >= 'a' && c <= 'f')
			r = r << 4 | (u32)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			r = r << 4 | (u32)(c - 'A' + 10);
		else
			break;
	}
	*got = k;
	return r;
}

static void put_utf8(sy_buf *d, u32 r) {
	if (r < 0x80) {
		putc_(d, (u8)r);
	} else if (r < 0x800) {
		putc_(d, 0xC0 | (u8)(r >> 6));
		putc_(d, 0x80 | (u8)(r & 0x3F));
	} else if (r < 0x10000) {
		putc_(d, 0xE0 | (u8)(r >> 12));
		putc_(d, 0x80 | (u8)((r >> 6) & 0x3F));
		putc_(d, 0x80 | (u8)(r & 0x3F));
	} else {
		putc_(d, 0xF0 | (u8)(r >> 18));
		putc_(d, 0x80 | (u8)((r >> 12) & 0x3F));
		putc_(d, 0x80 | (u8)((r >> 6) & 0x3F));
		putc_(d, 0x80 | (u8)(r & 0x3F));
	}
}

/* decode appends the string content s[0:n] (no quotes) to d, escapes
 * decoded and ASCII letters lower-cased. */
static void decode(sy_buf *d, const u8 *s, u32 n) {
	sy_buf_reserve(d, n); /* decoding never makes a string longer */
	for (u32 i = 0; i < n; i++) {
		u8 c = s[i];
		if (c != '\\') {
			d->p[d->len++] = lower(c);
			continue;
		}
		if (++i >= n)
			break;
		switch (s[i]) {
		case 'b': putc_(d, '\b'); break;
		case 'f': putc_(d, '\f'); break;
		case 'n': putc_(d, '\n'); break;
		case 'r': putc_(d, '\r'); break;
		case 't': putc_(d, '\t'); break;
		case 'u': {
			u32 got, got2;
			u32 r = hex4(s, n, i + 1, &got);
			i += got;
			if (r >= 0xD800 && r < 0xDC00 && i + 2 < n && s[i + 1] == '\\' && s[i + 2] == 'u') {
				u32 lo = hex4(s, n, i + 3, &got2);
				if (got2 == 4 && lo >= 0xDC00 && lo < 0xE000) {
					r = 0x10000 + ((r - 0xD800) << 10) + (lo - 0xDC00);
					i += 2 + got2;
				}
			}
			if (got < 4 || (r >= 0xD800 && r < 0xE000))
				r = 0xFFFD;
			if (r >= 'A' && r <= 'Z')
				r += 'a' - 'A';
			put_utf8(d, r);
			break;
		}
		default: putc_(d, lower(s[i])); break;
		}
	}
}

static int contains(const u8 *s, u32 n, const u8 *pat, u32 m) {
	for (u32 i = 0; i + m <= n; i++) {
		if (s[i] != pat[0])
			continue;
		u32 k = 1;
		while (k < m && s[i + k] == pat[k])
			k++;
		if (k == m)
			return 1;
	}
	return 0;
}

static void check(const u8 *s, u32 n) {
	text.len = 0;
	decode(&text, s, n);
	for (int p = 0; p < npat; p++)
		if (!matched[p] && contains(text.p, text.len, pats.p + patterns[p].folded_off, patterns[p].folded_len))
			matched[p] = 1;
}

/* walk returns the offset just past the value at i, or BAD. With check set,
 * strings under a "content" or "text" member are checked. */
static u32 walk(span s, u32 i, int depth, int chk, int text_key) {
	if (depth > MAX_DEPTH || i >= s.n)
		return BAD;
	switch (s.b[i]) {
	case '{':
		i = skip_ws(s, i + 1);
		if (i < s.n && s.b[i] == '}')
			return i + 1;
		for (;;) {
			i = skip_ws(s, i);
			if (i >= s.n || s.b[i] != '"')
				return BAD;
			u32 kend = string_end(s, i);
			if (kend == BAD)
				return BAD;
			int is_text = key_is(s, i + 1, kend - 1, "content") || key_is(s, i + 1, kend - 1, "text");
			i = skip_ws(s, kend);
			if (i >= s.n || s.b[i] != ':')
				return BAD;
			i = walk(s, skip_ws(s, i + 1), depth + 1, chk, is_text);
			if (i == BAD)
				return BAD;
			i = skip_ws(s, i);
			if (i >= s.n)
				return BAD;
			if (s.b[i] == '}')
				return i + 1;
			if (s.b[i] != ',')
				return BAD;
			i++;
		}
	case '[':
		i = skip_ws(s, i + 1);
		if (i < s.n && s.b[i] == ']')
			return i + 1;
		for (;;) {
			i = walk(s, skip_ws(s, i), depth + 1, chk, text_key);
			if (i == BAD)
				return BAD;
			i = skip_ws(s, i);
			if (i >= s.n)
				return BAD;
			if (s.b[i] == ']')
				return i + 1;
			if (s.b[i] != ',')
				return BAD;
			i++;
		}
	case '"': {
		u32 end = string_end(s, i);
		if (end == BAD)
			return BAD;
		if (chk && text_key)
			check(s.b + i + 1, end - i - 2);
		return end;
	}
	default: {
		u32 start = i;
		while (i < s.n && !is_delim(s.b[i]))
			i++;
		return i == start ? BAD : i;
	}
	}
}

/* member returns the offset of key's value in the object at i; BAD when
 * malformed; *found says whether it was there. */
static u32 member(span s, u32 i, const char *key, int *found) {
	*found = 0;
	if (i >= s.n || s.b[i] != '{')
		return 0;
	i = skip_ws(s, i + 1);
	if (i < s.n && s.b[i] == '}')
		return 0;
	for (;;) {
		i = skip_ws(s, i);
		if (i >= s.n || s.b[i] != '"')
			return BAD;
		u32 kend = string_end(s, i);
		if (kend == BAD)
			return BAD;
		int hit = key_is(s, i + 1, kend - 1, key);
		i = skip_ws(s, kend);
		if (i >= s.n || s.b[i] != ':')
			return BAD;
		i = skip_ws(s, i + 1);
		if (hit) {
			*found = 1;
			return i;
		}
		i = walk(s, i, 0, 0, 0);
		if (i == BAD)
			return BAD;
		i = skip_ws(s, i);
		if (i >= s.n)
			return BAD;
		if (s.b[i] == '}')
			return 0;
		if (s.b[i] != ',')
			return BAD;
		i++;
	}
}

/* load_patterns reads ctx.config.blocked; 0 when ctx is malformed. */
static int load_patterns(span ctx) {
	int found;
	npat = 0;
	pats.len = 0;
	for (int p = 0; p < MAX_PATTERNS; p++)
		matched[p] = 0;
	u32 cfg = member(ctx, skip_ws(ctx, 0), "config", &found);
	if (cfg == BAD)
		return 0;
	if (!found)
		return 1;
	u32 i = member(ctx, cfg, "blocked", &found);
	if (i == BAD)
		return 0;
	if (!found || ctx.b[i] != '[')
		return 1;
	i = skip_ws(ctx, i + 1);
	if (i < ctx.n && ctx.b[i] == ']')
		return 1;
	for (;;) {
		i = skip_ws(ctx, i);
		if (i >= ctx.n)
			return 0;
		u32 end = walk(ctx, i, 0, 0, 0);
		if (end == BAD)
			return 0;
		if (ctx.b[i] == '"' && end - i > 2 && npat < MAX_PATTERNS) {
			pattern *p = &patterns[npat];
			p->raw_off = i;
			p->raw_len = end - i;
			p->folded_off = pats.len;
			decode(&pats, ctx.b + i + 1, end - i - 2);
			p->folded_len = pats.len - p->folded_off;
			if (p->folded_len > 0)
				npat++;
		}
		i = skip_ws(ctx, end);
		if (i >= ctx.n)
			return 0;
		if (ctx.b[i] == ']')
			return 1;
		if (ctx.b[i] != ',')
			return 0;
		i++;
	}
}

/* scan_request checks the text under the request's "messages"; 0 when
 * malformed. */
static int scan_request(span body) {
	u32 i = skip_ws(body, 0);
	if (i >= body.n || body.b[i] != '{')
		return 0;
	i = skip_ws(body, i + 1);
	if (i < body.n && body.b[i] == '}')
		return 1;
	for (;;) {
		i = skip_ws(body, i);
		if (i >= body.n || body.b[i] != '"')
			return 0;
		u32 kend = string_end(body, i);
		if (kend == BAD)
			return 0;
		int messages = key_is(body, i + 1, kend - 1, "messages");
		i = skip_ws(body, kend);
		if (i >= body.n || body.b[i] != ':')
			return 0;
		i = walk(body, skip_ws(body, i + 1), 1, messages, 0);
		if (i == BAD)
			return 0;
		i = skip_ws(body, i);
		if (i >= body.n)
			return 0;
		if (body.b[i] == '}')
			return 1;
		if (body.b[i] != ',')
			return 0;
		i++;
	}
}

static void put_matched(sy_out *out, const u8 *ctx) {
	sy_out_byte(out, '[');
	int first = 1;
	for (int p = 0; p < npat; p++) {
		if (!matched[p])
			continue;
		if (!first)
			sy_out_byte(out, ',');
		first = 0;
		sy_out_write(out, ctx + patterns[p].raw_off, patterns[p].raw_len);
	}
	sy_out_byte(out, ']');
}

const char *sy_pre_request(const sy_in *in, sy_out *out) {
	if (in->n < 2)
		return "malformed input frame";
	sy_bytes c = sy_field(in, 0), b = sy_field(in, 1);
	span ctx = {c.p, (u32)c.len}, body = {b.p, (u32)b.len};
	if (!load_patterns(ctx))
		return "ctx is not valid JSON";
	if (npat > 0 && !scan_request(body))
		return "the request is not valid JSON";
	int n = 0;
	for (int p = 0; p < npat; p++)
		n += matched[p];
	if (n == 0) {
		sy_out_field_str(out, "continue");
		sy_out_field(out, "", 0); /* empty body (unchanged) */
		sy_out_field(out, "", 0); /* empty summary */
		return NULL;
	}
	sy_out_field_str(out, "block");
	sy_out_open(out);
	sy_out_puts(out, "{\"code\":403,\"message\":\"request blocked: it contains a blocked pattern\",\"metadata\":{\"patterns\":");
	put_matched(out, ctx.b);
	sy_out_puts(out, "}}");
	sy_out_close(out);
	sy_out_open(out);
	sy_out_printf(out, "{\"type\":\"guardrail\",\"summary\":\"matched %d blocked pattern(s)\",\"data\":{\"action\":\"block\",\"detected\":true,\"patterns\":", n);
	put_matched(out, ctx.b);
	sy_out_puts(out, "}}");
	sy_out_close(out);
	return NULL;
}

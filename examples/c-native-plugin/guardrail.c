/*
 * Keyword guardrail for Switchyard, in C against the native ABI v1
 * (docs/abi.md). The Go (examples/go-native-plugin) and AssemblyScript
 * (examples/as-extism-plugin) versions do exactly the same thing, byte for
 * byte; see the Go version for the rules.
 *
 * Freestanding: no libc, no imports at all. Build with
 *
 *   clang --target=wasm32 -nostdlib -O2 -mbulk-memory \
 *         -Wl,--no-entry -o guardrail.wasm guardrail.c
 *
 * Memory: the input, output and decode buffers live in linear memory after
 * the static data, are reused across calls and only grow (doubling) when a
 * call needs more than any call before. Growth past the module's memory cap
 * traps; the host then discards the instance and fails that call with 502.
 */

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned long size_t;

#define EXPORT(name) __attribute__((export_name(name)))

enum { HOOK_PRE_REQUEST = 7, MAX_PATTERNS = 64, MAX_DEPTH = 64 };

/* ---- memory: a bump allocator over memory.grow ---- */

extern u8 __heap_base;
static size_t heap_top;

static u8 *grow_alloc(size_t n) {
	if (heap_top == 0)
		heap_top = (size_t)&__heap_base;
	size_t p = (heap_top + 15) & ~(size_t)15;
	size_t end = p + n;
	size_t have = __builtin_wasm_memory_size(0) * 65536;
	if (end > have) {
		size_t pages = (end - have + 65535) / 65536;
		if (__builtin_wasm_memory_grow(0, pages) == (size_t)-1)
			__builtin_trap();
	}
	heap_top = end;
	return (u8 *)p;
}

typedef struct {
	u8 *p;
	u32 len, cap;
} buf;

/* reserve makes room for n more bytes, moving the contents to a larger
 * region when needed. The old region is not reused: growth is rare. */
static void reserve(buf *b, u32 n) {
	if (b->len + n <= b->cap)
		return;
	u32 cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	u8 *p = grow_alloc(cap);
	if (b->len)
		__builtin_memcpy(p, b->p, b->len);
	b->p = p;
	b->cap = cap;
}

static void put(buf *b, const void *s, u32 n) {
	reserve(b, n);
	__builtin_memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void putc_(buf *b, u8 c) {
	reserve(b, 1);
	b->p[b->len++] = c;
}

static u32 cstrlen(const char *s) {
	u32 n = 0;
	while (s[n])
		n++;
	return n;
}

static void puts_(buf *b, const char *s) { put(b, s, cstrlen(s)); }

static buf in, out, text, pats;

/* ---- the ABI exports ---- */

EXPORT("switchyard_abi_v1") void abi_marker(void) {}

EXPORT("sy_input") u8 *sy_input(u32 size) {
	in.len = 0;
	reserve(&in, size ? size : 1);
	in.len = size;
	return in.p;
}

/* output fields: open_field starts one, close_field patches its length */
static u32 field_at;

static void open_field(void) {
	field_at = out.len;
	put(&out, "\0\0\0\0", 4);
}

static void close_field(void) {
	u32 n = out.len - field_at - 4;
	out.p[field_at] = (u8)n;
	out.p[field_at + 1] = (u8)(n >> 8);
	out.p[field_at + 2] = (u8)(n >> 16);
	out.p[field_at + 3] = (u8)(n >> 24);
}

static void field_str(const char *s) {
	open_field();
	puts_(&out, s);
	close_field();
}

static u64 result(void) { return ((u64)(size_t)out.p << 32) | out.len; }

static u64 fail(const char *msg) {
	out.len = 0;
	putc_(&out, 1);
	puts_(&out, msg);
	return result();
}

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

static void put_utf8(buf *d, u32 r) {
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
static void decode(buf *d, const u8 *s, u32 n) {
	reserve(d, n); /* decoding never makes a string longer */
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

static void put_matched(const u8 *ctx) {
	putc_(&out, '[');
	int first = 1;
	for (int p = 0; p < npat; p++) {
		if (!matched[p])
			continue;
		if (!first)
			putc_(&out, ',');
		first = 0;
		put(&out, ctx + patterns[p].raw_off, patterns[p].raw_len);
	}
	putc_(&out, ']');
}

static void put_int(buf *b, int n) {
	if (n >= 10)
		put_int(b, n / 10);
	putc_(b, (u8)('0' + n % 10));
}

/* read_field reads field k of the input frame. */
static int read_field(u32 size, int k, span *f) {
	u32 at = 0;
	for (int j = 0;; j++) {
		if (at + 4 > size)
			return 0;
		u32 n = in.p[at] | in.p[at + 1] << 8 | in.p[at + 2] << 16 | (u32)in.p[at + 3] << 24;
		at += 4;
		if (n > size - at)
			return 0;
		if (j == k) {
			f->b = in.p + at;
			f->n = n;
			return 1;
		}
		at += n;
	}
}

EXPORT("sy_handle") u64 sy_handle(u32 hook, u32 size) {
	out.len = 0;
	if (hook != HOOK_PRE_REQUEST)
		return fail("hook is not implemented by this module");
	span ctx, body;
	if (!read_field(size, 0, &ctx) || !read_field(size, 1, &body))
		return fail("malformed input frame");
	if (!load_patterns(ctx))
		return fail("ctx is not valid JSON");
	if (npat > 0 && !scan_request(body))
		return fail("the request is not valid JSON");
	int n = 0;
	for (int p = 0; p < npat; p++)
		n += matched[p];
	putc_(&out, 0);
	if (n == 0) {
		field_str("continue");
		put(&out, "\0\0\0\0\0\0\0\0", 8); /* empty body (unchanged), empty summary */
		return result();
	}
	field_str("block");
	open_field();
	puts_(&out, "{\"code\":403,\"message\":\"request blocked: it contains a blocked pattern\",\"metadata\":{\"patterns\":");
	put_matched(ctx.b);
	puts_(&out, "}}");
	close_field();
	open_field();
	puts_(&out, "{\"type\":\"guardrail\",\"summary\":\"matched ");
	put_int(&out, n);
	puts_(&out, " blocked pattern(s)\",\"data\":{\"action\":\"block\",\"detected\":true,\"patterns\":");
	put_matched(ctx.b);
	puts_(&out, "}}");
	close_field();
	return result();
}

/*
 * switchyard.h — a header-only guest library for Switchyard plugins in C and
 * C++ (docs/abi.md, docs/plugins.md "Way two"), over wasi-libc: the ABI's
 * exports, input and output frames, error outputs and every host function,
 * so a plugin is its hooks and nothing of the ABI by hand.
 *
 * Build (Debian: apt-get install clang-14 lld-14 wasi-libc
 * libclang-rt-14-dev-wasm32, or scripts/install-deps.sh):
 *
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 -mbulk-memory \
 *         -I abi/c -Wl,--strip-all -o plugin.wasm plugin.c
 *
 * -mbulk-memory turns memcpy and memset of the module's own code into the
 * memory.copy and memory.fill instructions (wasi-libc's are plain C loops).
 * -mexec-model=reactor links wasi-libc's reactor start-up: the module
 * exports _initialize (the host calls it once, docs/abi.md section 1) and no
 * _start. The module imports wasi_snapshot_preview1 (sandboxed by the host:
 * no files, no environment, fake clocks) and, from "switchyard", only the
 * host functions it calls: every wrapper below is static, so one a plugin
 * does not call is not linked and its import is not there (a module that
 * imports an ungranted host function is refused at load).
 *
 * Use: in exactly one .c file of the module
 *
 *   #define SWITCHYARD_IMPLEMENTATION
 *   #include "switchyard.h"
 *
 *   const char *sy_pre_request(const sy_in *in, sy_out *out) {
 *           sy_bytes ctx = sy_field(in, 0), body = sy_field(in, 1);
 *           sy_out_field_str(out, "continue");
 *           ...
 *           return NULL;             // or an error message: a 502 naming the hook
 *   }
 *
 * A hook is the function named sy_<hook> (sy_pre_request, sy_chat_request,
 * ...); each is a weak declaration here, so a module defines the ones its
 * manifest declares and a call of any other is answered "hook is not
 * implemented by this module". Handlers return NULL for success or an
 * error message (a string literal, or sy_errorf's). The input fields are
 * views of the reused input buffer, valid until the handler returns; the
 * output buffer is reused too: a call allocates nothing once the buffers
 * have grown.
 *
 * From C++: the same, with the handlers declared extern "C" (this header
 * does it for the declarations when included from C++).
 */
#ifndef SWITCHYARD_H
#define SWITCHYARD_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Hook ids (docs/abi.md section 3). */
enum {
	SY_HOOK_CHAT_REQUEST = 1,
	SY_HOOK_CHAT_RESPONSE = 2,
	SY_HOOK_CHAT_STREAM_EVENT = 3,
	SY_HOOK_EMBED_REQUEST = 4,
	SY_HOOK_EMBED_RESPONSE = 5,
	SY_HOOK_ERROR = 6,
	SY_HOOK_PRE_REQUEST = 7,
	SY_HOOK_POST_RESPONSE = 8,
	SY_HOOK_POST_CHUNK = 9,
};

/* Log levels of sy_log. */
enum { SY_DEBUG = 0, SY_INFO = 1, SY_WARN = 2, SY_ERROR = 3 };

/* Host function result codes (docs/abi.md section 5). */
enum {
	SY_HOST_DENIED = -1,
	SY_HOST_FAILED = -2,
	SY_HOST_NOT_FOUND = -3,
	SY_HOST_QUOTA = -4,
	SY_HOST_BUDGET = -5,
};

/* The most fields sy_in and sy_reply split a frame into; later fields
 * are not visible (no hook has more than 3 inputs, chat_batch answers 16). */
#define SY_MAX_FIELDS 32

/* sy_bytes is a view of bytes: not NUL-terminated. */
typedef struct {
	const uint8_t *p;
	size_t len;
} sy_bytes;

/* SY_STR views a NUL-terminated string (its length without the NUL). */
static inline sy_bytes sy_str(const char *s) {
	sy_bytes b = {(const uint8_t *)s, s ? strlen(s) : 0};
	return b;
}

/* sy_eq reports whether b holds exactly the string s. */
static inline int sy_eq(sy_bytes b, const char *s) {
	size_t n = strlen(s);
	return b.len == n && memcmp(b.p, s, n) == 0;
}

/* A little JSON reading, enough for ctx and configuration (the Go sdk's
 * sdk.Get): values are returned raw, as views of the input (a string with
 * its quotes and escapes; sy_json_str strips the quotes). */

/* sy_json_get finds the value at a dotted path of object members
 * ("config.blocked") in json: 1 and *val, or 0 when it is absent or the
 * JSON on the way is malformed. */
int sy_json_get(sy_bytes json, const char *path, sy_bytes *val);

/* sy_json_next steps through an array: start with *it the array's raw
 * value; each call sets *elem to the next element and returns 1, then 0. */
int sy_json_next(sy_bytes *it, sy_bytes *elem);

/* sy_json_str is a raw JSON string's content without its quotes (escapes
 * left as they are); empty when raw is not a string. */
static inline sy_bytes sy_json_str(sy_bytes raw) {
	sy_bytes s = {raw.p, 0};
	if (raw.len >= 2 && raw.p[0] == '"' && raw.p[raw.len - 1] == '"') {
		s.p = raw.p + 1;
		s.len = raw.len - 2;
	}
	return s;
}

/* sy_in is a hook's input frame: ctx, then the hook's fields. */
typedef struct {
	sy_bytes f[SY_MAX_FIELDS];
	int n;
} sy_in;

/* sy_field is input field i (0 is ctx), empty when the frame has fewer. */
static inline sy_bytes sy_field(const sy_in *in, int i) {
	sy_bytes none = {(const uint8_t *)"", 0};
	return i >= 0 && i < in->n ? in->f[i] : none;
}

/* sy_buf is a growable byte buffer (malloc'd, reused). */
typedef struct {
	uint8_t *p;
	size_t len, cap;
} sy_buf;

/* sy_out is a hook's output: a frame of fields, written whole
 * (sy_out_field) or piecewise (sy_out_open, writes, sy_out_close). */
typedef struct {
	sy_buf b;
	size_t open_at; /* where the open field's length goes */
} sy_out;

void sy_buf_reserve(sy_buf *b, size_t n);
void sy_buf_write(sy_buf *b, const void *p, size_t n);
void sy_out_field(sy_out *o, const void *p, size_t n);
void sy_out_open(sy_out *o);
void sy_out_close(sy_out *o);
void sy_out_printf(sy_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *sy_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int sy_split(const uint8_t *p, size_t n, sy_bytes *f, int max);

static inline void sy_out_write(sy_out *o, const void *p, size_t n) { sy_buf_write(&o->b, p, n); }
static inline void sy_out_puts(sy_out *o, const char *s) { sy_buf_write(&o->b, s, strlen(s)); }
static inline void sy_out_byte(sy_out *o, uint8_t c) {
	sy_buf_reserve(&o->b, 1);
	o->b.p[o->b.len++] = c;
}
static inline void sy_out_field_str(sy_out *o, const char *s) { sy_out_field(o, s, strlen(s)); }
static inline void sy_out_field_bytes(sy_out *o, sy_bytes b) { sy_out_field(o, b.p, b.len); }

/* A hook's handler: NULL on success, else the error message. */
typedef const char *sy_handler(const sy_in *in, sy_out *out);

/* The hooks: define the ones the manifest declares. */
sy_handler sy_chat_request __attribute__((weak));
sy_handler sy_chat_response __attribute__((weak));
sy_handler sy_chat_stream_event __attribute__((weak));
sy_handler sy_embed_request __attribute__((weak));
sy_handler sy_embed_response __attribute__((weak));
sy_handler sy_error __attribute__((weak));
sy_handler sy_pre_request __attribute__((weak));
sy_handler sy_post_response __attribute__((weak));
sy_handler sy_post_chunk __attribute__((weak));

/* ---- host functions (import module "switchyard"; docs/abi.md section 5) ---- */

#define SY_IMPORT(name) __attribute__((import_module("switchyard"), import_name(name)))

SY_IMPORT("log") void sy__log(int32_t level, const uint8_t *p, int32_t n);
SY_IMPORT("http_request") int64_t sy__http_request(const uint8_t *p, int32_t n);
SY_IMPORT("http_response") int32_t sy__http_response(uint8_t *p, int32_t limit);
SY_IMPORT("chat") int64_t sy__chat(const uint8_t *p, int32_t n);
SY_IMPORT("chat_batch") int64_t sy__chat_batch(const uint8_t *p, int32_t n);
SY_IMPORT("chat_reserve") int64_t sy__chat_reserve(const uint8_t *p, int32_t n);
SY_IMPORT("count_tokens") int64_t sy__count_tokens(const uint8_t *p, int32_t n);
SY_IMPORT("kv_get") int64_t sy__kv_get(const uint8_t *p, int32_t n);
SY_IMPORT("kv_put") int64_t sy__kv_put(const uint8_t *p, int32_t n);
SY_IMPORT("embed") int64_t sy__embed(const uint8_t *p, int32_t n);
SY_IMPORT("vector_put") int64_t sy__vector_put(const uint8_t *p, int32_t n);
SY_IMPORT("vector_search") int64_t sy__vector_search(const uint8_t *p, int32_t n);
SY_IMPORT("metric") int64_t sy__metric(const uint8_t *p, int32_t n);
SY_IMPORT("result") int32_t sy__result(uint8_t *p, int32_t limit);

/* sy_reply is a host function's answer: its result frame's fields (views
 * of raw, valid until the next call with the same reply), or on failure
 * code < 0 and message. Zero-initialise one and reuse it. */
typedef struct {
	int64_t code;      /* the frame's size (>= 0), or a SY_HOST_* code */
	sy_bytes f[SY_MAX_FIELDS];
	int n;             /* fields in f */
	sy_bytes message;  /* when code < 0: why */
	sy_buf raw;
} sy_reply;

typedef int64_t sy_host_fn(const uint8_t *p, int32_t n);
typedef int32_t sy_copy_fn(uint8_t *p, int32_t limit);

int64_t sy_host_call(sy_host_fn *fn, sy_copy_fn *copy, const sy_bytes *args, int nargs, sy_reply *r);

/* sy_log writes a line to the module's log (grant "log"), printf-style;
 * the host keeps 4 KiB of a line. */
static inline void sy_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void sy_log(int level, const char *fmt, ...) {
	char line[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof line)
		n = sizeof line - 1;
	sy__log(level, (const uint8_t *)line, n);
}

/* sy_http sends a request through the host (grant "http", the URL's host
 * in grants.http_domains). headers are "Name: value" lines separated by
 * \n. On success (>= 0) r's fields are [status, headers, body]. */
static inline int64_t sy_http(const char *method, const char *url, const char *headers, sy_bytes body, sy_reply *r) {
	sy_bytes a[4] = {sy_str(method), sy_str(url), sy_str(headers), body};
	return sy_host_call(sy__http_request, sy__http_response, a, 4, r);
}

/* sy_chat runs an OpenAI chat body as a sub-request of the request (grant
 * "chat"): r's fields are [status (decimal), response body]. */
static inline int64_t sy_chat(sy_bytes body, sy_reply *r) {
	return sy_host_call(sy__chat, sy__result, &body, 1, r);
}

/* sy_chat_batch runs 1-8 bodies at once: [status 1, body 1, ...]. */
static inline int64_t sy_chat_batch(const sy_bytes *bodies, int n, sy_reply *r) {
	return sy_host_call(sy__chat_batch, sy__result, bodies, n, r);
}

/* sy_chat_reserve holds the worst-case cost of planned sub-requests. */
static inline int64_t sy_chat_reserve(sy_bytes plan, sy_reply *r) {
	return sy_host_call(sy__chat_reserve, sy__result, &plan, 1, r);
}

/* sy_count_tokens counts text's tokens for model (grant "count_tokens"):
 * the count, or a SY_HOST_* code (r says why). */
static inline int64_t sy_count_tokens(const char *model, sy_bytes text, sy_reply *r) {
	sy_bytes a[2] = {sy_str(model), text};
	int64_t code = sy_host_call(sy__count_tokens, sy__result, a, 2, r);
	if (code < 0)
		return code;
	return r->n > 0 ? strtoll((const char *)r->f[0].p, NULL, 10) : SY_HOST_FAILED;
}

/* sy_kv_get reads key (grant "kv"): r's field 0 is the value;
 * SY_HOST_NOT_FOUND when absent or expired. */
static inline int64_t sy_kv_get(sy_bytes key, sy_reply *r) {
	return sy_host_call(sy__kv_get, sy__result, &key, 1, r);
}

/* sy_kv_put writes key (an empty value deletes it); ttl 0 is the maximum. */
static inline int64_t sy_kv_put(sy_bytes key, sy_bytes value, unsigned ttl_seconds, sy_reply *r) {
	char ttl[16];
	snprintf(ttl, sizeof ttl, "%u", ttl_seconds);
	sy_bytes a[3] = {key, value, sy_str(ttl)};
	return sy_host_call(sy__kv_put, sy__result, a, 3, r);
}

/* sy_embed runs an embeddings body as a sub-request (grant "embed"):
 * [status, response body]. */
static inline int64_t sy_embed(sy_bytes body, sy_reply *r) {
	return sy_host_call(sy__embed, sy__result, &body, 1, r);
}

/* sy_vector_put stores dims float32s under id (grant "vector"). */
static inline int64_t sy_vector_put(const char *partition, const char *id, const char *tag, const float *vec, size_t dims,
				    unsigned ttl_seconds, sy_reply *r) {
	char ttl[16];
	snprintf(ttl, sizeof ttl, "%u", ttl_seconds);
	sy_bytes v = {(const uint8_t *)vec, dims * sizeof(float)}; /* wasm32 is little-endian */
	sy_bytes a[5] = {sy_str(partition), sy_str(id), sy_str(tag), v, sy_str(ttl)};
	return sy_host_call(sy__vector_put, sy__result, a, 5, r);
}

/* sy_vector_search finds the most similar vector of the partition with
 * the tag: [id, similarity, age seconds]; SY_HOST_NOT_FOUND below min. */
static inline int64_t sy_vector_search(const char *partition, const char *tag, const float *vec, size_t dims, double min,
				       sy_reply *r) {
	char m[32];
	snprintf(m, sizeof m, "%.6f", min);
	sy_bytes v = {(const uint8_t *)vec, dims * sizeof(float)};
	sy_bytes a[4] = {sy_str(partition), sy_str(tag), v, sy_str(m)};
	return sy_host_call(sy__vector_search, sy__result, a, 4, r);
}

/* sy_metric adds value to the counter, or observes it in the histogram,
 * that the manifest declares as name (grant "metrics"; docs/abi.md,
 * "metric"). 0, or a SY_HOST_* code: an undeclared name is refused. */
static inline int64_t sy_metric(const char *name, double value) {
	static sy_reply r; /* the answer is empty or a message nobody reads */
	char v[40];
	snprintf(v, sizeof v, "%.17g", value);
	sy_bytes a[2] = {sy_str(name), sy_str(v)};
	return sy_host_call(sy__metric, sy__result, a, 2, &r);
}

#ifdef __cplusplus
}
#endif

/* ---- the implementation: in one .c file, after #define SWITCHYARD_IMPLEMENTATION ---- */
#ifdef SWITCHYARD_IMPLEMENTATION

#ifdef __cplusplus
extern "C" {
#endif

void sy_buf_reserve(sy_buf *b, size_t n) {
	if (b->len + n <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	uint8_t *p = (uint8_t *)realloc(b->p, cap);
	if (!p)
		__builtin_trap(); /* over the manifest's memory_pages: the host fails the call */
	b->p = p;
	b->cap = cap;
}

void sy_buf_write(sy_buf *b, const void *p, size_t n) {
	if (n == 0)
		return;
	sy_buf_reserve(b, n);
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void sy__put_u32(sy_buf *b, size_t at, uint32_t v) {
	b->p[at] = (uint8_t)v;
	b->p[at + 1] = (uint8_t)(v >> 8);
	b->p[at + 2] = (uint8_t)(v >> 16);
	b->p[at + 3] = (uint8_t)(v >> 24);
}

static void sy__frame_field(sy_buf *b, const void *p, size_t n) {
	sy_buf_reserve(b, 4 + n);
	sy__put_u32(b, b->len, (uint32_t)n);
	b->len += 4;
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

void sy_out_field(sy_out *o, const void *p, size_t n) { sy__frame_field(&o->b, p, n); }

void sy_out_open(sy_out *o) {
	o->open_at = o->b.len;
	sy_buf_write(&o->b, "\0\0\0\0", 4);
}

void sy_out_close(sy_out *o) { sy__put_u32(&o->b, o->open_at, (uint32_t)(o->b.len - o->open_at - 4)); }

void sy_out_printf(sy_out *o, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	sy_buf_reserve(&o->b, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf((char *)o->b.p + o->b.len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	o->b.len += (size_t)n;
}

const char *sy_errorf(const char *fmt, ...) {
	static char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return msg;
}

static size_t sy__ws(sy_bytes j, size_t i) {
	while (i < j.len && (j.p[i] == ' ' || j.p[i] == '\t' || j.p[i] == '\n' || j.p[i] == '\r'))
		i++;
	return i;
}

/* sy__skip returns the offset just past the value at i, or (size_t)-1. */
static size_t sy__skip(sy_bytes j, size_t i) {
	const size_t bad = (size_t)-1;
	if (i >= j.len)
		return bad;
	if (j.p[i] == '"') {
		for (i++; i < j.len; i++) {
			if (j.p[i] == '\\')
				i++;
			else if (j.p[i] == '"')
				return i + 1;
		}
		return bad;
	}
	if (j.p[i] == '{' || j.p[i] == '[') {
		uint8_t close = j.p[i] == '{' ? '}' : ']';
		i = sy__ws(j, i + 1);
		if (i < j.len && j.p[i] == close)
			return i + 1;
		for (;;) {
			if (close == '}') {
				i = sy__skip(j, sy__ws(j, i)); /* the key */
				if (i == bad || (i = sy__ws(j, i)) >= j.len || j.p[i] != ':')
					return bad;
				i++;
			}
			i = sy__skip(j, sy__ws(j, i));
			if (i == bad || (i = sy__ws(j, i)) >= j.len)
				return bad;
			if (j.p[i] == close)
				return i + 1;
			if (j.p[i] != ',')
				return bad;
			i++;
		}
	}
	size_t start = i;
	while (i < j.len && j.p[i] != ',' && j.p[i] != '}' && j.p[i] != ']' && j.p[i] != ' ' && j.p[i] != '\n' && j.p[i] != '\r' && j.p[i] != '\t')
		i++;
	return i == start ? bad : i;
}

int sy_json_get(sy_bytes json, const char *path, sy_bytes *val) {
	const size_t bad = (size_t)-1;
	size_t i = sy__ws(json, 0);
	while (*path) {
		const char *dot = strchr(path, '.');
		size_t klen = dot ? (size_t)(dot - path) : strlen(path);
		if (i >= json.len || json.p[i] != '{')
			return 0;
		i = sy__ws(json, i + 1);
		int found = 0;
		while (!found) {
			if (i >= json.len || json.p[i] != '"')
				return 0;
			size_t kend = sy__skip(json, i);
			if (kend == bad)
				return 0;
			found = kend - i - 2 == klen && memcmp(json.p + i + 1, path, klen) == 0;
			i = sy__ws(json, kend);
			if (i >= json.len || json.p[i] != ':')
				return 0;
			i = sy__ws(json, i + 1);
			if (found)
				break;
			i = sy__skip(json, i);
			if (i == bad || (i = sy__ws(json, i)) >= json.len || json.p[i] != ',')
				return 0;
			i = sy__ws(json, i + 1);
		}
		path += klen + (dot ? 1 : 0);
	}
	size_t end = sy__skip(json, i);
	if (end == bad)
		return 0;
	val->p = json.p + i;
	val->len = end - i;
	return 1;
}

int sy_json_next(sy_bytes *it, sy_bytes *elem) {
	size_t i = sy__ws(*it, 0);
	if (i < it->len && (it->p[i] == '[' || it->p[i] == ','))
		i = sy__ws(*it, i + 1);
	if (i >= it->len || it->p[i] == ']')
		return 0;
	size_t end = sy__skip(*it, i);
	if (end == (size_t)-1)
		return 0;
	elem->p = it->p + i;
	elem->len = end - i;
	it->p += end;
	it->len -= end;
	return 1;
}

/* sy_split splits a frame into at most max fields; -1 when malformed. */
int sy_split(const uint8_t *p, size_t n, sy_bytes *f, int max) {
	size_t at = 0;
	int k = 0;
	while (at < n) {
		if (n - at < 4)
			return -1;
		uint32_t len = p[at] | p[at + 1] << 8 | p[at + 2] << 16 | (uint32_t)p[at + 3] << 24;
		at += 4;
		if (len > n - at)
			return -1;
		if (k < max) {
			f[k].p = p + at;
			f[k].len = len;
			k++;
		}
		at += len;
	}
	return k;
}

int64_t sy_host_call(sy_host_fn *fn, sy_copy_fn *copy, const sy_bytes *args, int nargs, sy_reply *r) {
	static sy_buf req; /* the request frame, reused */
	req.len = 0;
	for (int i = 0; i < nargs; i++)
		sy__frame_field(&req, args[i].p, args[i].len);
	int64_t code = fn(req.p, (int32_t)req.len);
	int32_t size = code >= 0 ? (int32_t)code : copy(NULL, 0);
	r->raw.len = 0;
	sy_buf_reserve(&r->raw, size > 0 ? (size_t)size : 1);
	if (size > 0)
		copy(r->raw.p, size);
	r->raw.len = size > 0 ? (size_t)size : 0;
	r->code = code;
	r->n = sy_split(r->raw.p, r->raw.len, r->f, SY_MAX_FIELDS);
	if (r->n < 0)
		r->n = 0;
	r->message.p = (const uint8_t *)"";
	r->message.len = 0;
	if (code < 0) {
		if (r->n > 0)
			r->message = r->f[0];
		r->n = 0;
	}
	return code;
}

static sy_buf sy__in;
static sy_out sy__out;

__attribute__((export_name("switchyard_abi_v1"))) void sy__abi_marker(void) {}

__attribute__((export_name("sy_input"))) uint8_t *sy__input(uint32_t size) {
	sy__in.len = 0;
	sy_buf_reserve(&sy__in, size ? size : 1);
	sy__in.len = size;
	return sy__in.p;
}

static uint64_t sy__result_of(void) { return ((uint64_t)(uintptr_t)sy__out.b.p << 32) | (uint32_t)sy__out.b.len; }

static uint64_t sy__fail(const char *msg) {
	sy__out.b.len = 0;
	sy_out_byte(&sy__out, 1);
	sy_out_puts(&sy__out, msg);
	return sy__result_of();
}

__attribute__((export_name("sy_handle"))) uint64_t sy__handle(uint32_t hook, uint32_t size) {
	sy_handler *h = NULL;
	switch (hook) {
	case SY_HOOK_CHAT_REQUEST: h = sy_chat_request; break;
	case SY_HOOK_CHAT_RESPONSE: h = sy_chat_response; break;
	case SY_HOOK_CHAT_STREAM_EVENT: h = sy_chat_stream_event; break;
	case SY_HOOK_EMBED_REQUEST: h = sy_embed_request; break;
	case SY_HOOK_EMBED_RESPONSE: h = sy_embed_response; break;
	case SY_HOOK_ERROR: h = sy_error; break;
	case SY_HOOK_PRE_REQUEST: h = sy_pre_request; break;
	case SY_HOOK_POST_RESPONSE: h = sy_post_response; break;
	case SY_HOOK_POST_CHUNK: h = sy_post_chunk; break;
	}
	if (!h)
		return sy__fail("hook is not implemented by this module");
	static sy_in in;
	in.n = sy_split(sy__in.p, size, in.f, SY_MAX_FIELDS);
	if (in.n < 0)
		return sy__fail("malformed input frame");
	sy__out.b.len = 0;
	sy_out_byte(&sy__out, 0); /* status: ok, then the fields */
	const char *err = h(&in, &sy__out);
	if (err)
		return sy__fail(err);
	return sy__result_of();
}

#ifdef __cplusplus
}
#endif

#endif /* SWITCHYARD_IMPLEMENTATION */
#endif /* SWITCHYARD_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * The output of perf bpf: plain text, printed by the commands, CSV (-x)
 * with a header line, or one JSON object a line (-j), as perf stat has
 * them; keys and type names as bpftool has them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <bpf/libbpf.h>
#include <linux/time64.h>
#include <linux/bits.h>
#include <linux/compiler.h>
#include <linux/kernel.h>
#include <linux/zalloc.h>

#include "bpf-desc.h"
#include "bpf-out.h"
#include "debug.h"

/*
 * Strings from outside perf (comms, cgroup paths, file names, names from
 * BTF or kallsyms, link targets) are printed escaped, the same way by
 * every command:
 *  - text and CSV: control characters (C0, DEL and C1, as UTF-8 encodes
 *    it) and each byte of ill-formed UTF-8 as \xNN, a byte each: nothing
 *    reaches a terminal raw, no newline splits a line.  Printable UTF-8
 *    and backslashes pass as they are; CSV then quotes as it does.
 *  - JSON: valid UTF-8: control characters and C1 as \u00XX, each byte
 *    of ill-formed UTF-8 as \ufffd, '"' and '\\' escaped.
 */
enum bpf_esc {
	BPF_ESC_TEXT,
	BPF_ESC_CSV,		/* text within quotes: a quote doubled */
	BPF_ESC_JSON,
};

/* The length of the well-formed UTF-8 sequence at @s, its code point in *@cp; 0 if none */
static int utf8_seq(const unsigned char *s, u32 *cp)
{
	u32 c = s[0], min;
	int len, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		c &= 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		c &= 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		c &= 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	/* a '\0' is no continuation byte: nothing is read past the end */
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	/* overlong, a surrogate, above U+10FFFF */
	if (c < min || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return 0;
	*cp = c;
	return len;
}

/* The character at @s as @esc prints it, in @buf; its length, the bytes it took in *@len */
static int bpf_out__escape_one(const char *s, enum bpf_esc esc, char *buf, int *len)
{
	const unsigned char *u = (const unsigned char *)s;
	u32 c = 0;
	int n = utf8_seq(u, &c);

	if (!n) {
		/* a byte of ill-formed UTF-8 */
		*len = 1;
		if (esc == BPF_ESC_JSON)
			return sprintf(buf, "\\ufffd");
		return sprintf(buf, "\\x%02x", u[0]);
	}
	*len = n;
	if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
		if (esc == BPF_ESC_JSON)
			return sprintf(buf, "\\u%04x", c);
		/* C1 is two bytes in UTF-8 */
		if (n == 2)
			return sprintf(buf, "\\x%02x\\x%02x", u[0], u[1]);
		return sprintf(buf, "\\x%02x", u[0]);
	}
	if (esc == BPF_ESC_JSON && (c == '"' || c == '\\'))
		return sprintf(buf, "\\%c", c);
	if (esc == BPF_ESC_CSV && c == '"')
		return sprintf(buf, "\"\"");
	memcpy(buf, s, n);
	return n;
}

/*
 * The bytes each way of escaping changes, and the end of the string, by
 * byte: BPF_PLAIN_END for '\0', then one bit for each enum bpf_esc.
 */
#define BPF_PLAIN_END	BIT(3)
#define BPF_PLAIN_ALL	(BIT(BPF_ESC_TEXT) | BIT(BPF_ESC_CSV) | BIT(BPF_ESC_JSON))
static const unsigned char bpf_plain_stop[256] = {
	[0]		= BPF_PLAIN_END,
	[0x01 ... 0x1f]	= BPF_PLAIN_ALL,
	['"']		= BIT(BPF_ESC_CSV) | BIT(BPF_ESC_JSON),
	['\\']		= BIT(BPF_ESC_JSON),
	[0x7f ... 0xff]	= BPF_PLAIN_ALL,
};

/*
 * The length of @s if @esc prints it as it is: printable ASCII, nothing
 * @esc escapes, no byte @stop (the first of CSV's separator); -1 if not.
 * Most strings are such: they take this way, one scan and one copy.
 */
static ssize_t bpf_out__plain_len(const char *s, enum bpf_esc esc, int stop)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned char mask = BPF_PLAIN_END | BIT(esc);
	size_t i = 0;

	while (!(bpf_plain_stop[u[i]] & mask) && u[i] != stop)
		i++;
	return u[i] ? -1 : (ssize_t)i;
}

/*
 * Lines are built in out->line and written with one fwrite()
 * by bpf_out__end(): a stdio call a field costs more than the rest of
 * its printing.  Out of memory, what is built is written out, and so is
 * the rest of the line as it comes.
 */
static void bpf_out__grow(struct bpf_out *out, const char *s, size_t n)
{
	size_t size = out->size ? 2 * out->size : 512;
	char *line;

	while (size < out->len + n)
		size *= 2;
	line = realloc(out->line, size);
	if (!line) {
		fwrite(out->line, 1, out->len, out->fp);
		fwrite(s, 1, n, out->fp);
		out->len = 0;
		return;
	}
	out->line = line;
	out->size = size;
	memcpy(out->line + out->len, s, n);
	out->len += n;
}

static inline void bpf_out__add(struct bpf_out *out, const char *s, size_t n)
{
	/* nothing: not even a memcpy() to a line not allocated yet */
	if (!n)
		return;
	if (unlikely(out->len + n > out->size)) {
		bpf_out__grow(out, s, n);
		return;
	}
	memcpy(out->line + out->len, s, n);
	out->len += n;
}

void bpf_out__raw(struct bpf_out *out, const char *s)
{
	bpf_out__add(out, s, strlen(s));
}

void bpf_out__printf(struct bpf_out *out, const char *fmt, ...)
{
	char buf[64], *big = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(buf)) {
		bpf_out__add(out, buf, n);
		return;
	}
	va_start(ap, fmt);
	n = vasprintf(&big, fmt, ap);
	va_end(ap);
	if (n >= 0)
		bpf_out__add(out, big, n);
	free(big);
}

static void bpf_out__put(struct bpf_out *out, const char *s, enum bpf_esc esc)
{
	ssize_t plain = bpf_out__plain_len(s, esc, 0);
	char buf[16];
	int len, n;

	if (plain >= 0) {
		bpf_out__add(out, s, plain);
		return;
	}
	for (; *s; s += len) {
		n = bpf_out__escape_one(s, esc, buf, &len);
		bpf_out__add(out, buf, n);
	}
}

/* Escaped as bpf_out__put() does it, through a line of its own */
void bpf_out__text(FILE *fp, const char *s)
{
	struct bpf_out out = { .fp = fp, };

	bpf_out__put(&out, s, BPF_ESC_TEXT);
	fwrite(out.line, 1, out.len, fp);
	free(out.line);
}

char *bpf_out__escape(char *buf, size_t size, const char *s)
{
	ssize_t plain = bpf_out__plain_len(s, BPF_ESC_TEXT, 0);
	char one[16];
	size_t n = 0;
	int len, w;

	if (!size)
		return buf;
	if (plain >= 0 && (size_t)plain < size) {
		memcpy(buf, s, plain + 1);
		return buf;
	}
	for (; *s; s += len) {
		w = bpf_out__escape_one(s, BPF_ESC_TEXT, one, &len);
		if (n + w >= size)
			break;
		memcpy(buf + n, one, w);
		n += w;
	}
	buf[n] = '\0';
	return buf;
}

static void json_quote(struct bpf_out *out, const char *s)
{
	bpf_out__add(out, "\"", 1);
	bpf_out__put(out, s, BPF_ESC_JSON);
	bpf_out__add(out, "\"", 1);
}

/* Quoted when its text holds the separator or a quote; out of memory, unless plain */
static void csv_quote(struct bpf_out *out, const char *s)
{
	ssize_t plain = bpf_out__plain_len(s, BPF_ESC_CSV, (unsigned char)out->sep[0]);
	size_t size;
	char *text;

	if (plain >= 0) {
		bpf_out__add(out, s, plain);
		return;
	}
	size = BPF_OUT_TEXT_SIZE(strlen(s));
	text = malloc(size);
	if (text && !strstr(bpf_out__escape(text, size, s), out->sep) && !strchr(text, '"')) {
		bpf_out__raw(out, text);
	} else {
		bpf_out__add(out, "\"", 1);
		bpf_out__put(out, s, BPF_ESC_CSV);
		bpf_out__add(out, "\"", 1);
	}
	free(text);
}

/*
 * A line is bpf_out__begin(), fields, bpf_out__end().  Text lines are
 * laid out by their callers, through the same line or straight to
 * out->fp, never both in one line; CSV fields are quoted when they hold
 * the separator or a quote, strings are escaped as above.
 */
void bpf_out__begin(struct bpf_out *out)
{
	out->nfields = 0;
	out->len = 0;
	if (out->format == BPF_FORMAT_JSON)
		bpf_out__add(out, "{", 1);
}

void bpf_out__end(struct bpf_out *out)
{
	if (out->format == BPF_FORMAT_JSON)
		bpf_out__add(out, "}", 1);
	bpf_out__add(out, "\n", 1);
	fwrite(out->line, 1, out->len, out->fp);
	out->len = 0;
}

void bpf_out__key(struct bpf_out *out, const char *key)
{
	if (out->format != BPF_FORMAT_JSON) {
		if (out->nfields++)
			bpf_out__add(out, out->sep, out->seplen);
		return;
	}
	/* keys are perf's own, event names at most: nothing to escape */
	if (out->nfields++)
		bpf_out__add(out, ",", 1);
	bpf_out__add(out, "\"", 1);
	bpf_out__raw(out, key);
	bpf_out__add(out, "\":", 2);
}

/* the stdio buffer of an output file */
#define BPF_OUT_FILE_BUF	(64 * 1024)

/* @val in decimal, at the end of @buf (of at least BPF_OUT_DEC_SIZE); its start */
#define BPF_OUT_DEC_SIZE	20
static char *bpf_out__dec(char *end, u64 val)
{
	do {
		*--end = '0' + val % 10;
		val /= 10;
	} while (val);
	return end;
}

void bpf_out__str(struct bpf_out *out, const char *key, const char *val)
{
	bpf_out__key(out, key);
	if (out->format == BPF_FORMAT_JSON)
		json_quote(out, val);
	else
		csv_quote(out, val);
}

void bpf_out__u64(struct bpf_out *out, const char *key, u64 val)
{
	char buf[BPF_OUT_DEC_SIZE], *end = buf + sizeof(buf), *p = bpf_out__dec(end, val);

	bpf_out__key(out, key);
	bpf_out__add(out, p, end - p);
}

/* A time in ns as seconds with nine decimals */
void bpf_out__time(struct bpf_out *out, const char *key, u64 ns)
{
	char buf[BPF_OUT_DEC_SIZE + 11], *end = buf + sizeof(buf), *p;
	u64 frac = ns % NSEC_PER_SEC;
	int i;

	for (i = 0, p = end; i < 9; i++, frac /= 10)
		*--p = '0' + frac % 10;
	*--p = '.';
	p = bpf_out__dec(p, ns / NSEC_PER_SEC);
	bpf_out__key(out, key);
	bpf_out__add(out, p, end - p);
}

/*
 * Text lines are built the same way, from bpf_out__begin() to
 * bpf_out__end(): these print as printf's %*s and %*llu do, @width
 * negative to align left, and a string from outside perf escaped.
 */
void bpf_out__pad(struct bpf_out *out, const char *s, int width)
{
	static const char spaces[] = "                                ";
	size_t len = strlen(s), w = abs(width), n;

	if (width < 0)
		bpf_out__add(out, s, len);
	for (n = len; n < w; n += min(w - n, sizeof(spaces) - 1))
		bpf_out__add(out, spaces, min(w - n, sizeof(spaces) - 1));
	if (width >= 0)
		bpf_out__add(out, s, len);
}

void bpf_out__num(struct bpf_out *out, u64 val, int width)
{
	char buf[BPF_OUT_DEC_SIZE + 1], *end = buf + sizeof(buf);

	*--end = '\0';
	bpf_out__pad(out, bpf_out__dec(end, val), width);
}

/* @val with at least @digits digits, zeros in front */
void bpf_out__num0(struct bpf_out *out, u64 val, int digits)
{
	char buf[BPF_OUT_DEC_SIZE], *end = buf + sizeof(buf), *p = bpf_out__dec(end, val);

	while (end - p < digits && p > buf)
		*--p = '0';
	bpf_out__add(out, p, end - p);
}

void bpf_out__esc(struct bpf_out *out, const char *s)
{
	bpf_out__put(out, s, BPF_ESC_TEXT);
}

/* A field only some lines have: left out of JSON, empty in CSV */
void bpf_out__none(struct bpf_out *out, const char *key)
{
	if (out->format == BPF_FORMAT_CSV)
		bpf_out__key(out, key);
}

void bpf_out__header(struct bpf_out *out, const char * const *keys)
{
	if (out->format != BPF_FORMAT_CSV)
		return;
	bpf_out__begin(out);
	for (; *keys; keys++)
		bpf_out__str(out, *keys, *keys);
	bpf_out__end(out);
}

int bpf_out__setup(struct bpf_out *out, const char *sep, bool json,
		   const char *output_name, const char *cmd)
{
	*out = (struct bpf_out){ .fp = stdout, .format = BPF_FORMAT_TEXT, };
	if (sep && json) {
		pr_err("perf bpf %s: -x and -j are mutually exclusive\n", cmd);
		return -EINVAL;
	}
	if (sep) {
		out->format = BPF_FORMAT_CSV;
		out->sep = strcmp(sep, "\\t") ? sep : "\t";
		out->seplen = strlen(out->sep);
		if (!*out->sep) {
			pr_err("perf bpf %s: -x takes a separator, not an empty string\n", cmd);
			return -EINVAL;
		}
	} else if (json) {
		out->format = BPF_FORMAT_JSON;
	}
	if (output_name) {
		out->fp = fopen(output_name, "w");
		if (!out->fp) {
			pr_err("perf bpf %s: cannot open %s: %s\n", cmd, output_name,
			       strerror(errno));
			out->fp = NULL;
			return -errno;
		}
		/* flushed a few times a second by the commands that stream */
		out->fpbuf = malloc(BPF_OUT_FILE_BUF);
		if (out->fpbuf)
			setvbuf(out->fp, out->fpbuf, _IOFBF, BPF_OUT_FILE_BUF);
	}
	return 0;
}

void bpf_out__exit(struct bpf_out *out)
{
	zfree(&out->line);
	if (out->fp && out->fp != stdout)
		fclose(out->fp);
	out->fp = NULL;
	/* after fclose(), which writes what it holds */
	zfree(&out->fpbuf);
}

/* The link's fields, shared by perf bpf events and perf bpf list */
void bpf_out__link_fields(struct bpf_out *out, const struct bpf_link_desc *link,
			  u32 attach_type)
{
	char buf[16];

	/* an attachment without a link: none, and how it was found (JSON) */
	if (link->found)
		bpf_out__none(out, "link_id");
	else
		bpf_out__u64(out, "link_id", link->id);
	bpf_out__str(out, "link_type", perf_bpf__link_type_name(link->type, buf, sizeof(buf)));
	bpf_out__str(out, "attach_type",
		     perf_bpf__attach_type_name(attach_type, buf, sizeof(buf)) ?: "");
	bpf_out__str(out, "target", link->target ?: "");
	if (link->found && out->format == BPF_FORMAT_JSON)
		bpf_out__str(out, "found", link->found);
	/* the numbers behind a target, when it is known */
	if (out->format != BPF_FORMAT_JSON || !link->target)
		return;
	switch (link->type) {
	case BPF_LINK_TYPE_CGROUP:
		bpf_out__u64(out, "cgroup_id", link->cgroup_id);
		break;
	case BPF_LINK_TYPE_XDP:
	case BPF_LINK_TYPE_TCX:
	case BPF_LINK_TYPE_NETKIT:
		bpf_out__u64(out, "ifindex", link->ifindex);
		break;
	case BPF_LINK_TYPE_NETNS:
		bpf_out__u64(out, "netns_ino", link->netns_ino);
		break;
	case BPF_LINK_TYPE_TRACING:
		bpf_out__u64(out, "target_obj_id", link->target_obj_id);
		bpf_out__u64(out, "target_btf_id", link->target_btf_id);
		break;
	case BPF_LINK_TYPE_STRUCT_OPS:
	case BPF_LINK_TYPE_SOCKMAP:
		bpf_out__u64(out, "map_id", link->map_id);
		break;
	default:
		break;
	}
}

void bpf_out__prog_fields(struct bpf_out *out, const struct bpf_prog_desc *prog)
{
	char tag[2 * BPF_TAG_SIZE + 1], buf[16];

	bpf_out__u64(out, "prog_id", prog->id);
	bpf_out__str(out, "prog_name", prog->name ?: "");
	if (prog->type_known)
		bpf_out__str(out, "prog_type",
			     perf_bpf__prog_type_name(prog->type, buf, sizeof(buf)));
	else
		bpf_out__str(out, "prog_type", "");
	perf_bpf__tag_str(prog->tag, tag);
	bpf_out__str(out, "prog_tag", tag);
}

void bpf_out__owners(struct bpf_out *out, const struct bpf_owners *owners)
{
	int i;

	if (out->format == BPF_FORMAT_JSON) {
		bpf_out__key(out, "pids");
		bpf_out__raw(out, "[");
		for (i = 0; owners && i < owners->nr; i++) {
			bpf_out__printf(out, "%s{\"pid\":%d,\"comm\":", i ? "," : "",
					owners->v[i].pid);
			json_quote(out, owners->v[i].comm);
			bpf_out__raw(out, "}");
		}
		bpf_out__raw(out, "]");
		return;
	}
	if (out->format == BPF_FORMAT_CSV) {
		/* pid/comm, space separated */
		char *all = NULL;
		size_t size = 0;
		FILE *mem = open_memstream(&all, &size);

		for (i = 0; mem && owners && i < owners->nr; i++)
			fprintf(mem, "%s%d/%s", i ? " " : "", owners->v[i].pid, owners->v[i].comm);
		if (mem)
			fclose(mem);
		bpf_out__str(out, "pids", all ?: "");
		free(all);
		return;
	}
	for (i = 0; owners && i < owners->nr; i++) {
		fputs(i ? ", " : "", out->fp);
		bpf_out__text(out->fp, owners->v[i].comm);
		fprintf(out->fp, "(%d)", owners->v[i].pid);
	}
}

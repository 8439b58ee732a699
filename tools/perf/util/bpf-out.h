/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_BPF_OUT_H
#define __PERF_BPF_OUT_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/compiler.h>
#include <linux/types.h>

struct bpf_link_desc;
struct bpf_owners;
struct bpf_prog_desc;

/* Output: plain text, CSV (-x) or one JSON object a line (-j) */
enum bpf_format {
	BPF_FORMAT_TEXT,
	BPF_FORMAT_CSV,
	BPF_FORMAT_JSON,
};

struct bpf_out {
	FILE			*fp;
	enum bpf_format		format;
	const char		*sep;
	size_t			seplen;
	int			nfields;	/* on the current line */
	char			*line;		/* the line being built */
	size_t			len;
	size_t			size;
	char			*fpbuf;		/* -o: the file's stdio buffer */
};

int bpf_out__setup(struct bpf_out *out, const char *sep, bool json,
		   const char *output_name, const char *cmd);
void bpf_out__exit(struct bpf_out *out);
void bpf_out__header(struct bpf_out *out, const char * const *keys);
void bpf_out__begin(struct bpf_out *out);
void bpf_out__end(struct bpf_out *out);
void bpf_out__key(struct bpf_out *out, const char *key);
void bpf_out__raw(struct bpf_out *out, const char *s);
void bpf_out__printf(struct bpf_out *out, const char *fmt, ...) __printf(2, 3);
void bpf_out__str(struct bpf_out *out, const char *key, const char *val);
void bpf_out__u64(struct bpf_out *out, const char *key, u64 val);
void bpf_out__time(struct bpf_out *out, const char *key, u64 ns);
void bpf_out__none(struct bpf_out *out, const char *key);
void bpf_out__pad(struct bpf_out *out, const char *s, int width);
void bpf_out__num(struct bpf_out *out, u64 val, int width);
void bpf_out__num0(struct bpf_out *out, u64 val, int digits);
void bpf_out__esc(struct bpf_out *out, const char *s);
void bpf_out__prog_fields(struct bpf_out *out, const struct bpf_prog_desc *prog);
void bpf_out__link_fields(struct bpf_out *out, const struct bpf_link_desc *link,
			  u32 attach_type);
void bpf_out__owners(struct bpf_out *out, const struct bpf_owners *owners);

/*
 * A string from outside perf in text: control characters and bytes of
 * ill-formed UTF-8 as \xNN (see bpf-out.c).  bpf_out__escape() puts it in
 * @buf of @size, cut before a character that does not fit, and returns
 * @buf; BPF_OUT_TEXT_SIZE() is the most a string of @len bytes takes.
 */
#define BPF_OUT_TEXT_SIZE(len)	(4 * (len) + 1)

void bpf_out__text(FILE *fp, const char *s);
char *bpf_out__escape(char *buf, size_t size, const char *s);

#endif /* __PERF_BPF_OUT_H */

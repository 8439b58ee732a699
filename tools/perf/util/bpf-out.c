// SPDX-License-Identifier: GPL-2.0
/*
 * The output of perf bpf: plain text, printed by the commands, CSV (-x)
 * with a header line, or one JSON object a line (-j), as perf stat has
 * them; keys and type names as bpftool has them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "bpf-desc.h"
#include "bpf-out.h"
#include "debug.h"

/*
 * A line is bpf_out__begin(), fields, bpf_out__end().  Text lines are
 * printed by their callers; CSV fields are quoted when they hold the
 * separator or a quote, JSON strings are escaped.
 */
void bpf_out__begin(struct bpf_out *out)
{
	out->nfields = 0;
	if (out->format == BPF_FORMAT_JSON)
		fputc('{', out->fp);
}

void bpf_out__end(struct bpf_out *out)
{
	if (out->format == BPF_FORMAT_JSON)
		fputc('}', out->fp);
	fputc('\n', out->fp);
}

void bpf_out__key(struct bpf_out *out, const char *key)
{
	if (out->nfields++)
		fputs(out->format == BPF_FORMAT_JSON ? "," : out->sep, out->fp);
	if (out->format == BPF_FORMAT_JSON)
		fprintf(out->fp, "\"%s\":", key);
}

static void json_quote(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(fp, "\\%c", c);
		else if (c < 0x20)
			fprintf(fp, "\\u%04x", c);
		else
			fputc(c, fp);
	}
	fputc('"', fp);
}

static void csv_quote(FILE *fp, const char *sep, const char *s)
{
	if (!strstr(s, sep) && !strpbrk(s, "\"\n")) {
		fputs(s, fp);
		return;
	}
	fputc('"', fp);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', fp);
		fputc(*s, fp);
	}
	fputc('"', fp);
}

void bpf_out__str(struct bpf_out *out, const char *key, const char *val)
{
	bpf_out__key(out, key);
	if (out->format == BPF_FORMAT_JSON)
		json_quote(out->fp, val);
	else
		csv_quote(out->fp, out->sep, val);
}

void bpf_out__u64(struct bpf_out *out, const char *key, u64 val)
{
	bpf_out__key(out, key);
	fprintf(out->fp, "%" PRIu64, val);
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
	out->fp = stdout;
	out->format = BPF_FORMAT_TEXT;
	if (sep && json) {
		pr_err("perf bpf %s: -x and -j are mutually exclusive\n", cmd);
		return -EINVAL;
	}
	if (sep) {
		out->format = BPF_FORMAT_CSV;
		out->sep = strcmp(sep, "\\t") ? sep : "\t";
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
	}
	return 0;
}

/* The link's fields, shared by perf bpf events and perf bpf list */
void bpf_out__link_fields(struct bpf_out *out, const struct bpf_link_desc *link,
			  u32 attach_type)
{
	char buf[16];

	bpf_out__u64(out, "link_id", link->id);
	bpf_out__str(out, "link_type", perf_bpf__link_type_name(link->type, buf, sizeof(buf)));
	bpf_out__str(out, "attach_type",
		     perf_bpf__attach_type_name(attach_type, buf, sizeof(buf)) ?: "");
	bpf_out__str(out, "target", link->target ?: "");
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
	char buf[64];
	int i;

	if (out->format == BPF_FORMAT_JSON) {
		bpf_out__key(out, "pids");
		fputc('[', out->fp);
		for (i = 0; owners && i < owners->nr; i++) {
			fprintf(out->fp, "%s{\"pid\":%d,\"comm\":", i ? "," : "", owners->v[i].pid);
			json_quote(out->fp, owners->v[i].comm);
			fputc('}', out->fp);
		}
		fputc(']', out->fp);
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
		snprintf(buf, sizeof(buf), "%s(%d)", owners->v[i].comm, owners->v[i].pid);
		fprintf(out->fp, "%s%s", i ? ", " : "", buf);
	}
}

/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_BPF_LINK_TYPES_H
#define __PERF_BPF_LINK_TYPES_H

#include <stdbool.h>
#include <linux/types.h>

struct bpf_link_info;

/* An attach type a link record cannot have, for its kind of link */
#define PERF_BPF_ATTACH_TYPE_UNKNOWN	0xffff

u16 perf_bpf_link__attach_type(u16 link_type, u16 attach_type);
bool perf_bpf_link__record_first(u32 link_type);
bool perf_bpf_link__sole_attach_type(u32 link_type, u32 attach_type);
u32 perf_bpf_link_info__attach_type(const struct bpf_link_info *info);

#endif /* __PERF_BPF_LINK_TYPES_H */

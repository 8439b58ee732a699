/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _PERF_UI_BPF_TOP_BROWSER_H_
#define _PERF_UI_BPF_TOP_BROWSER_H_ 1

struct bpf_top;

/* perf bpf top in perf's TUI; built with slang only */
int bpf_top__tui(struct bpf_top *top);

#endif /* _PERF_UI_BPF_TOP_BROWSER_H_ */

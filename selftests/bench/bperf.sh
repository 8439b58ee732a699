#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 'make bench-bperf': what concurrent perf stat --bpf-counters sessions
# cost each context switch, upstream 6.12 perf against ours, in one VM
# run (selftests/bench/bperf-guest.sh does the measuring).  Prints
# usecs/op of 'perf bench sched pipe' and the overhead ratio
# usecs(N) / usecs(0) for each perf, checks the goals, and draws both
# curves in bperf.svg.  A benchmark, not a test: it fails only if the VM
# run does.
TOP=$(cd "$(dirname "$0")/../.." && pwd)
. "$TOP/mk/common.sh"

out=$BUILD_DIR/results/bench-bperf-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"

# The BENCH_* settings of bperf-guest.sh go along into the VM.
cmd=$TOP/selftests/bench/bperf-guest.sh
for v in BENCH_LOOPS BENCH_REPEAT BENCH_N_BASE BENCH_N_OURS; do
	[ -z "${!v:-}" ] || cmd="$v=$(printf %q "${!v}") $cmd"
done

phase "perf bench sched pipe under N bperf sessions, upstream and ours"
# 1000 perf processes need memory; the VM gets more than for the tests.
VM_MEM=${VM_MEM:-16G} "$TOP/selftests/run-vm.sh" --kernel applied \
	--timeout "${BENCH_TIMEOUT:-7200}" --quiet --log "$out/console" \
	--job "$out/job" -- "$cmd" ||
	die "the benchmark VM failed, see $out/console"
phase_done
cp "$out/job/bperf.out" "$out/bperf.out"

# The table: one row per N, usecs/op and overhead for each perf.
awk '
	{ perf = $1 == "perf-base" ? "base" : "ours"; n = $2
	  if (!(n in seen)) { seen[n] = 1; ns[++nn] = n }
	  val[perf, n] = $3 == "fail" ? "fails" : $3 }
	# ok(perf, n): a figure for n and for 0 to divide by
	function ok(p, n) {
		return val[p, n] != "" && val[p, n] != "fails" && val[p, 0] > 0
	}
	END {
		printf "%6s  %14s %10s  %14s %10s\n", "N", "upstream us/op",
			"overhead", "ours us/op", "overhead"
		for (i = 1; i <= nn; i++) {
			n = ns[i]
			printf "%6s", n
			split("base ours", ps, " ")
			for (j = 1; j <= 2; j++) {
				v = val[ps[j], n]; z = val[ps[j], 0]
				if (v == "")
					printf "  %14s %10s", "-", "-"
				else if (v == "fails")
					printf "  %14s %10s", "fails", "-"
				else
					printf "  %14.2f %10.3f", v, v / z
			}
			printf "\n"
		}
		printf "\noverhead = usecs(N) / usecs(0) of the same perf\n"
		if (ok("ours", 1) && ok("ours", 38)) {
			o1 = val["ours", 1] / val["ours", 0]
			o38 = val["ours", 38] / val["ours", 0]
			printf "goal: ours(38) <= 1.3 x ours(1): %.3f <= %.3f: %s\n",
				o38, 1.3 * o1, o38 <= 1.3 * o1 ? "met" : "NOT met"
		} else
			print "goal: ours(38) <= 1.3 x ours(1): not measured"
		if (ok("ours", 1) && ok("base", 1)) {
			b1 = val["base", 1] / val["base", 0]
			printf "goal: ours(1) <= upstream(1):    %.3f <= %.3f: %s\n",
				o1, b1, o1 <= b1 ? "met" : "NOT met"
		} else
			print "goal: ours(1) <= upstream(1): not measured"
	}' "$out/bperf.out" | tee "$out/summary"

# The plot: N on a categorical axis, usecs/op up the side.
awk -v title="perf bench sched pipe under N perf stat --bpf-counters -a sessions" '
	{ perf = $1 == "perf-base" ? "base" : "ours"
	  if (!($2 in x)) { x[$2] = nn++; ns[nn] = $2 }
	  if ($3 != "fail") { v[perf, $2] = $3; if ($3 > max) max = $3 }
	  else failed[perf] = $2 }
	END {
		w = 720; h = 420; l = 70; r = 20; t = 40; b = 60
		max = max * 1.1
		dx = (w - l - r) / (nn > 1 ? nn - 1 : 1)
		printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", w, h
		printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		printf "<text x=\"%d\" y=\"20\" text-anchor=\"middle\">%s</text>\n", w / 2, title
		printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", l, h - b, w - r, h - b
		printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", l, t, l, h - b
		for (i = 0; i <= 5; i++) {
			y = h - b - i * (h - b - t) / 5
			printf "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.0f</text>\n", l - 6, y + 4, max * i / 5
			printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>\n", l, y, w - r, y
		}
		for (i = 1; i <= nn; i++)
			printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", l + (i - 1) * dx, h - b + 18, ns[i]
		printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">N sessions</text>\n", w / 2, h - 15
		printf "<text x=\"15\" y=\"%d\" transform=\"rotate(-90 15 %d)\" text-anchor=\"middle\">usecs/op</text>\n", h / 2, h / 2
		split("base ours", ps, " "); split("#c0392b #2471a3", col, " ")
		split("upstream 6.12 perf|ours", name, "|")
		for (j = 1; j <= 2; j++) {
			pts = ""
			for (i = 1; i <= nn; i++) {
				if (!((ps[j], ns[i]) in v)) continue
				px = l + (i - 1) * dx; py = h - b - v[ps[j], ns[i]] / max * (h - b - t)
				pts = pts sprintf("%.1f,%.1f ", px, py)
				printf "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", px, py, col[j]
			}
			printf "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n", pts, col[j]
			label = name[j] (ps[j] in failed ? " (session " failed[ps[j]] " fails)" : "")
			printf "<text x=\"%d\" y=\"%d\" fill=\"%s\">%s</text>\n", l + 10, t + 16 * j, col[j], label
		}
		printf "</svg>\n"
	}' "$out/bperf.out" >"$out/bperf.svg"
echo "(results, console and plot in $out; plot: $out/bperf.svg)"

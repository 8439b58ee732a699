#!/bin/bash
# perf script and perf report read damaged BPF side-band records sanely
# SPDX-License-Identifier: GPL-2.0
#
# perf.data files written by a script, in the file and the pipe formats
# and in both byte orders, hold PERF_RECORD_BPF_EVENT records of every
# kind between good ones: too short for their fields or their sample_id,
# of a size that is not a multiple of 8, of types perf does not know,
# link records with fields no kernel writes, trailing junk, and records
# larger than the data left, right after the header or after more than
# a page of good records, where the record fits in perf's mmap window
# but runs past the end of the file.  perf script --show-bpf-events
# (with and without -D) and perf report (--stdio and -D) must never die
# of a signal or hang.  A record that does not hold its fields is
# skipped with a warning, and the good records around it print as they
# should; one larger than the data left ends the file with an error
# naming it.

set -u
# shellcheck source=lib/perf_bpf.sh
. "$(dirname "$0")"/lib/perf_bpf.sh

command -v python3 >/dev/null || bpf_test_skip "python3 not found"
# without libbpf, perf prints link and attach types as numbers
perf version --build-options | grep -Eq '^ *bpf: +\[ on' ||
	bpf_test_skip "perf is built without libbpf: it cannot name link types"
tmp=$(bpf_test_dir)

# gen.py FORMAT ORDER CASE OUT: a perf.data (FORMAT file or pipe, ORDER
# le or be) with one event, a dummy with sample_id_all and bpf_event,
# whose sample_id is TID TIME CPU IDENTIFIER; four good records (load,
# attach, detach, unload), the records of CASE, the good ones again.
cat >"$tmp/gen.py" <<'EOF'
import struct, sys

fmt, order, case, out = sys.argv[1:5]
e = '<' if order == 'le' else '>'
SAMPLE_TYPE = (1 << 1) | (1 << 2) | (1 << 7) | (1 << 16)
BITS = (18, 29, 30)	# sample_id_all, ksymbol, bpf_event
# the attr's bit fields: a big-endian compiler starts from the top bit
FLAGS = sum(1 << (b if order == 'le' else 63 - b) for b in BITS)
ID = 7
MAGIC = 0x32454c4946524550	# "PERFILE2" in the file's byte order

def p(f, *v):
	return struct.pack(e + f, *v)

attr = p('IIQQQQQ', 1, 136, 9, 1, SAMPLE_TYPE, 0, FLAGS)
attr += b'\0' * (136 - len(attr))

def rec(type, body, size=None, sid=True):
	data = body + (p('IIQIIQ', 42, 42, 1000, 0, 0, ID) if sid else b'')
	return p('IHH', type, 0, size if size is not None else 8 + len(data)) + data

def bpf(t, id=41, extra=b'', **kw):
	return rec(18, p('HHI', t, 0, id) + b'\x01' * 8 + extra, **kw)

def link(t, lid=7, ltype=3, atype=1, junk=b'', **kw):
	return bpf(t, extra=p('IHH', lid, ltype, atype) + junk, **kw)

good = bpf(1) + link(3) + link(4) + bpf(2)
cases = {
	'good': b'',
	'header_only': rec(18, b'', sid=False),
	'no_tag': rec(18, p('HHI', 1, 0, 41), sid=False),
	'prog_no_sample_id': bpf(1, sid=False),
	'link_no_fields': bpf(3),
	'link_no_sample_id': link(3, sid=False),
	'odd_size': link(3, junk=b'\xee' * 4),
	'unknown_types': bpf(200) + bpf(0xffff, extra=b'\xab' * 40),
	'bad_link_fields': link(3, lid=0, ltype=0xffff, atype=0xfffe) +
			   link(4, ltype=1, atype=500) + link(3, ltype=6, atype=0),
	'trailing_junk': link(3, junk=b'\xff' * 200),
	'all_ones': rec(18, b'\xff' * (0xfff8 - 8), sid=False),
	'larger_than_data': link(3, size=0xfff0),
	# past a page of good records, 4032 bytes past the end of the data
	'past_the_end': link(3, size=4096),
}
recs = good + cases[case] + good
if case == 'larger_than_data':
	recs = good + cases[case]
elif case == 'past_the_end':
	recs = good * 20 + cases[case]

if fmt == 'pipe':
	data = p('QQ', MAGIC, 16)
	data += p('IHH', 64, 0, 8 + 136 + 8) + attr + p('Q', ID) + recs
else:
	attrs = 104
	ids = attrs + 136 + 16
	start = ids + 8
	data = p('QQQQQQQQQ', MAGIC, 104, 136 + 16, attrs, 136 + 16,
				start, len(recs), 0, 0)
	data += b'\0' * 32 + attr + p('QQ', ids, 8) + p('Q', ID) + recs
open(out, 'wb').write(data)
EOF

# run NAME COMMAND...: run COMMAND (at most 60 s) with output in
# $tmp/NAME.out and NAME.err; fail if it died of a signal or hung.
run() {
	local name=$1 rc

	shift
	timeout -k 5 60 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
	rc=$?
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		bpf_test_fail "$name: $* hung"
	fi
	# 128 + the signal; perf's own errors are 256 - errno
	[ $rc -le 128 ] || [ $rc -ge 160 ] ||
		bpf_test_fail "$name: $* died of signal $((rc - 128)):" \
			"$(tail -n 5 "$tmp/$name.err")"
	return $rc
}

good_load='type 1, flags 0, id 41$'
good_link='link_id 7, link_type cgroup, attach_type cgroup_inet_egress$'
good_attach="type 3, flags 0, id 41, link_attach, $good_link"
good_detach="type 4, flags 0, id 41, link_detach, $good_link"
good_unload='type 2, flags 0, id 41$'

# count FILE PATTERN: lines of perf script output (task 42, CPU 0, time
# 1 us: the good sample_id) matching PATTERN.
count() {
	grep -c -- ":42 \+42 \[000\] \+0.000001: PERF_RECORD_BPF_EVENT $2" "$1"
}

# expect NAME N: perf script printed the four good records N times each.
expect_good() {
	local pat n

	for pat in "$good_load" "$good_attach" "$good_detach" "$good_unload"; do
		n=$(count "$tmp/$1.out" "$pat")
		[ "$n" = "$2" ] ||
			bpf_test_fail "$1: $n records '$pat', want $2:" \
				"$(cat "$tmp/$1.out" "$tmp/$1.err")"
	done
}

# expect_lines NAME N: perf script printed N BPF_EVENT records in all.
expect_lines() {
	local n

	n=$(grep -c 'PERF_RECORD_BPF_EVENT' "$tmp/$1.out")
	[ "$n" = "$2" ] ||
		bpf_test_fail "$1: $n records printed, want $2:" \
			"$(cat "$tmp/$1.out" "$tmp/$1.err")"
}

# expect_err NAME PATTERN: perf said PATTERN on stderr.
expect_err() {
	grep -q -- "$2" "$tmp/$1.err" ||
		bpf_test_fail "$1: no '$2' in: $(cat "$tmp/$1.err")"
}

# check T C FORMAT RC: what perf script printed of file T, case C.
check() {
	local t=$1 c=$2 fmt=$3 rc=$4 pat

	case $c in
	good)
		expect_good "$t" 2
		expect_lines "$t" 8 ;;
	header_only | no_tag | prog_no_sample_id | link_no_fields | link_no_sample_id)
		expect_good "$t" 2
		expect_lines "$t" 8
		expect_err "$t" "skipping a BPF_EVENT record of .* its fields take" ;;
	odd_size)
		expect_good "$t" 2
		expect_lines "$t" 8
		expect_err "$t" "skipping a BPF_EVENT record of .* not a multiple of 8" ;;
	unknown_types)
		expect_good "$t" 2
		expect_lines "$t" 10
		[ "$(count "$tmp/$t.out" 'type 200, flags 0, id 41, unknown type$')" = 1 ] &&
		[ "$(count "$tmp/$t.out" 'type 65535, flags 0, id 41, unknown type$')" = 1 ] ||
			bpf_test_fail "$t: unknown types not printed as such:" \
				"$(cat "$tmp/$t.out")" ;;
	bad_link_fields)
		expect_good "$t" 2
		expect_lines "$t" 11
		for pat in 'link_attach, link_id 0, link_type 65535, attach_type 65534$' \
		   'link_detach, link_id 7, link_type raw_tracepoint, attach_type trace_raw_tp$' \
		   'link_attach, link_id 7, link_type xdp, attach_type xdp$'; do
			[ "$(grep -c -- "$pat" "$tmp/$t.out")" = 1 ] ||
				bpf_test_fail "$t: no '$pat' in: $(cat "$tmp/$t.out")"
		done ;;
	trailing_junk)
		# the link record with junk reads as a good attach
		expect_lines "$t" 9
		[ "$(count "$tmp/$t.out" "$good_attach")" = 3 ] &&
		[ "$(count "$tmp/$t.out" "$good_unload")" = 2 ] ||
			bpf_test_fail "$t: $(cat "$tmp/$t.out")" ;;
	all_ones)
		expect_good "$t" 2
		expect_lines "$t" 9
		pat='type 65535, flags 65535, id 4294967295, unknown type$'
		grep -q "PERF_RECORD_BPF_EVENT $pat" "$tmp/$t.out" ||
			bpf_test_fail "$t: $(cat "$tmp/$t.out")" ;;
	larger_than_data | past_the_end)
		# a file is refused; a stream ends there
		if [ "$fmt" = file ]; then
			[ $rc != 0 ] || bpf_test_fail "$t: exit 0, want an error"
			expect_err "$t" "a record larger than the data left"
		elif [ "$c" = larger_than_data ]; then
			expect_good "$t" 1
			expect_lines "$t" 4
			expect_err "$t" "unexpected end of event stream"
		else
			expect_good "$t" 20
			expect_lines "$t" 80
			expect_err "$t" "unexpected end of event stream"
		fi ;;
	esac
}

checked=0
for fmt in file pipe; do
	for order in le be; do
		for c in good header_only no_tag prog_no_sample_id link_no_fields \
			 link_no_sample_id odd_size unknown_types bad_link_fields \
			 trailing_junk all_ones larger_than_data past_the_end; do
			t=$c.$fmt.$order
			f=$tmp/$t.data
			python3 "$tmp/gen.py" "$fmt" "$order" "$c" "$f" ||
				bpf_test_fail "cannot write $f"

			# nothing that reads it may crash or hang
			run "$t.dump" perf script -i "$f" --show-bpf-events -D
			run "$t.report" perf report -i "$f" --stdio
			run "$t.report_dump" perf report -i "$f" -D
			# a BPF_EVENT record is not a KSYMBOL one
			! grep -q 'PERF_RECORD_BPF_EVENT addr' "$tmp/$t.dump.out" ||
				bpf_test_fail "$t: perf script -D decodes BPF_EVENT as KSYMBOL:" \
					"$(grep -m3 'BPF_EVENT addr' "$tmp/$t.dump.out")"

			run "$t" perf script -i "$f" --show-bpf-events
			rc=$?
			case $c in
			larger_than_data | past_the_end) ;;
			*) [ $rc = 0 ] ||
				bpf_test_fail "$t: exit $rc, want 0: $(cat "$tmp/$t.err")" ;;
			esac
			check "$t" "$c" "$fmt" $rc
			checked=$((checked + 1))
		done
	done
done
echo "$checked damaged perf.data files read: no crash, no hang, each record as it should"
pbt_cleanup
exit 0

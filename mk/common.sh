# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034 # the scripts sourcing this use it
# Shared settings and helpers of every script that runs on the host: the
# mk/ scripts and the host halves of the harness (selftests/vm/run-vm.sh,
# the runners and benchmarks that boot it).  Sourced, never run.
#
# Every script gets its inputs from the environment the top-level Makefile
# exports; the defaults here make the scripts usable on their own too.

set -euo pipefail

TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD_DIR=${BUILD_DIR:-$HOME/.cache/bpf-perf}
# Debian package holding the base tree, and the version we pin.
BASE_PKG=${BASE_PKG:-linux-source-6.12}
BASE_PKG_VERSION=${BASE_PKG_VERSION:-6.12.117-1~deb12u1}
KSRC=${KSRC:-}
JOBS=${JOBS:-$(($(nproc) + 1))}
CLANG=${CLANG:-clang-16}
LLVM_STRIP=${LLVM_STRIP:-llvm-strip-16}
CCACHE_DIR=${CCACHE_DIR:-$BUILD_DIR/ccache}
export CCACHE_DIR
mkdir -p "$BUILD_DIR"

# The applied tree and the pristine one are laid out alike, src/ beside
# kernel/ and perf/ (see build_root), so that with CCACHE_BASEDIR=$BUILD_DIR a file both
# share compiles to the same cache entry.
SRC=$BUILD_DIR/src		# applied tree: git repo, base + patches + overlay
KOBJ=$BUILD_DIR/kernel		# kernel objects (O=) for the applied tree
BASE_TREE=$BUILD_DIR/pristine/src	# pristine base tree, never modified
KOBJ_BASE=$BUILD_DIR/pristine/kernel	# kernel objects for the pristine base
TOBJ=$BUILD_DIR/tools		# bpftool and the VM helpers
KST=$BUILD_DIR/kselftest	# installed kselftests

# Top-level directory names of a Linux tree: a directory of ours with one
# of these names is overlay, copied into the applied tree as it is.
LINUX_TOPDIRS="arch block certs crypto Documentation drivers fs include init
io_uring ipc kernel lib LICENSES mm net rust samples scripts security sound
tools usr virt"

# build_root applied|base|series|rev SHA: the directory holding that
# tree's src/, kernel/ and perf/.
build_root() {
	case $1 in
	applied) echo "$BUILD_DIR" ;;
	base)	echo "$BUILD_DIR/pristine" ;;
	series)	echo "$BUILD_DIR/series" ;;	# make series-check's git am tree
	rev)	[ -n "${2:-}" ] || die "usage: $0 rev SHA"
		echo "$BUILD_DIR/rev/$2" ;;	# make perf-rev's, project commit SHA
	*)	die "usage: $0 [applied|base|series|rev SHA]" ;;
	esac
}

# The revision of this project whose perf make bench-perf-bpf runs beside
# ours ("before"); make perf-rev builds it.  Empty: none.
PERF_BEFORE_REV=${PERF_BEFORE_REV-e30515a}

# rev_sha REV: the full id of the project's commit REV.
rev_sha() {
	git -C "$TOP" rev-parse -q --verify "$1^{commit}"
}

# rev_perf SHA: the path of the perf make perf-rev built of project commit
# SHA on the present base; false if there is none.
rev_perf() {
	local root

	root=$(build_root rev "$1")
	[ -x "$root/perf/perf" ] &&
		[ "$(cat "$root/perf/rev.id" 2>/dev/null)" = "$1 $(cat "$BUILD_DIR/base.id" 2>/dev/null)" ] &&
		echo "$root/perf/perf"
}

# clone_applied DIR: make DIR a build directory for mk/apply.sh with
# APPLY_COMMITS_ONLY=1 (mk/overlay-check.sh, mk/perf-rev.sh): the base's
# id, and in DIR/src a clone of the applied tree without a work tree,
# sharing its objects.
clone_applied() {
	mkdir -p "$1"
	cp "$BUILD_DIR/base.id" "$1/"
	git clone -q --shared --no-checkout "$SRC" "$1/src"
	git -C "$1/src" config bpfperf.baseid "$(git_src config --get bpfperf.baseid)"
}

# use_ccache: compile through the cache every build here shares; paths
# are taken relative to $BUILD_DIR, so both trees hit the same entries.
use_ccache() {
	mkdir -p "$CCACHE_DIR"
	export CCACHE_BASEDIR=$BUILD_DIR CCACHE_NOHASHDIR=1
	export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
}

# The compilers of every C build (kernel, perf, bpftool, kselftests), for
# make's command line: through the cache (call use_ccache first).
MAKE_CC=(CC="ccache gcc" HOSTCC="ccache gcc")

# kmake TREE OBJ ARGS...: the kernel's make, quiet, for the tree TREE with
# its objects in OBJ (O=).
kmake() {
	local tree=$1 obj=$2

	shift 2
	make -s -C "$tree" O="$obj" "${MAKE_CC[@]}" "$@"
}

# git_src ARGS...: git in the applied tree.
git_src() { git -C "$SRC" "$@"; }

phase_start=0
# phase NAME: print a progress line and remember when the phase began.
phase() {
	phase_start=$(date +%s)
	printf '==> %s\n' "$*"
}

# phase_done: print how long the current phase took.
phase_done() {
	printf '    done in %ss\n' "$(($(date +%s) - phase_start))"
}

die() {
	printf 'error: %s\n' "$*" >&2
	exit 1
}

# overlay_dirs: the overlay directories present in the project.
overlay_dirs() {
	local d
	for d in $LINUX_TOPDIRS; do
		[ -d "$TOP/$d" ] && printf '%s\n' "$d"
	done
	return 0
}

# quiet_run LOG CMD...: run CMD with output to LOG; show the tail on failure.
quiet_run() {
	local log=$1
	shift
	if ! "$@" >"$log" 2>&1; then
		tail -n 60 "$log" >&2
		die "'$*' failed, full log in $log"
	fi
}

# The commit plan, patches/series: one line per patch of the series, in
# order, naming its file under patches/; indented lines under it name the
# overlay files or directories that patch adds (MAINTAINERS-fragment: the
# patch adds our MAINTAINERS entry), and "!checkpatch TYPE reason" lines
# the checkpatch warnings it keeps on purpose.  "#" starts a comment.
#
# The subject of the applied tree's last commit when it holds overlay files
# no patch of the plan names.
OVERLAY_SUBJECT="overlay: files no patch claims"

# plan_entries: one line per patch, "file<TAB>path path ...".
plan_entries() {
	[ -f "$TOP/patches/series" ] || return 0
	awk -F'\t' '
		{ sub(/#.*/, "") }
		/^[ \t]*$/ { next }
		/^[ \t]/ {
			sub(/^[ \t]+/, ""); sub(/[ \t]+$/, "")
			if ($0 !~ /^!/) paths = paths (paths == "" ? "" : " ") $0
			next
		}
		{ if (file != "") print file "\t" paths; file = $0; paths = "" }
		END { if (file != "") print file "\t" paths }
	' "$TOP/patches/series"
}

# plan_claims: one line per overlay file a patch of the plan claims,
# "patch<TAB>file", in plan order; a path in the plan claims the file or
# every file below the directory it names.
plan_claims() {
	local p paths path f

	while IFS=$'\t' read -r p paths; do
		for path in $paths; do
			while IFS= read -r f; do
				case $f in
				"$path" | "$path"/*) printf '%s\t%s\n' "$p" "$f" ;;
				esac
			done < <(overlay_files)
		done
	done < <(plan_entries)
}

# patch_edits PATCH: the files the diff of patches/PATCH edits.
patch_edits() {
	sed -n 's|^diff --git a/\(.*\) b/.*$|\1|p' "$TOP/patches/$1"
}

# plan_checkpatch_ignores N: the checkpatch types patch N (1-based) keeps.
plan_checkpatch_ignores() {
	awk -v want="$1" '
		{ sub(/#.*/, "") }
		/^[ \t]*$/ { next }
		/^[^ \t]/ { n++; next }
		n == want && $1 == "!checkpatch" { printf "%s%s", sep, $2; sep = "," }
	' "$TOP/patches/series"
}

# overlay_files: every file the overlay holds, relative to $TOP, sorted.
overlay_files() {
	local dirs
	dirs=$(overlay_dirs)
	{
		[ -z "$dirs" ] || (cd "$TOP" && find $dirs -type f)
		[ ! -f "$TOP/MAINTAINERS-fragment" ] || echo MAINTAINERS-fragment
	} | LC_ALL=C sort
}

# merge_maintainers BASE_MAINTAINERS FRAGMENT: the base file with our
# entry inserted where its title sorts among the entries.
merge_maintainers() {
	awk -v frag="$2" '
		BEGIN {
			while ((getline l < frag) > 0) entry = entry l "\n"
			split(entry, fl, "\n"); title = fl[1]
		}
		# an entry starts with its title line, right after a blank line,
		# followed by a "X:<tab>" line; entries start after "Maintainers List"
		/^Maintainers List/ { list = 1 }
		list && !done && prev == "" && $0 ~ /^[A-Z0-9]/ && title < $0 {
			pending = $0; getline nxt
			if (nxt ~ /^[A-Z]:\t/) { printf "%s\n", entry; done = 1 }
			print pending; print nxt; prev = nxt; next
		}
		{ print; prev = $0 }
	' "$1"
}

# What a kernel splat looks like in a kernel log (grep -E): make check,
# make check-debug and make check-bpf fail on one.
splat_re='BUG:|WARNING:|Oops|KASAN|UBSAN|ODEBUG|possible circular locking|possible recursive locking|inconsistent lock state|Kernel panic|Call Trace:'

# The one TAP writer: the logs of make check, make check-bpf, make
# perf-test-compare and make series-check.
#   tap_begin [FILE]      start a log, in FILE (tap_end prints it), or
#                         without one on stdout, line by line
#   tap_print LINE...     lines as they are ("# " comments)
#   result ok|fail|skip NAME [REASON]
#   tap_vm RC WHAT        run-vm.sh's exit status as the first result
#   tap_plan              the closing "1..N"; false on a failure or when
#                         nothing ran
#   tap_end               tap_plan, then print the log and the line
#                         "N passed, N failed, N skipped"; false as tap_plan
# The counts are in tap_n, tap_pass, tap_fail and tap_skip.
tap_begin() {
	tap=${1:-} tap_n=0 tap_pass=0 tap_fail=0 tap_skip=0
	[ -z "$tap" ] || : >"$tap"
	tap_print "TAP version 13"
}

tap_print() {
	if [ -n "$tap" ]; then
		printf '%s\n' "$@" >>"$tap"
	else
		printf '%s\n' "$@"
	fi
}

result() {
	tap_n=$((tap_n + 1))
	case $1 in
	ok)	tap_pass=$((tap_pass + 1)); tap_print "ok $tap_n - $2${3:+ # $3}" ;;
	skip)	tap_skip=$((tap_skip + 1)); tap_print "ok $tap_n - $2 # SKIP ${3:-}" ;;
	*)	tap_fail=$((tap_fail + 1)); tap_print "not ok $tap_n - $2${3:+ # $3}" ;;
	esac
}

tap_vm() {
	case $1 in
	0) result ok "$2" ;;
	124) result fail "$2" "watchdog: the VM hung" ;;
	125) result fail "$2" "no status: boot failure or panic" ;;
	*) result fail "$2" "test script exit $1" ;;
	esac
}

tap_plan() {
	tap_print "1..$tap_n"
	[ "$tap_fail" = 0 ] && [ "$tap_n" -gt 0 ]
}

tap_end() {
	local rc=0

	tap_plan || rc=1
	if [ -n "$tap" ]; then
		cat "$tap"
		echo "TAP log: $tap"
	fi
	echo "$tap_pass passed, $tap_fail failed, $tap_skip skipped"
	return $rc
}

# foliolab guest library: sourced by job.sh. Records go to stdout as
# "@@ KIND ..." lines; everything else on stdout is the job's own output.

TRACING=/sys/kernel/tracing
THP=/sys/kernel/mm/transparent_hugepage
# The counting windows' tags, FL_WIN_*: generated from workloads/windows.py
# into the image (not there when a host test sources this file).
[ -r /foliolab/windows.sh ] && . /foliolab/windows.sh

fl_metric() { echo "@@ metric $1 $2"; }
fl_invalid() { echo "@@ invalid $*"; }

# fl_file NAME FILE...: ship files to the host under NAME.
fl_file() {
	_name=$1; shift
	echo "@@ file $_name"
	cat "$@"
	echo "@@ end"
}

# fl_fault: the fault injection used to test foliolab's own error paths.
fl_fault() {
	case "$FL_FAULT" in
	panic) echo c > /proc/sysrq-trigger ;;
	hang) while :; do :; done ;;
	esac
}

# fl_zram SIZE: a fresh zram swap device of SIZE (e.g. 1G).
fl_zram() {
	swapoff /dev/zram0 2>/dev/null
	echo 1 > /sys/block/zram0/reset
	echo lz4 > /sys/block/zram0/comp_algorithm
	echo "$1" > /sys/block/zram0/disksize
	mkswap /dev/zram0 > /dev/null
	swapon /dev/zram0 || fl_invalid "swapon /dev/zram0 failed"
	grep -q '^/dev/zram0' /proc/swaps || fl_invalid "no swap"
}

# fl_anon_folio KB: anonymous faults use folios of KB only (4 = base pages).
fl_anon_folio() {
	echo madvise > $THP/enabled
	for d in $THP/hugepages-*kB; do
		echo never > "$d/enabled" 2>/dev/null
	done
	[ "$1" = 4 ] && return
	[ -d "$THP/hugepages-${1}kB" ] || {
		fl_invalid "no ${1}kB mTHP size in this kernel"; return; }
	echo always > "$THP/hugepages-${1}kB/enabled"
}

# fl_thp_pmd MODE: PMD-size THP as MODE (always, madvise or never), the
# smaller mTHP sizes left as fl_anon_folio set them. From 6.8 each size
# has an enabled file of its own, and the "never" fl_anon_folio writes
# to every size holds for the PMD size too whatever the top file says:
# "inherit" makes it follow the top file (a kernel without per-size
# files has only the top one).
fl_thp_pmd() {
	echo "$1" > $THP/enabled || fl_invalid "cannot set THP to $1"
	_pmd=$(($(cat $THP/hpage_pmd_size) / 1024))
	[ -e "$THP/hugepages-${_pmd}kB/enabled" ] || return 0
	echo inherit > "$THP/hugepages-${_pmd}kB/enabled" ||
		fl_invalid "cannot make ${_pmd}kB THP follow $THP/enabled"
}

# Monitors (FL_MONITORS=1; never in a counting boot, whose windows must
# hold the same kernel work every time): /proc/vmstat and /proc/interrupts
# read about once a second from the end of "fl_snap before" to the start of
# "fl_snap after", i.e. around the timed window, by flmon
# (workloads/common/flmon.c): one process, no fork per read, at nice 19 pinned to
# the last CPU, so that it yields to the timed task and keeps off its CPU
# unless the task pinned itself there (the workloads pin to the CPU they
# start on). It keeps the reads in memory and writes them when stopped;
# they go to the host after the window as monitor.vmstat and
# monitor.interrupts (format: foliolab/boot/monitors.py).
FL_MON=/tmp/fl_mon
fl_monitor_start() {
	[ "$FL_MONITORS" = 1 ] && [ "$FL_COUNT" != 1 ] || return 0
	rm -f $FL_MON.vmstat $FL_MON.interrupts
	flmon $FL_MON &
	FL_MON_PID=$!
}

fl_monitor_stop() {
	[ -n "$FL_MON_PID" ] || return 0
	kill -TERM "$FL_MON_PID" 2>/dev/null
	wait "$FL_MON_PID" 2>/dev/null
	FL_MON_PID=
}

# fl_monitor_ship: the monitors' files to the host (after the window).
fl_monitor_ship() {
	for _m in vmstat interrupts; do
		# each only if flmon saved it: an error message on the results
		# port would land inside the next file's block
		[ -e $FL_MON.$_m ] && fl_file monitor.$_m $FL_MON.$_m
	done
	rm -f $FL_MON.vmstat $FL_MON.interrupts
}

# fl_times TAG: the shell's and its waited-for children's user and system
# time (the `times` builtin: what mmtests' `time` gives a benchmark) and
# the uptime, shipped as times.TAG; the host's delta of the children's
# line is the window's User and System time, of the uptime its Elapsed.
# Builtins only: a fork here would be counted in the window.
fl_times() {
	read -r _fl_up _fl_idle < /proc/uptime
	echo "@@ file times.$1"
	times
	echo "uptime $_fl_up"
	echo "@@ end"
}

# fl_snap TAG [CGROUP]: ship the counters the host diffs around a sample;
# the monitors start after "before" and stop before "after". The times
# are read last before the window and first after it, before the monitor
# is stopped and waited for (its CPU time is not the workload's).
fl_snap() {
	[ "$1" = after ] && fl_times after
	[ "$1" = after ] && fl_monitor_stop
	fl_file "vmstat.$1" /proc/vmstat
	fl_file "interrupts.$1" /proc/interrupts
	fl_file "meminfo.$1" /proc/meminfo
	for f in $THP/hugepages-*kB/stats/*; do
		_d=${f%/stats/*}
		echo "${_d##*/}.${f##*/} $(cat "$f")"
	done > /tmp/mthp
	fl_file "mthp.$1" /tmp/mthp
	if [ -n "$2" ]; then
		fl_file "memcg_events.$1" "$2/memory.events"
		fl_file "memcg_stat.$1" "$2/memory.stat"
	fi
	case "$1" in
	before) fl_monitor_start; fl_times before ;;
	after) fl_monitor_ship ;;
	esac
}

# The stages of shrink_folio_list() that the reclaim workloads time with
# fl_profile_start: reference check, unmap, swap slot allocation, writeout
# (zram's compression), the batched TLB flushes, removal from the page or
# swap cache, freeing; and arm64's contpte unfolds (calls and cost).
# workloads/checks.py's RECLAIM_STAGES says which metric each one becomes.
FL_RECLAIM_STAGES="shrink_folio_list folio_referenced try_to_unmap add_to_swap
pageout try_to_unmap_flush try_to_unmap_flush_dirty __remove_mapping
free_unref_folios __contpte_try_unfold contpte_convert"

# The lab names kernel functions as 6.12 does; /foliolab/ksyms
# (symbols.RENAMES: "MAJOR.MINOR lab-name kernel-name") says what a newer
# kernel calls them. FL_KVER is this kernel's MAJOR * 1000 + MINOR.
FL_KVER=$(uname -r | awk -F. '{ print $1 * 1000 + $2 }')

# fl_ksym NAME: what this kernel calls the lab's function NAME.
fl_ksym() {
	awk -v n="$1" -v k="$FL_KVER" '
		{ split($1, v, ".") }
		$2 == n && k >= v[1] * 1000 + v[2] { new = $3 }
		END { print (new != "" ? new : n) }' /foliolab/ksyms
}

# fl_lab_names: stdin to stdout with this kernel's names of renamed
# functions, where they lead a line's fields, put back to the lab's names.
fl_lab_names() {
	awk -v k="$FL_KVER" '
		FNR == NR { split($1, v, ".")
			    if (k >= v[1] * 1000 + v[2]) lab[$3] = $2
			    next }
		$1 in lab { sub($1, lab[$1]) }
		{ print }' /foliolab/ksyms -
}

# fl_profile_start FUNC...: count calls of, and time spent in (children
# included), each FUNC with the ftrace function profiler. A FUNC this kernel
# does not have (inlined, or another architecture's) is left out.
fl_profile_start() {
	echo > $TRACING/set_ftrace_filter
	for _f in "$@"; do
		fl_ksym "$_f" >> $TRACING/set_ftrace_filter 2>/dev/null
	done
	# an empty filter would profile every function
	grep -q '^[^#]' $TRACING/set_ftrace_filter ||
		fl_invalid "none of $* traceable"
	echo 0 > $TRACING/function_profile_enabled
	echo 1 > $TRACING/function_profile_enabled
}

# fl_profile_stop [NAME]: stop, and report the profile as file NAME
# (default ftrace_profile), by the lab's function names.
fl_profile_stop() {
	echo 0 > $TRACING/function_profile_enabled
	cat $TRACING/trace_stat/function* | fl_lab_names > /tmp/fl_profile
	fl_file "${1:-ftrace_profile}" /tmp/fl_profile
	echo > $TRACING/set_ftrace_filter
}

# fl_samples N: run fl_sample N times, each framed by "@@ sample I".
fl_samples() {
	# A counting boot wants the same kernel work in every window. vmstat's
	# per-CPU update runs on a wall-clock timer (vm.stat_interval, 1 s) and
	# drains the page allocator's per-CPU lists, ~170K instructions that
	# land in a window or not depending on host speed; an hour's interval
	# keeps it out of every window. Event counters (pswpout, pgsteal, ...)
	# are summed over the CPUs on read and stay exact; only nr_* gauges
	# may lag by their per-CPU threshold.
	[ "$FL_COUNT" = 1 ] && echo 3600 > /proc/sys/vm/stat_interval
	_i=0
	while [ $_i -lt "$1" ]; do
		echo "@@ sample $_i"
		fl_sample
		_i=$((_i + 1))
	done
}

# Changed-line coverage (foliolab test --coverage on a kernel built with
# gcov; docs/manual.md, "Changed-line coverage"). fl_gcov_reset zeroes the
# kernel's counters, so that what is sent is the suite's and not the
# boot's; fl_gcov_ship sends every .gcda file under $FL_GCOV as one record,
# coverage.gcda: a line "sha256 HEX BYTES", then a gzip'd tar of the files
# in base64 (foliolab/coverage/gcovrecord.py reads it). A problem is the record's
# one line "error: ...".
FL_GCOV=${FL_GCOV:-/sys/kernel/debug/gcov}
fl_gcov_reset() {
	[ -e "$FL_GCOV/reset" ] && echo 1 > "$FL_GCOV/reset"
}

fl_gcov_ship() {
	_t=/tmp/fl_gcov
	echo "@@ file coverage.gcda"
	if [ ! -d "$FL_GCOV" ]; then
		echo "error: no $FL_GCOV in this kernel (CONFIG_GCOV_KERNEL?)"
		echo "@@ end"
		return
	fi
	rm -rf $_t $_t.tgz $_t.err
	mkdir -p $_t
	# debugfs gives the data files a size of 0: each is copied by reading
	# it to its end (cat), never by tar or cp -a, which trust the size
	(cd "$FL_GCOV" && find . -name '*.gcda') | while read -r _f; do
		mkdir -p "$_t/${_f%/*}"
		cat "$FL_GCOV/$_f" > "$_t/$_f"
	done
	if tar -C $_t -czf $_t.tgz . 2> $_t.err; then
		echo "sha256 $(sha256sum < $_t.tgz | cut -d' ' -f1) $(wc -c < $_t.tgz)"
		base64 $_t.tgz
	else
		echo "error: tar of the .gcda files failed: $(head -n 1 $_t.err)"
	fi
	echo "@@ end"
	rm -rf $_t $_t.tgz $_t.err
}

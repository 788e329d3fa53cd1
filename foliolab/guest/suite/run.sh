# The correctness suite, guest side. Runs every foliolab guest test, then
# the listed mm kselftests, each framed as "@@ file ktap.NAME" so a crash
# mid-test still leaves what was printed. After each of our groups the
# oracles check that nothing leaked: SwapFree back to its baseline (within
# what the per-CPU swap slot caches may hold), swapoff succeeds, no folios
# left isolated, and (reported only when it fails) no swap device but
# zram left on.

swap_free() { awk '/^SwapFree:/ { print $2 }' /proc/meminfo; }

fl_oracle() { echo "@@ oracle $1 $2 $3 $4"; }

# Per-CPU swap slot caches keep up to 128 entries per CPU allocated.
SLOT_SLACK_KB=$((128 * 4 * $(nproc)))

fl_oracles() {
	group=$1 base=$2
	sync
	echo 3 > /proc/sys/vm/drop_caches
	echo 1 > /proc/sys/vm/stat_refresh 2>/dev/null  # fold per-CPU counters
	# a swap device a test left on (vmscan's null_blk, if the case died)
	# would take every later test's swap: reported and swapped off
	for dev in $(awk 'NR > 1 && $1 != "/dev/zram0" { print $1 }' /proc/swaps); do
		swapoff "$dev"
		fl_oracle "$group" other_swap fail "$dev"
	done
	now=$(swap_free)
	if [ "$now" -ge $((base - SLOT_SLACK_KB)) ]; then
		fl_oracle "$group" swap_free ok "${now}kB"
	else
		fl_oracle "$group" swap_free fail "${now}kB<${base}kB"
	fi
	if swapoff /dev/zram0; then
		fl_oracle "$group" swapoff ok -
	else
		fl_oracle "$group" swapoff fail -
	fi
	swapon /dev/zram0 || fl_zram 2G
	iso=$(awk '/^nr_isolated_/ { s += $2 } END { print s + 0 }' /proc/vmstat)
	if [ "$iso" = 0 ]; then
		fl_oracle "$group" nr_isolated ok 0
	else
		fl_oracle "$group" nr_isolated fail "$iso"
	fi
}

# FL_ONLY (foliolab test --only): "PROGRAM PROGRAM.CASE ..." or empty for
# all. Prints the harness arguments that select PROGRAM's cases, "" for all
# of them, "-" when PROGRAM is not wanted.
fl_selection() {
	[ -z "$FL_ONLY" ] && return
	sel=-
	for item in $FL_ONLY; do
		case $item in
		"$1") echo ""; return ;;
		"$1".*) [ "$sel" = - ] && sel=""
			sel="$sel -t ${item#"$1".}" ;;
		esac
	done
	echo "$sel"
}

# foliolab test --coverage: count from here on (the suite, not the boot)
if [ "$FL_COVERAGE" = 1 ]; then fl_gcov_reset; fi
fl_zram 2G
echo "$FL_LRU_GEN" > /sys/kernel/mm/lru_gen/enabled
echo "@@ metric lru_gen $(cat /sys/kernel/mm/lru_gen/enabled)"
for t in /foliolab/tests/*; do
	[ -x "$t" ] || continue
	name=${t##*/}
	sel=$(fl_selection "$name")
	[ "$sel" = - ] && continue
	run=1
	while [ "$run" -le "${FL_REPEAT:-1}" ]; do
		base=$(swap_free)
		# a repeated run is ktap.NAME@K, so none overwrites another
		file=$name
		[ "$run" -gt 1 ] && file="$name@$run"
		echo "@@ file ktap.$file"
		# foliolab test --count: one counting window per test run
		[ "$FL_COUNT" = 1 ] && flmark begin $FL_WIN_RUN
		# shellcheck disable=SC2086 # $sel is a list of arguments
		(cd /tmp && "$t" $sel 2>&1)
		[ "$FL_COUNT" = 1 ] && flmark end $FL_WIN_RUN
		echo "@@ end"
		fl_oracles "$file" "$base"
		run=$((run + 1))
	done
done

# The kselftests start from the kernel's THP defaults (our tests changed
# them) and with some hugetlb pages for their hugetlb cases.
if [ -n "$FL_KSELFTESTS" ]; then
	echo madvise > $THP/enabled
	for d in $THP/hugepages-*kB; do
		echo never > "$d/enabled" 2>/dev/null
	done
	echo inherit > $THP/hugepages-2048kB/enabled
	echo 64 > /proc/sys/vm/nr_hugepages
fi

# FL_KSELFTESTS: "name|command|timeout[|directory[|runs[|aslr]]];..." from
# the host; the command runs in /foliolab/DIRECTORY (kselftest unless
# given): some tests exec themselves as ./NAME. A failed test runs again,
# up to RUNS times in all (1 unless given), a timed-out one not; run K > 1
# is kselftest.NAME@K. ASLR "off": address space randomization is off
# while it runs (plan.py, ASLR_OFF, says why).
ASLR_SYSCTL=/proc/sys/kernel/randomize_va_space
echo "$FL_KSELFTESTS" | tr ';' '\n' | while IFS='|' read -r name cmd secs dir runs aslr; do
	[ -n "$name" ] || continue
	run=1
	while :; do
		file=$name
		[ "$run" -gt 1 ] && file="$name@$run"
		echo "@@ file kselftest.$file"
		start=$(date +%s)
		if [ "$aslr" = off ]; then
			aslr_was=$(cat $ASLR_SYSCTL)
			echo 0 > $ASLR_SYSCTL
		fi
		(cd "/foliolab/${dir:-kselftest}" && timeout "$secs" sh -c "./$cmd" 2>&1)
		rc=$?
		[ "$aslr" = off ] && echo "$aslr_was" > $ASLR_SYSCTL
		# how long each took, for the notebook and the time limits
		echo "@@ seconds $file $(($(date +%s) - start))"
		# busybox's timeout exits with the killed child's status (128 +
		# SIGTERM), where GNU's gives 124, which the host reads as "timeout"
		[ $rc = 143 ] && rc=124
		echo "@@ exitcode $file $rc"
		echo "@@ end"
		# a pass, a skip (KSFT_SKIP) or a timeout is final (the race a
		# rerun is for fails fast), and so is the last run
		case $rc in 0 | 4 | 124) break ;; esac
		[ "$run" -ge "${runs:-1}" ] && break
		run=$((run + 1))
	done
done

# foliolab test --coverage: the counts of everything above, one record
# (the if leaves the job's exit status as it was without coverage)
if [ "$FL_COVERAGE" = 1 ]; then fl_gcov_ship; fi

# W3 khugepaged: tasks hot1, cold and hot2 (FL_SIZE_MB each) start in that
# order; their memory is faulted in as base pages and then offered to
# khugepaged. cold MADV_FREEs its memory (and with FL_COLD_REREAD=1 reads
# it once more, so it looks referenced); hot2 makes FL_ACCESSES random
# accesses, and goes on until it is told that all of it is PMD-mapped, then
# makes FL_AFTER_COLLAPSE more. We time hot2's FL_ACCESSES, the accesses
# after the collapse, and how long until all of hot2 is PMD-mapped, and
# count khugepaged's scan results by status.
KHP=$THP/khugepaged

fl_uptime() { cut -d' ' -f1 /proc/uptime; }
fl_wait_file() { while [ ! -e "$1" ]; do sleep 0.05; done; }
fl_thp_kb() { awk '/^AnonHugePages:/ { print $2 }' "/proc/$1/smaps_rollup"; }
# khugepaged's utime + stime, in clock ticks
fl_khugepaged_ticks() {
	awk '{ print $14 + $15 }' "/proc/$(pidof khugepaged)/stat"
}

fl_sample() {
	fl_anon_folio 2048
	echo always > $THP/enabled
	echo "$FL_PAGES_TO_SCAN" > $KHP/pages_to_scan
	echo "$FL_SCAN_SLEEP_MS" > $KHP/scan_sleep_millisecs
	echo "$FL_SCAN_SLEEP_MS" > $KHP/alloc_sleep_millisecs
	echo 0 > $TRACING/tracing_on
	echo > $TRACING/trace
	echo 1 > $TRACING/events/huge_memory/mm_khugepaged_scan_pmd/enable
	echo 1 > $TRACING/tracing_on
	rm -f /tmp/ready.*
	fl_fault
	fl_snap before
	cat $KHP/pages_collapsed $KHP/full_scans > /tmp/khp.before
	ticks0=$(fl_khugepaged_ticks)
	flmark begin $FL_WIN_KHUGEPAGED	# the tasks' whole run
	thptask hot "$FL_SIZE_MB" /tmp/ready.hot1 & hot1=$!
	fl_wait_file /tmp/ready.hot1
	thptask cold "$FL_SIZE_MB" /tmp/ready.cold "$FL_COLD_REREAD" & cold=$!
	fl_wait_file /tmp/ready.cold
	thptask hot "$FL_SIZE_MB" /tmp/ready.hot2 "$FL_ACCESSES" \
		"$FL_AFTER_COLLAPSE" & hot2=$!
	fl_wait_file /tmp/ready.hot2
	t0=$(fl_uptime)
	full=$((FL_SIZE_MB * 1024))
	collapsed=""
	# hot2 waits for the word that it is collapsed: a kernel that never
	# collapses it gets FL_COLLAPSE_WAIT_S polls' worth (at least as many
	# seconds), not the boot's whole timeout
	polls=$((FL_COLLAPSE_WAIT_S * 10))
	while kill -0 $hot2 2>/dev/null; do
		if [ -z "$collapsed" ] && [ "$(fl_thp_kb $hot2)" -ge $full ]; then
			collapsed=$(fl_uptime)
			kill -USR1 $hot2
		elif [ -z "$collapsed" ] && [ $((polls -= 1)) -le 0 ]; then
			kill $hot2
			break
		fi
		sleep 0.1
	done
	wait $hot2
	rc=$?
	# killed above when it was never collapsed: that is said below
	[ $rc = 0 ] || [ -z "$collapsed" ] || fl_invalid "hot2 exited with $rc"
	flmark end $FL_WIN_KHUGEPAGED
	if [ -n "$collapsed" ]; then
		fl_metric hot2_collapse_s "$(echo "$collapsed $t0" | awk '{ print $1 - $2 }')"
	else
		fl_invalid "hot2 was not fully collapsed within $FL_COLLAPSE_WAIT_S s"
	fi
	fl_metric cold_thp_mb $(($(fl_thp_kb $cold) / 1024))
	fl_metric hot1_thp_mb $(($(fl_thp_kb $hot1) / 1024))
	ticks=$(($(fl_khugepaged_ticks) - ticks0))
	# USER_HZ is 100 on every architecture we boot
	fl_metric khugepaged_cpu_s "$(awk -v t="$ticks" 'BEGIN { print t / 100 }')"
	kill $hot1 $cold
	# not a bare wait: the monitor (fl_snap before) is a child too, and
	# it runs until fl_snap after stops it
	wait $hot1 $cold 2>/dev/null || true
	echo 0 > $TRACING/tracing_on
	echo 0 > $TRACING/events/huge_memory/mm_khugepaged_scan_pmd/enable
	fl_snap after
	cat $KHP/pages_collapsed $KHP/full_scans > /tmp/khp.after
	paste /tmp/khp.before /tmp/khp.after > /tmp/khp
	fl_file khugepaged /tmp/khp
	fl_file ftrace_events $TRACING/trace
}

# W4 ksm-rmap: FL_VMAS VMAs sharing one anon_vma, merged by KSM, then
# FL_MOVE of their KSM pages migrated to the other NUMA node while
# function_graph times every rmap_walk_ksm() call (not in a counting boot).
KSM=/sys/kernel/mm/ksm

fl_sample() {
	echo "$FL_PAGES_TO_SCAN" > $KSM/pages_to_scan
	echo 0 > $KSM/sleep_millisecs
	echo 1 > $KSM/run
	echo 0 > $TRACING/tracing_on
	echo nop > $TRACING/current_tracer
	echo rmap_walk_ksm > $TRACING/set_ftrace_filter
	echo rmap_walk_ksm > $TRACING/set_graph_function
	echo 1 > $TRACING/max_graph_depth
	echo 4096 > $TRACING/buffer_size_kb
	# A counting boot counts the walks itself: no tracer in its window.
	[ "$FL_COUNT" = 1 ] || echo function_graph > $TRACING/current_tracer
	echo > $TRACING/trace
	fl_fault
	fl_snap before
	ksmrmap "$FL_VMAS" "$FL_MOVE" "$FL_MERGE_TIMEOUT" ||
		fl_invalid "ksmrmap exited with $?"
	fl_snap after
	echo 0 > $KSM/run
	fl_file ftrace_graph $TRACING/trace
	echo nop > $TRACING/current_tracer
	echo > $TRACING/set_graph_function
	echo > $TRACING/set_ftrace_filter
	grep -r . $KSM | sed "s|$KSM/||; s|:| |" > /tmp/ksm
	fl_file ksm /tmp/ksm
}

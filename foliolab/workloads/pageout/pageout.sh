# W0 pageout: time MADV_PAGEOUT of FL_SIZE_MB of anon memory in FL_FOLIO_KB
# folios to zram (FL_LAZYFREE=1: MADV_FREE it first, so it is dropped;
# FL_FILL=same: pages zram stores without compressing them), verify
# every page, then count try_to_unmap_one and page_vma_mapped_walk calls (one
# per PTE step of the rmap walk) in a second, untimed pass (the profiler would
# distort the timed one).
fl_sample() {
	args=
	[ "$FL_LAZYFREE" = 1 ] && args=--lazyfree
	[ "$FL_FILL" = same ] && args="$args --same"
	fl_zram $((FL_SIZE_MB * 2))M
	fl_anon_folio "$FL_FOLIO_KB"
	echo 3 > /proc/sys/vm/drop_caches
	fl_snap before
	fl_fault
	pageout "$FL_SIZE_MB" $args || fl_invalid "pageout exited with $?"
	fl_snap after
	# A counting boot counts the timed pass; the profiler is not wanted.
	if [ "$FL_PROFILE" = 1 ] && [ "$FL_COUNT" != 1 ]; then
		fl_profile_start try_to_unmap_one page_vma_mapped_walk
		pageout "$FL_SIZE_MB" --quiet $args
		fl_profile_stop
		# Where reclaim's time goes, in a pass of its own (timing the
		# per-PTE functions above would inflate the unmap's share).
		fl_profile_start $FL_RECLAIM_STAGES
		pageout "$FL_SIZE_MB" --quiet $args
		fl_profile_stop ftrace_time
	fi
}

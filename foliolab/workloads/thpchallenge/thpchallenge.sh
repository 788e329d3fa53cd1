# thpchallenge: THP fault latency under fragmentation (thpfault.c): fill
# FL_FILL_PCT% of MemFree in base pages, keep one page of
# every FL_KEEP_EVERY and one in each physical PMD-sized block the fill
# held, then fault FL_THP_MB of MADV_HUGEPAGE memory a PMD at a time. THP for madvised memory only (every mTHP size never),
# defrag FL_DEFRAG; no proactive compaction, which would undo the
# fragmentation between the fill and the faults on its own clock.
fl_sample() {
	if [ ! -d $THP ]; then
		fl_invalid "no THP in this kernel"
		return
	fi
	fl_anon_folio 4
	fl_thp_pmd madvise
	echo "$FL_DEFRAG" > $THP/defrag ||
		fl_invalid "cannot set THP defrag to $FL_DEFRAG"
	[ -e /proc/sys/vm/compaction_proactiveness ] &&
		echo 0 > /proc/sys/vm/compaction_proactiveness
	swapoff -a 2>/dev/null
	echo 3 > /proc/sys/vm/drop_caches
	echo 1 > /proc/sys/vm/compact_memory
	fl_fault
	fl_snap before
	thpfault "$FL_FILL_PCT" "$FL_KEEP_EVERY" "$FL_THP_MB" ||
		fl_invalid "thpfault exited with $?"
	fl_snap after
}

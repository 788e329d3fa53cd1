# page-fault and page-fault-threads: will-it-scale's page_fault1/2/3
# (pagefault.c) over FL_TASKS tasks, processes or threads (FL_MODE), each
# mapping FL_SIZE_MB; base pages only (THP madvise, every mTHP size
# never: pagefault.c never asks for huge pages), so one write is one
# fault. The files of cases 2 and 3 are on a tmpfs of their own.
PF_DIR=/tmp/fl-pf

fl_sample() {
	fl_anon_folio 4
	mkdir -p $PF_DIR
	mount -t tmpfs -o size=$((FL_TASKS * FL_SIZE_MB + 16))m fl-pf $PF_DIR ||
		fl_invalid "no tmpfs at $PF_DIR"
	fl_fault
	fl_snap before
	pagefault "$FL_CASE" "$FL_MODE" "$FL_TASKS" "$FL_SECONDS" \
		"$FL_SIZE_MB" $PF_DIR || fl_invalid "pagefault exited with $?"
	fl_snap after
	umount $PF_DIR
}

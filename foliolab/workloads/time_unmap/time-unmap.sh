# time-unmap: mmtests' time_unmap (timeunmap.c): FL_ITERATIONS munmaps of
# FL_SIZE_MB of anonymous memory populated by FL_THREADS threads, one a
# CPU, the others spinning while the main thread unmaps. Base pages only
# (THP madvise, every mTHP size never), so a mapping is FL_SIZE_MB * 256
# PTEs to zap.
fl_sample() {
	fl_anon_folio 4
	fl_fault
	fl_snap before
	timeunmap "$FL_THREADS" "$FL_SIZE_MB" "$FL_ITERATIONS" ||
		fl_invalid "timeunmap exited with $?"
	fl_snap after
}

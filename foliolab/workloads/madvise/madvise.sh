# madvise: madvise(FL_ADVICE) throughput over FL_SIZE_MB of anonymous
# base pages (madvthroughput.c), FL_ITERATIONS calls; pageout swaps to a
# zram device of twice the size, as pageout.sh does.
fl_sample() {
	swapoff -a 2>/dev/null
	[ "$FL_ADVICE" = pageout ] && fl_zram $((FL_SIZE_MB * 2))M
	fl_anon_folio 4
	fl_fault
	fl_snap before
	madvthroughput "$FL_ADVICE" "$FL_SIZE_MB" "$FL_ITERATIONS" ||
		fl_invalid "madvthroughput exited with $?"
	fl_snap after
	swapoff -a 2>/dev/null
}

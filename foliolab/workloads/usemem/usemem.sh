# usemem: vm-scalability's usemem (usemem.c): FL_TASKS processes fill
# FL_TOTAL_MB of anonymous memory between them, FL_LOOPS passes. In
# memory (FL_SWAP=0) with no swap device; under swap (FL_SWAP=1) in a
# memcg whose memory.max is FL_MEMCG_PCT% of the total, swapping to zram.
# PMD THP for the fill: FL_THP (always or never), every mTHP size never.
# FL_RANDOM=1 writes each task's pages in a random order: vm-scalability's
# anon-w-rand (in memory) and swap-w-rand (FL_SWAP=1).
CG=/sys/fs/cgroup/fl-usemem

fl_sample() {
	swapoff -a 2>/dev/null
	[ "$FL_SWAP" = 1 ] && fl_zram $((FL_TOTAL_MB * 2))M
	fl_anon_folio 4
	fl_thp_pmd "$FL_THP"
	mkdir -p $CG
	if [ "$FL_SWAP" = 1 ]; then
		echo $((FL_TOTAL_MB * FL_MEMCG_PCT / 100))M > $CG/memory.max
	else
		echo max > $CG/memory.max
	fi
	echo 3 > /proc/sys/vm/drop_caches
	fl_fault
	fl_snap before $CG
	sh -c "echo \$\$ > $CG/cgroup.procs; exec usemem $FL_TASKS \
		$FL_TOTAL_MB $FL_LOOPS $FL_VERIFY $FL_RANDOM" ||
		fl_invalid "usemem exited with $?"
	fl_snap after $CG
	rmdir $CG
	swapoff -a 2>/dev/null
}

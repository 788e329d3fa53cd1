# W1 dirty-tlb: stress-ng's vm stressor (one fixed method, fixed seed, no
# random madvise) in a memcg whose memory.max is FL_MEMCG_PCT% of the
# workers' total, swapping to zram. Every page the workers write is dirty
# when reclaim unmaps it: the path where vmscan flushes the TLB per folio.
CG=/sys/fs/cgroup/fl-tlb

fl_sample() {
	fl_zram $((FL_TOTAL_MB * 4))M
	fl_anon_folio 4
	echo "$FL_LRU_GEN" > /sys/kernel/mm/lru_gen/enabled
	mkdir -p $CG
	echo $((FL_TOTAL_MB * FL_MEMCG_PCT / 100))M > $CG/memory.max
	rm -f /tmp/stress-ng.yaml
	fl_fault
	fl_snap before $CG
	flmark begin $FL_WIN_STRESS
	if [ "$FL_WRITER" = threads ]; then
		# one mm, its threads on every CPU (dirtythreads.c); its
		# records go to the results port as they are
		sh -c "echo \$\$ > $CG/cgroup.procs; exec dirtythreads \
			$FL_WORKERS $FL_TOTAL_MB $FL_SECONDS" ||
			fl_invalid "dirtythreads exited with $?"
	else
		(cd /tmp && sh -c "echo \$\$ > $CG/cgroup.procs; exec stress-ng \
			--vm $FL_WORKERS --vm-bytes ${FL_TOTAL_MB}M --vm-keep \
			--vm-method $FL_METHOD --no-rand-seed --no-madvise \
			--timeout ${FL_SECONDS}s --metrics --yaml /tmp/stress-ng.yaml") \
			> /tmp/stress-ng.out 2>&1 ||
			fl_invalid "stress-ng exited with $?"
	fi
	flmark end $FL_WIN_STRESS
	fl_snap after $CG
	if [ "$FL_WRITER" != threads ]; then
		fl_file stress-ng.yaml /tmp/stress-ng.yaml
		fl_file stress-ng.out /tmp/stress-ng.out
	fi
	rmdir $CG
}

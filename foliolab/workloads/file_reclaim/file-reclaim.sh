# W2 file-reclaim: XFS on a brd ramdisk; a FL_SIZE_MB file read into the page
# cache (large folios) by a task in a memcg, mapped MAP_SHARED, then
# FL_RECLAIM_PCT% of it reclaimed through memory.reclaim and timed.
CG=/sys/fs/cgroup/fl-file

fl_file_setup() {
	[ -f /mnt/file ] && return
	mkfs.xfs -q -f /dev/ram0 || fl_invalid "mkfs.xfs failed"
	mount -t xfs /dev/ram0 /mnt || fl_invalid "mount xfs failed"
	filegen /mnt/file "$FL_SIZE_MB" || fl_invalid "filegen failed"
	mkdir -p $CG
}

# Run "$@" inside the memcg, after reading the file into its page cache.
fl_in_memcg() {
	sync
	echo 3 > /proc/sys/vm/drop_caches
	sh -c "echo \$\$ > $CG/cgroup.procs; cat /mnt/file > /dev/null; exec $*"
}

fl_sample() {
	fl_file_setup
	echo "$FL_READAHEAD_KB" > /sys/block/ram0/queue/read_ahead_kb ||
		fl_invalid "cannot set read_ahead_kb"
	fl_fault
	fl_snap before $CG
	fl_in_memcg filereclaim /mnt/file $CG "$FL_RECLAIM_PCT" ||
		fl_invalid "filereclaim exited with $?"
	fl_snap after $CG
	# A counting boot counts the timed pass; the profiler is not wanted.
	if [ "$FL_PROFILE" = 1 ] && [ "$FL_COUNT" != 1 ]; then
		fl_profile_start try_to_unmap_one
		fl_in_memcg filereclaim /mnt/file $CG "$FL_RECLAIM_PCT" --quiet
		fl_profile_stop
		fl_profile_start $FL_RECLAIM_STAGES
		fl_in_memcg filereclaim /mnt/file $CG "$FL_RECLAIM_PCT" --quiet
		fl_profile_stop ftrace_time
	fi
}

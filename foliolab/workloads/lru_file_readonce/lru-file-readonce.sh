# lru-file-readonce: vm-scalability's lru-file-readonce (lrureadonce.c):
# FL_TASKS processes each read a sparse file of their own once, FL_TOTAL_MB
# in all, on XFS on a brd ramdisk, in a memcg whose memory.max is
# FL_MEMCG_PCT% of that, so the page cache read first is reclaimed to make
# room for the rest. No swap: reclaim has clean file pages only to take.
CG=/sys/fs/cgroup/fl-readonce
RO_DIR=/mnt/fl-readonce

fl_readonce_fs() {
	grep -q " $RO_DIR " /proc/mounts && return
	mkdir -p $RO_DIR
	mkfs.xfs -q -f /dev/ram0 || fl_invalid "mkfs.xfs failed"
	mount -t xfs /dev/ram0 $RO_DIR || fl_invalid "mount xfs failed"
}

fl_sample() {
	swapoff -a 2>/dev/null
	fl_readonce_fs
	mkdir -p $CG
	echo $((FL_TOTAL_MB * FL_MEMCG_PCT / 100))M > $CG/memory.max
	sync
	echo 3 > /proc/sys/vm/drop_caches
	fl_fault
	fl_snap before $CG
	sh -c "echo \$\$ > $CG/cgroup.procs; exec lrureadonce $FL_TASKS \
		$FL_TOTAL_MB $RO_DIR" || fl_invalid "lrureadonce exited with $?"
	fl_snap after $CG
	rmdir $CG
}

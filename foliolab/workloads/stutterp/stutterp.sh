# stutterp: mmap latency under reclaim (mmaplatency.c): in a memcg of
# FL_MEMCG_MB, one process writes FL_PRESSURE_PCT% of that in anonymous
# memory over and over (swapping to zram), one rewrites a file of
# FL_FILE_MB on XFS on a brd ramdisk (0: none), and the measured task
# times mmap + write + munmap rounds of FL_MAP_KB for FL_SECONDS. Base
# pages only (THP madvise, every mTHP size never): mmtests' stutterp
# runs with THP off.
CG=/sys/fs/cgroup/fl-stutterp
ST_DIR=/mnt/fl-stutterp

fl_stutterp_fs() {
	grep -q " $ST_DIR " /proc/mounts && return
	mkdir -p $ST_DIR
	mkfs.xfs -q -f /dev/ram0 || fl_invalid "mkfs.xfs failed"
	mount -t xfs /dev/ram0 $ST_DIR || fl_invalid "mount xfs failed"
}

fl_sample() {
	_anon_mb=$((FL_MEMCG_MB * FL_PRESSURE_PCT / 100))
	swapoff -a 2>/dev/null
	fl_zram $((_anon_mb * 2))M
	fl_anon_folio 4
	fl_stutterp_fs
	mkdir -p $CG
	echo "${FL_MEMCG_MB}M" > $CG/memory.max
	sync
	echo 3 > /proc/sys/vm/drop_caches
	fl_fault
	fl_snap before $CG
	sh -c "echo \$\$ > $CG/cgroup.procs; exec mmaplatency $FL_SECONDS \
		$FL_MAP_KB $_anon_mb $FL_FILE_MB $ST_DIR $CG" ||
		fl_invalid "mmaplatency exited with $?"
	fl_snap after $CG
	rmdir $CG
	swapoff -a 2>/dev/null
}

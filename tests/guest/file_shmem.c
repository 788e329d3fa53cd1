// SPDX-License-Identifier: GPL-2.0
/*
 * file_shmem: file-backed and shmem large folios through reclaim (the
 * batched file unmap). Writes into some pages of every large folio of a
 * MAP_SHARED XFS mapping must reach the disk (checked with O_DIRECT reads
 * after the page cache is dropped); tmpfs large folios must swap out and
 * back intact; uffd-wp on shmem must stay set on every page through
 * reclaim, and every first write after it must raise a write-protect
 * fault. Needs XFS on /dev/ram0 (brd) and a swap device.
 */
#include "guestlib.h"

#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#define MEMCG "fltest-file"
#define XFS_DIR "/mnt/fltest-xfs"
#define TMPFS_DIR "/mnt/fltest-tmpfs"
#define FSIZE (16UL << 20)
#define FPAGES (FSIZE / PAGE_SIZE)

/* Pages of the mapping at @map that are mapped (present) right now. */
static size_t resident(const char *map, size_t npages)
{
	size_t n = 0;

	for (size_t pg = 0; pg < npages; pg++)
		n += !!(pagemap_entry(map + pg * PAGE_SIZE) & PM_PRESENT);
	return n;
}

/*
 * Reclaim the FSIZE mapping at @map until at most a tenth of it is still
 * mapped: a test of what reclaim does to mapped pages must see it happen.
 */
static int reclaim_mapping(const char *map, const char *name)
{
	for (int i = 0; i < 20 && resident(map, FPAGES) > FPAGES / 10; i++) {
		madvise((void *)map, FSIZE, MADV_PAGEOUT);
		memcg_reclaim(MEMCG, FSIZE * 2);
		usleep(100 * 1000);
	}
	if (resident(map, FPAGES) > FPAGES / 10) {
		ktap_diag("%s: %zu of %lu pages still mapped after reclaim",
			  name, resident(map, FPAGES), FPAGES);
		return 0;
	}
	return 1;
}

static void drop_caches(void)
{
	sync();
	write_str("/proc/sys/vm/drop_caches", "3");
}

static int write_file(const char *path, uint64_t seed)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	char *buf = malloc(FSIZE);

	if (fd < 0 || !buf)
		return -1;
	fill_pages(buf, FPAGES, seed);
	if (write(fd, buf, FSIZE) != (ssize_t)FSIZE || fsync(fd))
		die("write file");
	free(buf);
	return fd;
}

/* Written pages: 0, 5 and 15 of every 16 (some pages of each folio). */
static int written(size_t pg)
{
	return pg % 16 == 0 || pg % 16 == 5 || pg % 16 == 15;
}

/*
 * Drop the page cache, read @path with O_DIRECT into @back (FSIZE, page
 * aligned) and count the pages that do not hold their pattern: seed @new
 * for the written() pages in [@first, @end), @old for all others.
 */
static size_t wrong_on_disk(const char *path, char *back, size_t first,
			    size_t end, uint64_t old, uint64_t new,
			    const char *name)
{
	size_t bad = 0;
	int dfd;

	drop_caches();
	dfd = open(path, O_RDONLY | O_DIRECT);
	if (dfd < 0 || pread(dfd, back, FSIZE, 0) != (ssize_t)FSIZE)
		die("O_DIRECT read");
	for (size_t pg = 0; pg < FPAGES; pg++) {
		const uint64_t *q = (const uint64_t *)(back + pg * PAGE_SIZE);
		int in = pg >= first && pg < end && written(pg);
		uint64_t seed = in ? new : old;

		for (size_t w = 0; w < PAGE_SIZE / 8; w++)
			if (q[w] != pattern(pg, w, seed)) {
				if (bad++ < 4)
					ktap_diag("%s: page %zu on disk is wrong",
						  name, pg);
				break;
			}
	}
	close(dfd);
	return bad;
}

static void test_xfs_shared(void)
{
	const char *name = "xfs_map_shared_writes_reach_disk";
	size_t bad = 0;
	char *map, *back;
	int fd;

	fd = write_file(XFS_DIR "/data", 21);
	drop_caches();
	back = aligned_alloc(PAGE_SIZE, FSIZE);	/* O_DIRECT alignment */
	if (pread(fd, back, FSIZE, 0) != (ssize_t)FSIZE)	/* large folios */
		die("read");
	map = mmap(NULL, FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	for (size_t pg = 0; pg < FPAGES; pg++) {
		uint64_t *q = (uint64_t *)(map + pg * PAGE_SIZE);

		if (written(pg))
			for (size_t w = 0; w < PAGE_SIZE / 8; w++)
				q[w] = pattern(pg, w, 22);
	}
	bad += !reclaim_mapping(map, name);
	munmap(map, FSIZE);
	close(fd);
	bad += wrong_on_disk(XFS_DIR "/data", back, 0, FPAGES, 21, 22, name);
	free(back);
	ktap_result(!bad, name);
}

/*
 * The same through a mapping that covers large folios only in part: it
 * starts 32K into the file, at 128K before a PMD boundary (so a 64K folio
 * straddles two page tables there), and ends 96K before the end of the
 * file, so folios are cut by both ends of the VMA. Every write must reach
 * the disk and no page outside the mapping may change.
 */
static void test_xfs_partial_mapping(void)
{
	const char *name = "xfs_partial_mapping_writes_reach_disk";
	const size_t skip = 8, len = FSIZE - 32 * PAGE_SIZE;
	size_t bad = 0, npages = len / PAGE_SIZE;
	char *area = map_aligned(FSIZE + 2 * PMD_SIZE, PMD_SIZE);
	char *map, *back;
	int fd;

	fd = write_file(XFS_DIR "/part", 25);
	drop_caches();
	back = aligned_alloc(PAGE_SIZE, FSIZE);	/* O_DIRECT alignment */
	if (pread(fd, back, FSIZE, 0) != (ssize_t)FSIZE)	/* large folios */
		die("read");
	map = mmap(area + PMD_SIZE - 32 * PAGE_SIZE, len,
		   PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
		   skip * PAGE_SIZE);
	if (map == MAP_FAILED)
		die("mmap");
	for (size_t i = 0; i < npages; i++) {
		uint64_t *q = (uint64_t *)(map + i * PAGE_SIZE);

		if (written(skip + i))
			for (size_t w = 0; w < PAGE_SIZE / 8; w++)
				q[w] = pattern(skip + i, w, 26);
	}
	for (int i = 0; i < 20 && resident(map, npages) > npages / 10; i++) {
		madvise(map, len, MADV_PAGEOUT);
		memcg_reclaim(MEMCG, FSIZE * 2);
		usleep(100 * 1000);
	}
	if (resident(map, npages) > npages / 10) {
		ktap_diag("%s: %zu of %zu pages still mapped after reclaim",
			  name, resident(map, npages), npages);
		bad++;
	}
	munmap(area, FSIZE + 2 * PMD_SIZE);
	close(fd);
	bad += wrong_on_disk(XFS_DIR "/part", back, skip, skip + npages, 25, 26,
			     name);
	free(back);
	unlink(XFS_DIR "/part");
	ktap_result(!bad, name);
}

static void test_tmpfs(void)
{
	const char *name = "tmpfs_large_folios_swap_out_and_back";
	int fd = open(TMPFS_DIR "/data", O_RDWR | O_CREAT | O_TRUNC, 0644);
	char *map;
	int ok;

	if (fd < 0 || ftruncate(fd, FSIZE))
		die("tmpfs file");
	map = mmap(NULL, FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	fill_pages(map, FPAGES, 23);
	madvise(map, FSIZE, MADV_PAGEOUT);
	memcg_reclaim(MEMCG, FSIZE * 2);
	ok = 1;
	/* pagemap shows no shmem swap entries: ask the memcg instead */
	long swapped = read_long("/sys/fs/cgroup/" MEMCG "/memory.swap.current");

	if (swapped < (long)(FSIZE / 2)) {
		ktap_diag("%s: memcg swap %ld bytes, expected most of %lu",
			  name, swapped, FSIZE);
		ok = 0;
	}
	ok = all_verified(map, FPAGES, 23, name) && ok;
	munmap(map, FSIZE);
	close(fd);
	unlink(TMPFS_DIR "/data");
	ktap_result(ok, name);
}

struct wp_writer {
	char *map;
	size_t npages;
	volatile int done;
};

/* Write one byte into every page, in order; each write must fault. */
static void *wp_write_all(void *arg)
{
	struct wp_writer *w = arg;

	for (size_t pg = 0; pg < w->npages; pg++)
		((volatile char *)w->map)[pg * PAGE_SIZE + 1] ^= 0;
	w->done = 1;
	return NULL;
}

/*
 * Let a thread write into each of @npages pages at @map, all write-protected
 * through @uffd, and resolve each fault by unprotecting that page. Return
 * the number of pages whose write did not raise a write-protect fault.
 */
static size_t writes_without_wp_fault(int uffd, char *map, size_t npages,
				      const char *name)
{
	struct wp_writer w = { .map = map, .npages = npages };
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };
	size_t faults = 0, wrong = 0;
	pthread_t thr;

	pthread_create(&thr, NULL, wp_write_all, &w);
	while (!w.done || poll(&pfd, 1, 0) > 0) {
		struct uffdio_writeprotect wp = { 0 };
		struct uffd_msg msg;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if (read(uffd, &msg, sizeof(msg)) != sizeof(msg))
			continue;
		if (msg.event != UFFD_EVENT_PAGEFAULT ||
		    !(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP)) {
			if (wrong++ < 4)
				ktap_diag("%s: unexpected uffd event %u", name,
					  msg.event);
			continue;
		}
		faults++;
		wp.range.start = msg.arg.pagefault.address & ~(PAGE_SIZE - 1);
		wp.range.len = PAGE_SIZE;
		if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
			die("UFFDIO_WRITEPROTECT (unprotect)");
	}
	pthread_join(thr, NULL);
	if (faults != npages)
		ktap_diag("%s: %zu write-protect faults for %zu pages", name,
			  faults, npages);
	return (faults < npages ? npages - faults : 0) + wrong;
}

static void test_shmem_uffd_wp(void)
{
	const char *name = "shmem_uffd_wp_survives_reclaim";
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_WP_HUGETLBFS_SHMEM,
	};
	struct uffdio_register reg = { 0 };
	struct uffdio_writeprotect wp = { 0 };
	int fd = open(TMPFS_DIR "/wp", O_RDWR | O_CREAT | O_TRUNC, 0644);
	size_t lost = 0;
	char *map;
	int uffd;

	if (fd < 0 || ftruncate(fd, FSIZE))
		die("tmpfs file");
	map = mmap(NULL, FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	fill_pages(map, FPAGES, 24);
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api)) {
		ktap_skip(name, "uffd-wp on shmem not available");
		return;
	}
	reg.range.start = (uintptr_t)map;
	reg.range.len = FSIZE;
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
	wp.range.start = (uintptr_t)map;
	wp.range.len = FSIZE;
	wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
	if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
		die("UFFDIO_WRITEPROTECT");
	/*
	 * Write-protecting a PMD-mapped shmem THP zaps the PMD and leaves
	 * markers; read every page back in so that reclaim itself has to turn
	 * write-protected present PTEs into markers.
	 */
	for (size_t pg = 0; pg < FPAGES; pg++)
		(void)((volatile char *)map)[pg * PAGE_SIZE];
	if (resident(map, FPAGES) < FPAGES) {
		ktap_diag("%s: only %zu of %lu pages mapped before reclaim",
			  name, resident(map, FPAGES), FPAGES);
		lost++;
	}
	lost += !reclaim_mapping(map, name);
	for (size_t pg = 0; pg < FPAGES; pg++)
		if (!(pagemap_entry(map + pg * PAGE_SIZE) & PM_UFFD_WP) &&
		    lost++ < 4)
			ktap_diag("%s: page %zu lost its uffd-wp bit", name, pg);
	lost += !all_verified(map, FPAGES, 24, name);
	/* the markers must still trap: every first write faults */
	lost += writes_without_wp_fault(uffd, map, FPAGES, name);
	close(uffd);
	munmap(map, FSIZE);
	close(fd);
	unlink(TMPFS_DIR "/wp");
	ktap_result(!lost, name);
}

FL_FIXTURE(file_shmem)

/* test_harness_run() exits: torn down by fl_at_exit() */
static void unmount_all(void)
{
	umount(TMPFS_DIR);
	unlink(XFS_DIR "/data");
	umount(XFS_DIR);
}

FL_TEST(file_shmem, xfs_map_shared_writes_reach_disk, 300)
{
	test_xfs_shared();
}
FL_TEST(file_shmem, xfs_partial_mapping_writes_reach_disk, 300)
{
	test_xfs_partial_mapping();
}
FL_TEST(file_shmem, tmpfs_large_folios_swap_out_and_back, 300)
{
	test_tmpfs();
}
FL_TEST(file_shmem, shmem_uffd_wp_survives_reclaim, 300)
{
	test_shmem_uffd_wp();
}

int main(int argc, char **argv)
{
	mkdir(XFS_DIR, 0755);
	mkdir(TMPFS_DIR, 0755);
	umount(TMPFS_DIR);		/* left over from an earlier crash */
	umount(XFS_DIR);
	if (system("mkfs.xfs -q -f /dev/ram0") ||
	    mount("/dev/ram0", XFS_DIR, "xfs", 0, NULL)) {
		printf("Bail out! no XFS on /dev/ram0 (brd)\n");
		return 1;
	}
	if (mount("tmpfs", TMPFS_DIR, "tmpfs", 0, "huge=always,size=256m"))
		die("mount tmpfs");
	memcg_enter(MEMCG);
	fl_at_exit(unmount_all);
	return test_harness_run(argc, argv);
}

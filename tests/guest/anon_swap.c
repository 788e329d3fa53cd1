// SPDX-License-Identifier: GPL-2.0
/*
 * anon_swap: data integrity of anonymous memory through swap-out and
 * swap-in (the unmap path S0 batches). Every test writes a unique pattern
 * into every page, forces the path, and verifies every word. Needs a swap
 * device (zram) and runs as root in the foliolab guest.
 */
#include "guestlib.h"

#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define SIZE (8UL << 20)
#define NPAGES (SIZE / PAGE_SIZE)

/* Pattern in, MADV_PAGEOUT, all swapped, every word back. */
static void test_pageout(int kb, const char *name)
{
	char *buf = map_aligned(SIZE, PMD_SIZE);
	int ok;

	folio_size(kb);
	if (kb == 2048)
		madvise(buf, SIZE, MADV_HUGEPAGE);
	fill_pages(buf, NPAGES, kb);
	ok = !madvise(buf, SIZE, MADV_PAGEOUT);
	ok = ok && all_swapped(buf, NPAGES, name);
	ok = all_verified(buf, NPAGES, kb, name) && ok;
	munmap(buf, SIZE);
	ktap_result(ok, name);
}

/* Soft-dirty set on every third page only; it must survive swap-out. */
static void test_soft_dirty(void)
{
	const char *name = "soft_dirty_preserved_64k";
	char *buf = map_aligned(SIZE, PMD_SIZE);
	size_t wrong = 0;
	int ok = 1;

	folio_size(64);
	fill_pages(buf, NPAGES, 55);
	/* a new VMA is soft-dirty throughout where the kernel tracks it */
	if (!(pagemap_entry(buf) & PM_SOFT_DIRTY)) {
		munmap(buf, SIZE);
		ktap_skip(name, "no soft-dirty tracking (CONFIG_MEM_SOFT_DIRTY)");
		return;
	}
	write_str("/proc/self/clear_refs", "4");
	for (size_t pg = 0; pg < NPAGES; pg += 3)
		/* rewrite one word with its own value: a write all the same */
		((volatile char *)buf)[pg * PAGE_SIZE + 8] = buf[pg * PAGE_SIZE + 8];
	if (madvise(buf, SIZE, MADV_PAGEOUT))
		ok = 0;
	ok = ok && all_swapped(buf, NPAGES, name);
	for (size_t pg = 0; pg < NPAGES; pg++) {
		int want = pg % 3 == 0;
		int have = !!(pagemap_entry(buf + pg * PAGE_SIZE) &
			      PM_SOFT_DIRTY);

		if (want != have && wrong++ < 4)
			ktap_diag("page %zu: soft-dirty %d, expected %d", pg,
				  have, want);
	}
	ok = ok && !wrong;
	ok = all_verified(buf, NPAGES, 55, name) && ok;
	munmap(buf, SIZE);
	ktap_result(ok, name);
}

/* uffd-wp on every other page; the marker bit must survive swap-out. */
static void test_uffd_wp(void)
{
	const char *name = "uffd_wp_preserved_64k";
	char *buf = map_aligned(SIZE, PMD_SIZE);
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	size_t wrong = 0;
	int ok = 1, uffd;

	folio_size(64);
	fill_pages(buf, NPAGES, 57);
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api)) {
		ktap_skip(name, "userfaultfd not available");
		return;
	}
	reg.range.start = (uintptr_t)buf;
	reg.range.len = SIZE;
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		ktap_skip(name, "uffd-wp not supported");
		return;
	}
	for (size_t pg = 0; pg < NPAGES; pg += 2) {
		struct uffdio_writeprotect wp = {
			.range = { (uintptr_t)buf + pg * PAGE_SIZE, PAGE_SIZE },
			.mode = UFFDIO_WRITEPROTECT_MODE_WP,
		};

		if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
			die("UFFDIO_WRITEPROTECT");
	}
	if (madvise(buf, SIZE, MADV_PAGEOUT))
		ok = 0;
	ok = ok && all_swapped(buf, NPAGES, name);
	for (size_t pg = 0; pg < NPAGES; pg++) {
		int want = pg % 2 == 0;
		int have = !!(pagemap_entry(buf + pg * PAGE_SIZE) & PM_UFFD_WP);

		if (want != have && wrong++ < 4)
			ktap_diag("page %zu: uffd-wp %d, expected %d", pg, have,
				  want);
	}
	ok = ok && !wrong;
	ok = all_verified(buf, NPAGES, 57, name) && ok;	/* reads: no wp fault */
	close(uffd);
	munmap(buf, SIZE);
	ktap_result(ok, name);
}

/*
 * After fork and the child's exit, the parent's pages are no longer
 * anon-exclusive; writing every other page makes those exclusive again, so
 * each 64K folio holds a mix. Swap-out must keep every page's data.
 */
static void test_fork_mixed_exclusive(void)
{
	const char *name = "fork_mixed_anon_exclusive_64k";
	char *buf = map_aligned(SIZE, PMD_SIZE);
	pid_t pid;
	int ok;

	folio_size(64);
	fill_pages(buf, NPAGES, 7);
	pid = fork();
	if (pid == 0)
		_exit(verify_pages(buf, NPAGES, 7) ? 1 : 0);
	waitpid(pid, NULL, 0);
	for (size_t pg = 0; pg < NPAGES; pg += 2) {
		uint64_t *q = (uint64_t *)(buf + pg * PAGE_SIZE);

		for (size_t w = 0; w < PAGE_SIZE / 8; w++)
			q[w] = pattern(pg, w, 7);	/* same value: a write */
	}
	ok = !madvise(buf, SIZE, MADV_PAGEOUT);
	ok = ok && all_swapped(buf, NPAGES, name);
	ok = all_verified(buf, NPAGES, 7, name) && ok;
	munmap(buf, SIZE);
	ktap_result(ok, name);
}

static long swap_free_kb(void)
{
	return proc_field("/proc/meminfo", "SwapFree");
}

/*
 * One swapped-out page shared by more than 62 processes: the swap count
 * overflows swap_map into a continuation page. Every sharer reads it back;
 * when all are gone the swap space is free again.
 */
#define CONT_PAGES 1024

static void test_swap_count_continuation(void)
{
	const char *name = "swap_count_continuation_70_sharers";
	/* the per-CPU swap slot caches may hold 128 entries per CPU */
	long slack = 128 * 4 * sysconf(_SC_NPROCESSORS_ONLN);
	long before = swap_free_kb(), after;
	char *buf = map_aligned(CONT_PAGES * PAGE_SIZE, PMD_SIZE);
	int ok, bad = 0, pipefd[2];
	pid_t pids[70];

	folio_size(4);
	fill_pages(buf, CONT_PAGES, 62);
	ok = !madvise(buf, CONT_PAGES * PAGE_SIZE, MADV_PAGEOUT);
	ok = ok && all_swapped(buf, CONT_PAGES, name);
	if (pipe(pipefd))
		die("pipe");
	for (int i = 0; i < 70; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			char c;

			/* hold the swap entries until all 70 exist */
			if (read(pipefd[0], &c, 1) != 1)
				_exit(2);
			_exit(verify_pages(buf, CONT_PAGES, 62) ? 1 : 0);
		}
	}
	close(pipefd[0]);
	for (int i = 0; i < 70; i++)
		if (write(pipefd[1], "x", 1) != 1)
			die("write pipe");
	for (int i = 0; i < 70; i++) {
		int st;

		waitpid(pids[i], &st, 0);
		bad += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	close(pipefd[1]);
	if (bad)
		ktap_diag("%s: %d children read back wrong data", name, bad);
	ok = all_verified(buf, CONT_PAGES, 62, name) && ok && !bad;
	munmap(buf, CONT_PAGES * PAGE_SIZE);
	after = swap_free_kb();
	if (after < before - slack) {
		ktap_diag("%s: SwapFree %ld kB, was %ld kB", name, after,
			  before);
		ok = 0;
	}
	ktap_result(ok, name);
}

#define MEMCG "foliolab-anon-swap"

static long memcg_swap_current(void)
{
	return read_long("/sys/fs/cgroup/" MEMCG "/memory.swap.current");
}

static long mthp_swpout(void)
{
	return read_long(THP "hugepages-64kB/stats/swpout");
}

/*
 * Reclaim from the memcg until the @npages at @buf are swapped out. The
 * folios are mapped by several processes, which keeps MADV_PAGEOUT away;
 * clearing the parent's accessed bits first keeps them off the active list.
 */
static size_t memcg_reclaim_all(const char *buf, size_t npages)
{
	size_t swapped = 0;

	for (int round = 0; round < 20 && swapped < npages; round++) {
		write_str("/proc/self/clear_refs", "1");
		memcg_reclaim(MEMCG, 4 * npages * PAGE_SIZE);
		swapped = count_swapped(buf, npages);
	}
	return swapped;
}

/*
 * One 64K folio per 64K of buffer whose first half is exclusive to the
 * parent and second half shared with a child: MADV_DONTFORK on the first
 * halves keeps them out of fork(), which marks the other pages of the
 * parent possibly shared. MADV_DOFORK merges the VMAs again and clearing
 * soft-dirty write-protects every PTE, so each folio's 16 PTEs differ only
 * in the page's anon-exclusive flag. Reclaim (from a memcg: MADV_PAGEOUT
 * leaves folios mapped by two processes alone) must keep that flag per
 * page: a shared page that came back exclusive would let the parent's
 * writes reach the child, which must still read the old data.
 */
static void test_mixed_exclusive_one_folio(void)
{
	const char *name = "mixed_anon_exclusive_in_one_folio_64k";
	const size_t half = 32 << 10;
	int ok = 1, st, go[2], res[2];
	size_t child_swapped = 0, wrong = 0;
	pid_t pid;
	char *buf;

	memcg_enter(MEMCG);
	folio_size(64);
	buf = map_aligned(SIZE, PMD_SIZE);
	fill_pages(buf, NPAGES, 11);
	for (size_t off = 0; off < SIZE; off += 2 * half)
		if (madvise(buf + off, half, MADV_DONTFORK))
			die("MADV_DONTFORK");
	if (pipe(go) || pipe(res))
		die("pipe");
	pid = fork();
	if (pid == 0) {
		size_t bad = 0, swapped = 0;
		char c;

		if (read(go[0], &c, 1) != 1)
			_exit(2);
		/* the child maps only the second half of each folio */
		for (size_t off = half; off < SIZE; off += 2 * half)
			swapped += count_swapped(buf + off, half / PAGE_SIZE);
		if (write(res[1], &swapped, sizeof(swapped)) != sizeof(swapped))
			_exit(2);
		for (size_t pg = 0; pg < NPAGES; pg++) {
			const uint64_t *q;

			if (pg % 16 < 8)
				continue;
			q = (const uint64_t *)(buf + pg * PAGE_SIZE);
			for (size_t w = 0; w < PAGE_SIZE / 8; w++)
				bad += q[w] != pattern(pg, w, 11);
		}
		_exit(bad ? 1 : 0);
	}
	if (madvise(buf, SIZE, MADV_DOFORK))
		die("MADV_DOFORK");
	write_str("/proc/self/clear_refs", "4");
	memcg_reclaim_all(buf, NPAGES);
	ok = all_swapped(buf, NPAGES, name);
	/*
	 * Read and rewrite the shared halves first: the swap entry of an
	 * exclusive page has one reference, so touching it first would let
	 * 6.12 swap in the whole folio as a private copy (it looks at the
	 * faulting entry's count only, then at the swap PTEs' bits).
	 */
	for (int shared = 1; shared >= 0; shared--)
		for (size_t pg = 0; pg < NPAGES; pg++) {
			uint64_t *q = (uint64_t *)(buf + pg * PAGE_SIZE);

			if ((pg % 16 >= 8) != shared)
				continue;
			for (size_t w = 0; w < PAGE_SIZE / 8; w++) {
				if (q[w] != pattern(pg, w, 11) && wrong++ < 4)
					ktap_diag("%s: page %zu word %zu wrong",
						  name, pg, w);
				q[w] = pattern(pg, w, 12);
			}
		}
	ok = ok && !wrong;
	if (write(go[1], "x", 1) != 1)
		die("write pipe");
	if (read(res[0], &child_swapped, sizeof(child_swapped)) !=
	    sizeof(child_swapped))
		die("read pipe");
	/* the child's mappings must have gone to swap too */
	if (child_swapped < NPAGES / 2 * 9 / 10) {
		ktap_diag("%s: only %zu of the child's %lu pages swapped out",
			  name, child_swapped, NPAGES / 2);
		ok = 0;
	}
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		ktap_diag("%s: the child read data the parent wrote after swap-in",
			  name);
		ok = 0;
	}
	ok = all_verified(buf, NPAGES, 12, name) && ok;
	close(go[0]);
	close(go[1]);
	close(res[0]);
	close(res[1]);
	munmap(buf, SIZE);
	memcg_leave();
	ktap_result(ok, name);
}

/*
 * 64K folios mapped by 71 processes reclaimed from their memcg: every
 * unmap of a folio adds one to the count of its 16 swap entries, so from
 * the 63rd process on the counts need continuation pages and a batched
 * increment has to fall back to one entry at a time. All sharers read
 * their data back; afterwards the memcg's swap charge and SwapFree return
 * to where they were.
 */
#define SHARERS 70
#define SHARED_SIZE (8UL << 20)
#define SHARED_PAGES (SHARED_SIZE / PAGE_SIZE)

static void test_mthp_shared_beyond_swap_map_max(void)
{
	const char *name = "mthp_64k_shared_by_71_reclaimed_from_memcg";
	long slack = 128 * 4 * sysconf(_SC_NPROCESSORS_ONLN);
	long cache_slack = 64 * PAGE_SIZE * sysconf(_SC_NPROCESSORS_ONLN);
	long before = swap_free_kb(), swpout = mthp_swpout();
	int ok = 1, bad = 0, ready[2], go[2];
	pid_t pids[SHARERS];
	size_t swapped = 0;
	char *buf;

	memcg_enter(MEMCG);
	folio_size(64);
	buf = map_aligned(SHARED_SIZE, PMD_SIZE);
	fill_pages(buf, SHARED_PAGES, 63);
	if (pipe(ready) || pipe(go))
		die("pipe");
	for (int i = 0; i < SHARERS; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			char c;

			if (write(ready[1], "r", 1) != 1 ||
			    read(go[0], &c, 1) != 1)
				_exit(2);
			_exit(verify_pages(buf, SHARED_PAGES, 63) ? 1 : 0);
		}
	}
	for (int i = 0; i < SHARERS; i++) {
		char c;

		if (read(ready[0], &c, 1) != 1)
			die("read pipe");
	}
	swapped = memcg_reclaim_all(buf, SHARED_PAGES);
	ok = all_swapped(buf, SHARED_PAGES, name);
	ktap_diag("%s: 64K folios swapped out whole: %ld", name,
		  mthp_swpout() - swpout);
	if (memcg_swap_current() < (long)(swapped * PAGE_SIZE)) {
		ktap_diag("%s: memory.swap.current %ld for %zu pages out",
			  name, memcg_swap_current(), swapped);
		ok = 0;
	}
	for (int i = 0; i < SHARERS; i++)
		if (write(go[1], "x", 1) != 1)
			die("write pipe");
	for (int i = 0; i < SHARERS; i++) {
		int st;

		waitpid(pids[i], &st, 0);
		bad += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	if (bad) {
		ktap_diag("%s: %d children read back wrong data", name, bad);
		ok = 0;
	}
	ok = all_verified(buf, SHARED_PAGES, 63, name) && ok;
	munmap(buf, SHARED_SIZE);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	/*
	 * Freed entries wait in the per-CPU swap slot caches (64 each) before
	 * they are uncharged, and swap cache folios whose last mapping went
	 * while they were locked keep theirs until reclaim takes them. A
	 * leaked count keeps its entry charged for good.
	 */
	memcg_reclaim(MEMCG, SHARED_SIZE);
	if (memcg_swap_current() > cache_slack) {
		ktap_diag("%s: memory.swap.current %ld after munmap", name,
			  memcg_swap_current());
		ok = 0;
	}
	if (swap_free_kb() < before - slack) {
		ktap_diag("%s: SwapFree %ld kB, was %ld kB", name,
			  swap_free_kb(), before);
		ok = 0;
	}
	memcg_leave();
	ktap_result(ok, name);
}

/* swapoff must bring every swapped-out mTHP page back intact. */
static void test_swapoff_mthp(void)
{
	const char *name = "swapoff_with_swapped_out_64k";
	char *buf = map_aligned(SIZE, PMD_SIZE);
	int ok;

	folio_size(64);
	fill_pages(buf, NPAGES, 64);
	ok = !madvise(buf, SIZE, MADV_PAGEOUT);
	ok = ok && all_swapped(buf, NPAGES, name);
	if (system("swapoff /dev/zram0")) {
		ktap_diag("%s: swapoff failed", name);
		ok = 0;
	}
	ok = all_verified(buf, NPAGES, 64, name) && ok;
	if (system("swapon /dev/zram0"))
		ktap_diag("%s: swapon failed", name);
	munmap(buf, SIZE);
	ktap_result(ok, name);
}

int main(void)
{
	ktap_plan(10);
	test_pageout(4, "pageout_4k");
	test_pageout(64, "pageout_64k");
	test_pageout(2048, "pageout_pmd");
	test_soft_dirty();
	test_uffd_wp();
	test_fork_mixed_exclusive();
	test_mixed_exclusive_one_folio();
	test_swap_count_continuation();
	test_swapoff_mthp();
	test_mthp_shared_beyond_swap_map_max();
	return ktap_finish();
}

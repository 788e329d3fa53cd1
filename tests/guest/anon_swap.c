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
#include <sys/utsname.h>
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

/*
 * Soft-dirty set on every @stride-th page only (none if @stride is 0) after
 * clear_refs; it must survive swap-out as it was. The PTEs are dirty from
 * the fill, so a batch that merged their dirty bits with x86's
 * pte_mkdirty() would make every swap PTE soft-dirty.
 */
static void test_soft_dirty(size_t stride, const char *name)
{
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
	for (size_t pg = 0; stride && pg < NPAGES; pg += stride)
		/* rewrite one word with its own value: a write all the same */
		((volatile char *)buf)[pg * PAGE_SIZE + 8] = buf[pg * PAGE_SIZE + 8];
	if (madvise(buf, SIZE, MADV_PAGEOUT))
		ok = 0;
	ok = ok && all_swapped(buf, NPAGES, name);
	for (size_t pg = 0; pg < NPAGES; pg++) {
		int want = stride && pg % stride == 0;
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

/* Does page @pg of @buf hold its pattern for @seed? */
static int page_holds(const char *buf, size_t pg, uint64_t seed)
{
	const uint64_t *q = (const uint64_t *)(buf + pg * PAGE_SIZE);

	for (size_t w = 0; w < PAGE_SIZE / 8; w++)
		if (q[w] != pattern(pg, w, seed))
			return 0;
	return 1;
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
/* memory.reclaim passes a case may need before reclaim reaches its folios */
#define RECLAIM_ROUNDS 20
/*
 * With MGLRU off, reclaim moves anon folios from the active to the inactive
 * list only when the memcg's LRU sizes, as last flushed, show the inactive
 * list low. A small test changes them too little to force a flush, so they
 * are flushed every 2 s (FLUSH_TIME); a folio that one pass activated (its
 * unmap failed, or it was refaulted) can stay active through any number of
 * passes made sooner (seen: 20 in a row). Passes after the first wait.
 */
#define MEMCG_STATS_FLUSH_US 2500000

/* Reclaim pass @round (from 0) of @bytes from the memcg, accessed bits
 * cleared first so that the parent's own PTEs do not keep folios active. */
static void reclaim_pass(int round, size_t bytes)
{
	if (round)
		usleep(MEMCG_STATS_FLUSH_US);
	write_str("/proc/self/clear_refs", "1");
	memcg_reclaim(MEMCG, bytes);
}

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

	for (int round = 0; round < RECLAIM_ROUNDS && swapped < npages;
	     round++) {
		reclaim_pass(round, 4 * npages * PAGE_SIZE);
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

#define SHARERS 70
#define SHARED_SIZE (8UL << 20)
#define SHARED_PAGES (SHARED_SIZE / PAGE_SIZE)

/* Wait until each of the SHARERS children has said it is ready. */
static void sharers_ready(int ready[2])
{
	for (int i = 0; i < SHARERS; i++) {
		char c;

		if (read(ready[0], &c, 1) != 1)
			die("read pipe");
	}
}

/*
 * Let the SHARERS children @pids check their copy of @buf (filled with
 * @seed), check the parent's, unmap it and leave the memcg: 0 if a child
 * or the parent read wrong data, or if the memcg's swap charge or SwapFree
 * (@swap_free_before kB) did not come back.
 */
static int sharers_done(const char *name, char *buf, uint64_t seed,
			const pid_t *pids, int ready[2], int go[2],
			long swap_free_before)
{
	long slack = 128 * 4 * sysconf(_SC_NPROCESSORS_ONLN);
	long cache_slack = 64 * PAGE_SIZE * sysconf(_SC_NPROCESSORS_ONLN);
	int ok = 1, bad = 0;

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
	ok = all_verified(buf, SHARED_PAGES, seed, name) && ok;
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
	if (swap_free_kb() < swap_free_before - slack) {
		ktap_diag("%s: SwapFree %ld kB, was %ld kB", name,
			  swap_free_kb(), swap_free_before);
		ok = 0;
	}
	memcg_leave();
	return ok;
}

/*
 * 64K folios mapped by 71 processes reclaimed from their memcg: every
 * unmap of a folio adds one to the count of its 16 swap entries, so from
 * the 63rd process on the counts need continuation pages and a batched
 * increment has to fall back to one entry at a time. All sharers read
 * their data back; afterwards the memcg's swap charge and SwapFree return
 * to where they were.
 */
static void test_mthp_shared_beyond_swap_map_max(void)
{
	const char *name = "mthp_64k_shared_by_71_reclaimed_from_memcg";
	long before = swap_free_kb(), swpout = mthp_swpout();
	int ok = 1, ready[2], go[2];
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
	sharers_ready(ready);
	swapped = memcg_reclaim_all(buf, SHARED_PAGES);
	ok = all_swapped(buf, SHARED_PAGES, name);
	ktap_diag("%s: 64K folios swapped out whole: %ld", name,
		  mthp_swpout() - swpout);
	if (memcg_swap_current() < (long)(swapped * PAGE_SIZE)) {
		ktap_diag("%s: memory.swap.current %ld for %zu pages out",
			  name, memcg_swap_current(), swapped);
		ok = 0;
	}
	ok = sharers_done(name, buf, 63, pids, ready, go, before) && ok;
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

#define FAIL_PAGE_ALLOC "/sys/kernel/debug/fail_page_alloc/"
#define UPPER_ONLY 41
#define FAIL_TIMES 100000

/*
 * Make the reclaiming task's non-sleeping page allocations fail, but only
 * those made under add_swap_count_continuation() (the stack trace filter):
 * anything else that fails, zram's first try at storing a page for one,
 * would use up the failures and prove nothing about the continuation.
 */
static int fail_atomic_page_allocs(int on)
{
	unsigned long start, end;
	char times[32], addr[32];

	if (access(FAIL_PAGE_ALLOC "probability", W_OK) ||
	    access(FAIL_PAGE_ALLOC "require-start", W_OK))
		return 0;
	if (on) {
		if (!ksym_range("add_swap_count_continuation", &start, &end))
			return 0;
		snprintf(addr, sizeof(addr), "%lu", start);
		write_str(FAIL_PAGE_ALLOC "require-start", addr);
		snprintf(addr, sizeof(addr), "%lu", end);
		write_str(FAIL_PAGE_ALLOC "require-end", addr);
		snprintf(times, sizeof(times), "%d", FAIL_TIMES);
		write_str(FAIL_PAGE_ALLOC "task-filter", "Y");
		write_str(FAIL_PAGE_ALLOC "ignore-gfp-wait", "Y");
		/* the continuation page is asked for with __GFP_HIGHMEM */
		write_str(FAIL_PAGE_ALLOC "ignore-gfp-highmem", "N");
		write_str(FAIL_PAGE_ALLOC "min-order", "0");
		write_str(FAIL_PAGE_ALLOC "verbose", "0");
		write_str(FAIL_PAGE_ALLOC "interval", "1");
		write_str(FAIL_PAGE_ALLOC "times", times);
		write_str(FAIL_PAGE_ALLOC "probability", "100");
	} else {
		write_str(FAIL_PAGE_ALLOC "probability", "0");
	}
	write_str("/proc/self/make-it-fail", on ? "1" : "0");
	return 1;
}

/*
 * 64K folios whose second halves are mapped by 71 processes and first
 * halves by 30 (the first 41 children MADV_DONTNEED their first halves),
 * reclaimed from a memcg while every allocation of a continuation page by
 * the reclaiming task fails. Every sharer's VMA stays whole and starts at
 * the same page offset, so the rmap walk visits them in fork order (the
 * anon_vma tree orders VMAs by their start, and equal starts by age; a
 * VMA split by MADV_DONTFORK would start later and be visited after every
 * full mapping). The parent and the 41 upper halves raise the second
 * halves' counts to 42 and the first halves' to 1; in the full mappings
 * after them the counts of a batch of 16 go up together until, at the
 * 21st, the first 8 are below SWAP_MAP_MAX and the 9th needs a
 * continuation page it cannot get: swap_duplicate_nr() must drop the 8
 * references it added, and the batch put its PTEs back. Then reclaim
 * again without failures, and every sharer must read its data; when all
 * are gone, swap and memcg swap charge must be back where they were (a
 * count left raised keeps its entry for good, and the kernel reports an
 * "Unused swap offset entry" for one dropped too often).
 *
 * With 4K folios (@kb 4) the same sharers make the order-0 path fail
 * instead: try_to_unmap_swapbacked()'s swap_duplicate() of a second-half
 * page at the 62nd sharer needs a continuation page it cannot get, and
 * the page's PTE must be put back as it was.
 */
static void test_continuation_alloc_failure(int kb, const char *name)
{
	long before = swap_free_kb(), failed = 0;
	int ok = 1, ready[2], go[2];
	pid_t pids[SHARERS];
	size_t swapped;
	unsigned long start, end;
	char *buf;

	/*
	 * Kernels from the swap table rework on (7.x) keep every count in the
	 * table and have no continuation pages: nothing here to fail. A
	 * kallsyms that lists try_to_unmap but not the continuation says so;
	 * an empty kallsyms is a broken setup and fails below instead.
	 */
	if (!ksym_range("add_swap_count_continuation", &start, &end) &&
	    ksym_range("try_to_unmap", &start, &end)) {
		ktap_skip(name, "this kernel has no swap count continuation "
			  "(no add_swap_count_continuation in /proc/kallsyms)");
		return;
	}
	memcg_enter(MEMCG);
	folio_size(kb);
	buf = map_aligned(SHARED_SIZE, PMD_SIZE);
	fill_pages(buf, SHARED_PAGES, 67);
	if (pipe(ready) || pipe(go))
		die("pipe");
	for (int i = 0; i < SHARERS; i++) {
		int upper_only = i < UPPER_ONLY;

		pids[i] = fork();
		if (pids[i] == 0) {
			size_t bad = 0;
			char c;

			/* zap, not DONTFORK: the VMA stays whole (see above) */
			for (size_t f = 0; upper_only && f < SHARED_PAGES / 16; f++)
				if (madvise(buf + f * 65536, 32768, MADV_DONTNEED))
					_exit(3);
			if (write(ready[1], "r", 1) != 1 ||
			    read(go[0], &c, 1) != 1)
				_exit(2);
			for (size_t pg = 0; pg < SHARED_PAGES; pg++)
				if (!upper_only || pg % 16 >= 8)
					bad += !page_holds(buf, pg, 67);
			_exit(bad ? 1 : 0);
		}
	}
	sharers_ready(ready);
	if (!fail_atomic_page_allocs(1)) {
		ktap_diag("%s: no %s with require-start (CONFIG_FAIL_PAGE_ALLOC, "
			  "CONFIG_FAULT_INJECTION_STACKTRACE_FILTER) or no "
			  "add_swap_count_continuation in /proc/kallsyms", name,
			  FAIL_PAGE_ALLOC);
		ok = 0;
	}
	/* the classic LRU may need a few passes to reach the shared folios */
	for (int round = 0; round < RECLAIM_ROUNDS && failed <= 0; round++) {
		reclaim_pass(round, 4 * SHARED_SIZE);
		failed = FAIL_TIMES - read_long(FAIL_PAGE_ALLOC "times");
	}
	fail_atomic_page_allocs(0);
	swapped = count_swapped(buf, SHARED_PAGES);
	ktap_diag("%s: %ld allocations failed, %zu of %lu pages swapped out",
		  name, failed, swapped, SHARED_PAGES);
	if (failed <= 0) {
		ktap_diag("%s: no allocation was made to fail", name);
		ok = 0;
	}
	ok = all_verified(buf, SHARED_PAGES, 67, name) && ok;

	swapped = memcg_reclaim_all(buf, SHARED_PAGES);
	ok = all_swapped(buf, SHARED_PAGES, name) && ok;
	ok = sharers_done(name, buf, 67, pids, ready, go, before) && ok;
	ktap_result(ok, name);
}

/*
 * Of the pages child @pid maps at @buf (both halves of each 64K folio, or
 * with @upper_only the second halves): how many are present (*present)
 * and how many swapped out (*swapped), read from its pagemap. A mapped
 * page is one or the other; the rest are PTEs left none.
 */
static size_t child_pages_none(pid_t pid, const char *buf, int upper_only,
			       size_t *present, size_t *swapped)
{
	char path[64];
	size_t none = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path);
	*present = *swapped = 0;
	for (size_t pg = 0; pg < SHARED_PAGES; pg++) {
		uint64_t ent;
		off_t off = ((uintptr_t)buf / PAGE_SIZE + pg) * sizeof(ent);

		if (upper_only && pg % 16 < 8)
			continue;
		if (pread(fd, &ent, sizeof(ent), off) != sizeof(ent))
			die("pread pagemap");
		if (ent & (1ULL << 63))
			(*present)++;
		else if (ent & (1ULL << 62))
			(*swapped)++;
		else
			none++;
	}
	close(fd);
	return none;
}

/* Run this task on CPU @cpu only. */
static void run_on_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

/* the first children that map only the second half of each 64K folio */
#define EXT_UPPER_ONLY 8
#define EXT_FAIL_TIMES 100000

/*
 * The swap table's counterpart of the continuation failure above (7.x): a
 * slot's count lives in the table up to SWP_TB_COUNT_MAX (15 on 64-bit),
 * and raising it to that needs the cluster's extend table, which
 * swap_dup_entries_cluster() allocates with GFP_ATOMIC after dropping the
 * cluster lock. Here that allocation fails (failslab, for the reclaiming
 * task, with swap_dup_entries_cluster() on the stack). 64K folios shared
 * with SHARERS children, the first EXT_UPPER_ONLY of which zap the first
 * half of each folio; the rmap walk visits the parent, then the children
 * in fork order (see above). After the parent and those 8, the first
 * halves' counts are at 1 and the second halves' at 9; at the 6th full
 * mapping (child 13) they are at 6 and 14: its batch of 16 raises 8
 * counts, fails at the 9th, must drop those 8 again and have its 16 PTEs
 * put back, and the folio stays in memory. Asserted: failures used; in every child each
 * page it maps present or swapped out, none left cleared (from its
 * pagemap), and some child's pages all still present (the walk stopped);
 * every page of the parent intact; then reclaim without failures swaps
 * everything out, every sharer reads its data, and swap and memcg swap
 * charge come back (a count left raised by the failed batch keeps its
 * entry for good). The parent reclaims on CPU 0 while child 13 spins
 * alone on CPU 1, so its mm is in use on another CPU and reclaim defers
 * the TLB flush of its PTEs (x86 defers only then, and a CPU leaves an
 * mm's cpumask when it switches to another or idles): the batch put back
 * is one whose invalidation is pending. The other children sleep on CPU 2
 * (CPU 0 on a 2-CPU guest).
 */
static void test_extend_table_alloc_failure(void)
{
	const char *name = "swap_count_extend_table_alloc_failure_puts_batch_back";
	const char *fn = "swap_dup_entries_cluster";
	long before = swap_free_kb(), failed = 0;
	size_t none = 0, present, swapped;
	int ok = 1, ready[2], go[2], first_kept = -1;
	pid_t pids[SHARERS];
	unsigned long start, end;
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	/* the child whose batch fails, alone on CPU 1 (see above) */
	const int failing = EXT_UPPER_ONLY + 5;
	volatile int *spin;
	cpu_set_t was;
	char *buf;

	/*
	 * Kernels before the swap table (6.x) overflow a count into
	 * continuation pages, which the cases above make fail. An empty
	 * kallsyms is a broken setup, and fails below instead.
	 */
	if (!ksym_range("swap_retry_table_alloc", &start, &end) &&
	    ksym_range("try_to_unmap", &start, &end)) {
		ktap_skip(name, "this kernel has no swap table extend table "
			  "(no swap_retry_table_alloc in /proc/kallsyms)");
		return;
	}
	if (!ksym_range(fn, &start, &end))
		fn = "folio_dup_swap_pages";	/* where it is inlined */
	if (!failslab_usable(fn)) {
		ktap_skip(name, "no " FAILSLAB " with require-start "
			  "(CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_STACKTRACE_FILTER) "
			  "or no swap_dup_entries_cluster in /proc/kallsyms");
		return;
	}
	if (sched_getaffinity(0, sizeof(was), &was))
		die("sched_getaffinity");
	run_on_cpu(0);
	memcg_enter(MEMCG);
	folio_size(64);
	buf = map_aligned(SHARED_SIZE, PMD_SIZE);
	fill_pages(buf, SHARED_PAGES, 71);
	spin = mmap(NULL, PAGE_SIZE, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (spin == MAP_FAILED)
		die("mmap");
	*spin = 1;
	if (pipe(ready) || pipe(go))
		die("pipe");
	for (int i = 0; i < SHARERS; i++) {
		int upper_only = i < EXT_UPPER_ONLY;

		pids[i] = fork();
		if (pids[i] == 0) {
			size_t bad = 0;
			char c;

			if (ncpus > 1)
				run_on_cpu(i == failing ? 1 : ncpus > 2 ? 2 : 0);
			/* zap, not DONTFORK: the VMA stays whole (see above) */
			for (size_t f = 0; upper_only && f < SHARED_PAGES / 16; f++)
				if (madvise(buf + f * 65536, 32768, MADV_DONTNEED))
					_exit(3);
			if (write(ready[1], "r", 1) != 1)
				_exit(2);
			while (i == failing && *spin)
				;
			if (read(go[0], &c, 1) != 1)
				_exit(2);
			for (size_t pg = 0; pg < SHARED_PAGES; pg++)
				if (!upper_only || pg % 16 >= 8)
					bad += !page_holds(buf, pg, 71);
			_exit(bad ? 1 : 0);
		}
	}
	sharers_ready(ready);
	failslab_arm(fn, EXT_FAIL_TIMES);
	make_it_fail(0, 1);
	/* the classic LRU may need a few passes to reach the shared folios */
	for (int round = 0; round < RECLAIM_ROUNDS && failed <= 0; round++) {
		reclaim_pass(round, 4 * SHARED_SIZE);
		failed = EXT_FAIL_TIMES - read_long(FAILSLAB "times");
	}
	make_it_fail(0, 0);
	failed = failslab_disarm(EXT_FAIL_TIMES);
	*spin = 0;
	for (int i = 0; i < SHARERS; i++) {
		int upper_only = i < EXT_UPPER_ONLY;
		size_t mapped = upper_only ? SHARED_PAGES / 2 : SHARED_PAGES;

		none += child_pages_none(pids[i], buf, upper_only, &present,
					 &swapped);
		if (first_kept < 0 && present == mapped)
			first_kept = i;
	}
	ktap_diag("%s: %ld extend table allocations failed; the first child with every page still mapped: %d (of %d); %zu mapped pages left cleared",
		  name, failed, first_kept, SHARERS, none);
	if (failed <= 0) {
		ktap_diag("%s: no allocation was made to fail", name);
		ok = 0;
	}
	if (first_kept < 0) {
		ktap_diag("%s: every sharer lost some PTEs although no batch could raise its counts",
			  name);
		ok = 0;
	}
	if (none) {
		ktap_diag("%s: a batch whose counts could not be raised was not put back",
			  name);
		ok = 0;
	}
	ok = all_verified(buf, SHARED_PAGES, 71, name) && ok;

	swapped = memcg_reclaim_all(buf, SHARED_PAGES);
	ktap_diag("%s: without failures %zu of %lu pages swapped out", name,
		  swapped, SHARED_PAGES);
	ok = all_swapped(buf, SHARED_PAGES, name) && ok;
	ok = sharers_done(name, buf, 71, pids, ready, go, before) && ok;
	munmap((void *)spin, PAGE_SIZE);
	sched_setaffinity(0, sizeof(was), &was);
	ktap_result(ok, name);
}

#define GUP_TEST "/sys/kernel/debug/gup_test"
struct pin_longterm_test {
	uint64_t addr;
	uint64_t size;
	uint32_t flags;
};
#define PIN_LONGTERM_TEST_START _IOW('g', 7, struct pin_longterm_test)
#define PIN_LONGTERM_TEST_STOP _IO('g', 8)
#define PIN_LONGTERM_TEST_READ _IOW('g', 9, uint64_t)
#define PIN_FOLIOS 8
#define PIN_PAGES (PIN_FOLIOS * 16)

static long status_kb(const char *key)
{
	return proc_field("/proc/self/status", key);
}

/*
 * A batch partly pinned: a 64K folio whose first half is shared with a
 * child and second half exclusive to the parent, PROT_READ so that its
 * batch is 8 shared + 8 exclusive PTEs, one exclusive page pinned
 * long-term (gup_test: FOLL_PIN | FOLL_LONGTERM, as for an
 * io_uring fixed buffer). 6.12's reclaim skips a pinned folio before
 * add_to_swap(), so the batch sees a pin only on a folio already in the
 * swap cache: before the fork, a first reclaim adds folio 0 to swap and
 * stops at the mlock()ed first page (the large folio is not mlocked, as
 * the locked VMA holds only a page of it; and the folio stays fully
 * mapped, so it is not queued for a deferred split), then munlock(), the
 * fork and the pin (the first reclaim swaps out the other folios whole).
 * The second reclaim must unmap the shared half of folio 0 and put the
 * pinned folio's exclusive half back: VmSwap moves by all but those 8
 * pages. The pin must still be the
 * parent's page (it reads what the parent writes afterwards), the child
 * must read its data, and SwapFree must come back and swapoff succeed.
 */
static void test_partly_pinned_batch(void)
{
	const char *name = "batch_8_shared_8_exclusive_one_pinned";
	size_t len = PIN_FOLIOS * 64 * 1024, kept = 0, wrong = 0;
	long slack = 128 * 4 * sysconf(_SC_NPROCESSORS_ONLN);
	long before = swap_free_kb(), swap0;
	struct pin_longterm_test pin = { 0 };
	char *buf, *pinned, got[PAGE_SIZE];
	uint64_t dst;
	int gup, ok = 1, st, go[2], ready[2];
	pid_t kid;
	char c;

	gup = open(GUP_TEST, O_RDWR);
	if (gup < 0) {
		ktap_skip(name, "no " GUP_TEST " (CONFIG_GUP_TEST)");
		return;
	}
	memcg_enter(MEMCG);
	folio_size(64);
	buf = map_aligned(len, PMD_SIZE);
	fill_pages(buf, PIN_PAGES, 93);
	swap0 = status_kb("VmSwap");
	if (mlock(buf, PAGE_SIZE))
		die("mlock");
	for (int round = 0; round < RECLAIM_ROUNDS &&
	     !(kpageflags_of(buf) & (1ULL << KPF_SWAPCACHE)); round++)
		reclaim_pass(round, 4 * len);
	if (munlock(buf, PAGE_SIZE))
		die("munlock");
	if (!(kpageflags_of(buf) & (1ULL << KPF_SWAPCACHE))) {
		/* the case below is not reached: no result, a failure */
		ktap_diag("%s: folio 0 did not enter the swap cache", name);
		ok = 0;
	}
	/*
	 * The failed unmap activated folio 0; with MGLRU off, memcg reclaim
	 * may then leave it on the active list for good (seen in 2 of 3
	 * runs). Deactivate it while MADV_COLD still may (not yet shared).
	 */
	if (madvise(buf, 65536, MADV_COLD))
		die("MADV_COLD");
	for (size_t f = 0; f < PIN_FOLIOS; f++)
		if (madvise(buf + f * 65536 + 32768, 32768, MADV_DONTFORK))
			die("MADV_DONTFORK");
	if (pipe(go) || pipe(ready))
		die("pipe");
	kid = fork();
	if (kid == 0) {
		size_t bad = 0;

		if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(2);
		/* the child has the first half of every folio only */
		for (size_t pg = 0; pg < PIN_PAGES; pg++)
			if (pg % 16 < 8)
				bad += !page_holds(buf, pg, 93);
		_exit(bad ? 1 : 0);
	}
	if (read(ready[0], &c, 1) != 1)
		die("child");
	if (madvise(buf, len, MADV_DOFORK) || mprotect(buf, len, PROT_READ))
		die("MADV_DOFORK/mprotect");

	pinned = buf + 32768 + 3 * PAGE_SIZE;	/* folio 0, exclusive half */
	pin.addr = (uintptr_t)pinned;
	pin.size = PAGE_SIZE;
	if (ioctl(gup, PIN_LONGTERM_TEST_START, &pin))
		die("PIN_LONGTERM_TEST_START");
	/* the shared half goes (the active list may hold folio 0 a while) */
	for (int round = 0; round < RECLAIM_ROUNDS &&
	     !(pagemap_entry(buf) & PM_SWAP); round++)
		reclaim_pass(round, 4 * len);
	for (size_t pg = 0; pg < PIN_PAGES; pg++) {
		int want_kept = pg >= 8 && pg < 16;
		uint64_t e = pagemap_entry(buf + pg * PAGE_SIZE);
		int is_swap = !!(e & PM_SWAP), present = !!(e & PM_PRESENT);

		kept += present;
		if ((want_kept ? !present : !is_swap) && wrong++ < 4)
			ktap_diag("%s: page %zu %s", name, pg, want_kept ?
				  "unmapped although its folio is pinned" :
				  "not swapped out");
	}
	ktap_diag("%s: VmSwap +%ld kB, %zu pages kept mapped, folio 0 flags %#llx",
		  name, status_kb("VmSwap") - swap0, kept,
		  (unsigned long long)kpageflags_of(buf));
	if (wrong || status_kb("VmSwap") - swap0 < (long)(PIN_PAGES - 8) * 4)
		ok = 0;
	/* the pin must see what the parent writes into its page now */
	if (mprotect(buf, len, PROT_READ | PROT_WRITE))
		die("mprotect");
	((uint64_t *)pinned)[5] = 0x70696e6e6564ULL;
	dst = (uintptr_t)got;	/* the ioctl reads the address from here */
	if (ioctl(gup, PIN_LONGTERM_TEST_READ, &dst) ||
	    memcmp(got, pinned, PAGE_SIZE)) {
		ktap_diag("%s: the pinned page is no longer the parent's", name);
		ok = 0;
	}
	((uint64_t *)pinned)[5] = pattern(11, 5, 93);
	ioctl(gup, PIN_LONGTERM_TEST_STOP);
	close(gup);
	if (write(go[1], "x", 1) != 1)
		die("write pipe");
	waitpid(kid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		ktap_diag("%s: the child read back wrong data", name);
		ok = 0;
	}
	ok = all_verified(buf, PIN_PAGES, 93, name) && ok;
	munmap(buf, len);
	for (int k = 0; k < 2; k++) {
		close(go[k]);
		close(ready[k]);
	}
	memcg_leave();
	if (swap_free_kb() < before - slack) {
		ktap_diag("%s: SwapFree %ld kB, was %ld kB", name,
			  swap_free_kb(), before);
		ok = 0;
	}
	if (system("swapoff /dev/zram0") || system("swapon /dev/zram0")) {
		ktap_diag("%s: swapoff/swapon failed", name);
		ok = 0;
	}
	ktap_result(ok, name);
}

#define SWAPCACHE_PAGES 64

/* Set memory.swap.max or memory.swap.high of this program's memcg. */
static void memcg_swap_limit(const char *which, const char *value)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/fs/cgroup/" MEMCG "/memory.swap.%s",
		 which);
	write_str(path, value);
}

/* The running kernel's major version (6 for 6.12). */
static int kernel_major(void)
{
	struct utsname u;

	return uname(&u) ? 0 : atoi(u.release);
}

/*
 * An order-0 page pinned while it is mapped and in the swap cache: swap
 * readahead (MADV_WILLNEED) brings pages that were paged out back into
 * the swap cache, and a read fault maps each from there, still exclusive
 * (its swap PTE said so) and still in the swap cache. Reclaim skips a
 * pinned folio only before add_to_swap(), so MADV_PAGEOUT of the pinned
 * pages unmaps each on the single-page path, where marking the exclusive
 * page shared fails: the PTE must be put back as it was and the swap
 * reference dropped again. With the memcg's memory.swap.max at 0 swap
 * counts as full, so the activation that follows frees the swap space of
 * each page. Every page must stay mapped while pinned, the pin must see
 * what the process writes, and once unpinned every page must go to swap
 * and come back intact.
 */
static void test_swapcache_pinned_4k(void)
{
	const char *name = "swapcache_4k_pinned_unmap_puts_pte_back";
	const size_t npages = SWAPCACHE_PAGES, len = npages * PAGE_SIZE;
	struct pin_longterm_test pin = { 0 };
	size_t cached = 0, kept = 0;
	char *buf, *got = malloc(len);
	uint64_t dst;
	int gup, ok = 1;

	gup = open(GUP_TEST, O_RDWR);
	if (gup < 0) {
		ktap_skip(name, "no " GUP_TEST " (CONFIG_GUP_TEST)");
		return;
	}
	if (!got)
		die("malloc");
	memcg_enter(MEMCG);
	folio_size(4);
	buf = map_aligned(len, PMD_SIZE);
	madvise(buf, len, MADV_NOHUGEPAGE);
	fill_pages(buf, npages, 97);
	if (madvise(buf, len, MADV_PAGEOUT) || !all_swapped(buf, npages, name))
		ok = 0;
	if (madvise(buf, len, MADV_WILLNEED))
		die("MADV_WILLNEED");
	for (size_t pg = 0; pg < npages; pg++)
		(void)*(volatile char *)(buf + pg * PAGE_SIZE);	/* read fault */
	for (size_t pg = 0; pg < npages; pg++)
		cached += !!(kpageflags_of(buf + pg * PAGE_SIZE) &
			     (1ULL << KPF_SWAPCACHE));
	if (!cached) {
		munmap(buf, len);
		free(got);
		close(gup);
		memcg_leave();
		/*
		 * 7.x frees the swap cache of a page read back from a device
		 * with SWP_SYNCHRONOUS_IO (zram) at the fault: no pinned swap
		 * cache page to make there. Before 7 the case is not reached:
		 * no result, a failure.
		 */
		if (kernel_major() >= 7) {
			ktap_skip(name, "this kernel frees the swap cache of a "
				  "page read back from zram at the fault");
			return;
		}
		ktap_diag("%s: no page stayed in the swap cache after its read "
			  "fault", name);
		ktap_result(0, name);
		return;
	}
	pin.addr = (uintptr_t)buf;
	pin.size = len;
	if (ioctl(gup, PIN_LONGTERM_TEST_START, &pin))
		die("PIN_LONGTERM_TEST_START");
	memcg_swap_limit("max", "0");
	if (madvise(buf, len, MADV_PAGEOUT))
		ok = 0;
	memcg_swap_limit("max", "max");
	for (size_t pg = 0; pg < npages; pg++)
		kept += !!(pagemap_entry(buf + pg * PAGE_SIZE) & PM_PRESENT);
	ktap_diag("%s: %zu of %zu pages in the swap cache when pinned, %zu "
		  "kept mapped", name, cached, npages, kept);
	if (kept != npages) {
		ktap_diag("%s: %zu pinned pages unmapped", name, npages - kept);
		ok = 0;
	}
	/* the pin must see what the process writes into its pages now */
	((uint64_t *)buf)[7] = 0x70696e6e6564ULL;
	dst = (uintptr_t)got;	/* the ioctl reads the address from here */
	if (ioctl(gup, PIN_LONGTERM_TEST_READ, &dst) || memcmp(got, buf, len)) {
		ktap_diag("%s: the pinned pages are no longer the process's",
			  name);
		ok = 0;
	}
	((uint64_t *)buf)[7] = pattern(0, 7, 97);
	ioctl(gup, PIN_LONGTERM_TEST_STOP);
	close(gup);
	ok = all_verified(buf, npages, 97, name) && ok;
	/* unpinned, they go to swap and come back */
	if (madvise(buf, len, MADV_PAGEOUT) || !all_swapped(buf, npages, name))
		ok = 0;
	ok = all_verified(buf, npages, 97, name) && ok;
	munmap(buf, len);
	free(got);
	memcg_leave();
	ktap_result(ok, name);
}

#define PUTBACK_FOLIOS 4
#define PUTBACK_PAGES (PUTBACK_FOLIOS * 16)

/* The page at @addr is the first of a large folio, or one of its others. */
static int folio_head(const void *addr)
{
	return !!(kpageflags_of(addr) & (1ULL << KPF_COMPOUND_HEAD));
}

static int folio_tail(const void *addr)
{
	return !!(kpageflags_of(addr) & (1ULL << KPF_COMPOUND_TAIL));
}

/*
 * Whole 64K folios in the swap cache, mapped by all their 16 PTEs,
 * exclusive, and pinned long-term: reclaim gets as far as the unmap (a
 * folio already in the swap cache skips the pin check before
 * add_to_swap()), clears the PTEs and then cannot mark the pages possibly
 * shared, so it must put every PTE back; with the batched unmap that is one
 * batch of 16, put back after the invalidation of its range is complete.
 * To get there, the first page of each folio is mlock()ed (its own VMA)
 * while memcg reclaim adds the folios to the swap cache: the unmap then
 * stops at that page before it clears any PTE. munlock() merges the VMAs
 * again. The put-back path must be the one taken: after MADV_PAGEOUT
 * every page is still mapped, each folio still large and in the swap
 * cache, and pgactivate has counted every page (shrink_folio_list()
 * activates a folio whose unmap failed; MADV_PAGEOUT ignores references,
 * so nothing else activates them). The pin must see what the process
 * writes afterwards, every byte must read back, and once unpinned the
 * folios must go to swap and come back intact.
 */
static void test_swapcache_pinned_64k(void)
{
	const char *name = "swapcache_64k_pinned_batch_put_back";
	const size_t npages = PUTBACK_PAGES, len = npages * PAGE_SIZE;
	struct pin_longterm_test pin = { 0 };
	size_t cached = 0, kept = 0, large = 0;
	char *buf, *got = malloc(len);
	long act0, act;
	uint64_t dst;
	int gup, ok = 1;

	gup = open(GUP_TEST, O_RDWR);
	if (gup < 0) {
		ktap_skip(name, "no " GUP_TEST " (CONFIG_GUP_TEST)");
		return;
	}
	if (!got)
		die("malloc");
	memcg_enter(MEMCG);
	folio_size(64);
	buf = map_aligned(len, PMD_SIZE);
	fill_pages(buf, npages, 103);
	for (size_t f = 0; f < PUTBACK_FOLIOS; f++)
		if (mlock(buf + f * 65536, PAGE_SIZE))
			die("mlock");
	for (int round = 0; round < RECLAIM_ROUNDS && cached < PUTBACK_FOLIOS;
	     round++) {
		reclaim_pass(round, 4 * len);
		cached = 0;
		for (size_t f = 0; f < PUTBACK_FOLIOS; f++)
			cached += !!(kpageflags_of(buf + f * 65536) &
				     (1ULL << KPF_SWAPCACHE));
	}
	for (size_t f = 0; f < PUTBACK_FOLIOS; f++)
		if (munlock(buf + f * 65536, PAGE_SIZE))
			die("munlock");
	for (size_t pg = 0; pg < npages; pg++)
		kept += !!(pagemap_entry(buf + pg * PAGE_SIZE) & PM_PRESENT);
	if (cached < PUTBACK_FOLIOS || kept < npages) {
		/* the case below is not reached: no result, a failure */
		ktap_diag("%s: %zu of %d folios in the swap cache, %zu of %zu "
			  "pages mapped", name, cached, PUTBACK_FOLIOS, kept,
			  npages);
		ok = 0;
	}
	pin.addr = (uintptr_t)buf;
	pin.size = len;
	if (ioctl(gup, PIN_LONGTERM_TEST_START, &pin))
		die("PIN_LONGTERM_TEST_START");
	act0 = proc_field("/proc/vmstat", "pgactivate");
	if (madvise(buf, len, MADV_PAGEOUT))
		ok = 0;
	act = proc_field("/proc/vmstat", "pgactivate") - act0;
	kept = cached = 0;
	for (size_t pg = 0; pg < npages; pg++)
		kept += !!(pagemap_entry(buf + pg * PAGE_SIZE) & PM_PRESENT);
	for (size_t f = 0; f < PUTBACK_FOLIOS; f++) {
		const char *head = buf + f * 65536;
		int whole = folio_head(head);

		for (size_t i = 1; i < 16; i++)
			whole = whole && folio_tail(head + i * PAGE_SIZE);
		large += whole;
		cached += !!(kpageflags_of(head) & (1ULL << KPF_SWAPCACHE));
	}
	ktap_diag("%s: after MADV_PAGEOUT of the pinned folios: %zu of %zu "
		  "pages mapped, %zu of %d folios large and %zu in the swap "
		  "cache, pgactivate +%ld", name, kept, npages, large,
		  PUTBACK_FOLIOS, cached, act);
	if (kept != npages || large != PUTBACK_FOLIOS ||
	    cached != PUTBACK_FOLIOS || act < (long)npages) {
		ktap_diag("%s: the PTEs of the pinned folios were not put back",
			  name);
		ok = 0;
	}
	ok = all_verified(buf, npages, 103, name) && ok;
	/* the pin must see what the process writes into its pages now */
	for (size_t pg = 0; pg < npages; pg++)
		((uint64_t *)(buf + pg * PAGE_SIZE))[9] = 0x70757462616bULL + pg;
	dst = (uintptr_t)got;	/* the ioctl reads the address from here */
	if (ioctl(gup, PIN_LONGTERM_TEST_READ, &dst) || memcmp(got, buf, len)) {
		ktap_diag("%s: the pinned pages are no longer the process's",
			  name);
		ok = 0;
	}
	for (size_t pg = 0; pg < npages; pg++)
		((uint64_t *)(buf + pg * PAGE_SIZE))[9] = pattern(pg, 9, 103);
	ioctl(gup, PIN_LONGTERM_TEST_STOP);
	close(gup);
	/* unpinned, they go to swap and come back */
	if (madvise(buf, len, MADV_PAGEOUT) || !all_swapped(buf, npages, name))
		ok = 0;
	ok = all_verified(buf, npages, 103, name) && ok;
	munmap(buf, len);
	free(got);
	memcg_leave();
	ktap_result(ok, name);
}

/*
 * Swap counted full when reclaim gives up on a folio: 64K folios, the
 * first page of the first one mlock()ed, reclaimed from the memcg with
 * its memory.swap.high at 0 (swap charges still succeed, but
 * mem_cgroup_swap_full() holds). Reclaim adds folio 0 to the swap cache,
 * its unmap stops at the locked page, and the activation that follows
 * must give its swap space back: folio 0 stays mapped and leaves the swap
 * cache, the other folios go to swap. Once munlock()ed, with swap.high
 * back to max, folio 0 must go to swap too, and every page read back
 * intact.
 */
static void test_activate_frees_swap_when_full(void)
{
	const char *name = "mthp_64k_stopped_by_mlock_frees_its_swap_when_full";
	const size_t len = 16 * 65536, npages = len / PAGE_SIZE;
	long before = swap_free_kb();
	size_t out = 0;
	char *buf;
	int ok = 1;

	memcg_enter(MEMCG);
	folio_size(64);
	buf = map_aligned(len, PMD_SIZE);
	fill_pages(buf, npages, 99);
	if (mlock(buf, PAGE_SIZE))
		die("mlock");
	memcg_swap_limit("high", "0");
	for (int round = 0; round < RECLAIM_ROUNDS && out < npages - 16;
	     round++) {
		reclaim_pass(round, 4 * len);
		out = count_swapped(buf, npages);
	}
	memcg_swap_limit("high", "max");
	ktap_diag("%s: %zu of %zu pages swapped out, folio 0 flags %#llx", name,
		  out, npages, (unsigned long long)kpageflags_of(buf));
	if (out < npages - 16) {
		ktap_diag("%s: the folios after folio 0 did not all go to swap",
			  name);
		ok = 0;
	}
	for (size_t pg = 0; pg < 16; pg++)
		if (!(pagemap_entry(buf + pg * PAGE_SIZE) & PM_PRESENT)) {
			ktap_diag("%s: page %zu of the folio with a locked page "
				  "was unmapped", name, pg);
			ok = 0;
			break;
		}
	if (kpageflags_of(buf) & (1ULL << KPF_SWAPCACHE)) {
		ktap_diag("%s: folio 0 kept its swap space although swap counts "
			  "as full", name);
		ok = 0;
	}
	ok = all_verified(buf, npages, 99, name) && ok;
	if (munlock(buf, PAGE_SIZE))
		die("munlock");
	/* the activation may keep folio 0 on the classic active list */
	if (madvise(buf, 65536, MADV_COLD))
		die("MADV_COLD");
	for (int round = 0; round < RECLAIM_ROUNDS &&
	     count_swapped(buf, npages) < npages; round++)
		reclaim_pass(round, 4 * len);
	ok = all_swapped(buf, npages, name) && ok;
	ok = all_verified(buf, npages, 99, name) && ok;
	munmap(buf, len);
	memcg_leave();
	if (swap_free_kb() < before - 128 * 4 * sysconf(_SC_NPROCESSORS_ONLN)) {
		ktap_diag("%s: SwapFree %ld kB, was %ld kB", name,
			  swap_free_kb(), before);
		ok = 0;
	}
	ktap_result(ok, name);
}

/*
 * The first page of the 64K folio mapped at @folio that is not on swap at
 * the offset a whole folio would give it (16 consecutive offsets from a
 * multiple of 16), or -1 if the folio went to swap whole.
 */
static int folio_page_not_swapped_whole(const char *folio)
{
	uint64_t off0 = 0;

	for (int i = 0; i < 16; i++) {
		uint64_t ent = pagemap_entry(folio + i * PAGE_SIZE);
		uint64_t off = (ent & PM_SWAP_OFFSET_MASK) >> 5;

		if (i == 0)
			off0 = off;
		if (!(ent & PM_SWAP) || off != off0 + i || off0 % 16)
			return i;
	}
	return -1;
}

/*
 * 64K folios moved by mremap() to 32K past a PMD boundary, so that one of
 * them straddles two page tables: each batch must stop at the end of its
 * page table, and the rmap walk must go on into the next one. Reclaimed
 * from a memcg, not with MADV_PAGEOUT: madvise() splits a folio that
 * crosses the end of the page table it walks, and the case would never
 * reach the batch. The straddling folio must go to swap whole (16
 * consecutive swap offsets from a multiple of 16), every page must read
 * back intact, and the neighbours of the moved range must stay untouched.
 */
static void test_straddle_pmd(void)
{
	const char *name = "pageout_64k_straddling_pmd_after_mremap";
	size_t sz = 1UL << 20, n = sz / PAGE_SIZE;
	char *src, *area, *dst, *buf;
	size_t below, first, swapped;
	int ok = 1;

	memcg_enter(MEMCG);
	folio_size(64);
	src = map_aligned(sz, PMD_SIZE);
	area = map_aligned(4 * PMD_SIZE, PMD_SIZE);
	dst = area + PMD_SIZE - sz / 2 - 32 * 1024;
	below = (dst - area) / PAGE_SIZE;	/* untouched neighbours */
	/* the folio that starts 32K before the boundary */
	first = (size_t)(area + PMD_SIZE - 32 * 1024 - dst) / PAGE_SIZE;
	fill_pages(src, n, 71);
	fill_pages(area, below, 72);
	buf = mremap(src, sz, sz, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	if (buf == MAP_FAILED)
		die("mremap");
	swapped = memcg_reclaim_all(buf, n);
	if (swapped < n) {
		ktap_diag("%s: %zu of %zu pages swapped out", name, swapped, n);
		ok = 0;
	}
	if (ok) {
		int i = folio_page_not_swapped_whole(buf + first * PAGE_SIZE);

		if (i >= 0) {
			ktap_diag("%s: the straddling folio did not go to swap "
				  "whole (page %d: entry %#llx)", name, i,
				  (unsigned long long)pagemap_entry(
					buf + (first + i) * PAGE_SIZE));
			ok = 0;
		}
	}
	ok = all_verified(buf, n, 71, name) && ok;
	ok = all_verified(area, below, 72, name) && ok;
	munmap(area, 4 * PMD_SIZE);
	memcg_leave();
	ktap_result(ok, name);
}

/* How many of the 16-page folios at @buf went to swap whole. */
static size_t folios_swapped_whole(const char *buf, size_t npages)
{
	size_t whole = 0;

	for (size_t f = 0; f + 16 <= npages; f += 16)
		whole += folio_page_not_swapped_whole(buf + f * PAGE_SIZE) < 0;
	return whole;
}

/*
 * swapoff and swapon in a loop in one process while another pages 64K
 * folios out and reads them back in a loop: a swap entry that a batch
 * takes while swapoff runs must either be brought back by swapoff or fail
 * cleanly, and every page must read back its own data every round.
 *
 * A third process, the holder, pages its range out once, before the loop
 * starts, while swap is on and writable, so its 64K folios go to swap
 * whole, each by one batch; then it never touches the range until the end.
 * (Paging out while swapoff runs would split the folios, since swap is
 * not writable then, and a split folio goes by the single-page path.) The
 * first swapoff can only finish by finding the holder's batched swap PTEs
 * through swapoff's list of mms with swap: an mm a batch left off that
 * list keeps swapoff retrying forever. So every swapoff must finish within
 * a minute, and once the loop has run none of the holder's pages may be
 * left on swap. The helpers are forked before anything is mapped, so no
 * folio here is shared (MADV_PAGEOUT leaves shared folios alone).
 */
static void test_swapoff_during_pageout(void)
{
	const char *name = "swapoff_swapon_loop_against_pageout_loop";
	int rounds = 0, swapping_rounds = 0, st, ok = 1, waited;
	/* 0: stop, 1: holder may read, 2: holder's pages out, 3: longest
	 * swapoff (s), 4: holder's folios that went out whole, 5: swapoffs,
	 * 6: the holder has paged out */
	volatile int *flag = mmap(NULL, PAGE_SIZE, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t looper, holder;
	char *buf;

	if (flag == MAP_FAILED)
		die("mmap");
	folio_size(64);
	holder = fork();
	if (holder == 0) {
		char *cold = map_aligned(SIZE, PMD_SIZE);
		int bad;

		fill_pages(cold, NPAGES, 82);
		madvise(cold, SIZE, MADV_PAGEOUT);
		flag[2] = count_swapped(cold, NPAGES);
		flag[4] = folios_swapped_whole(cold, NPAGES);
		flag[6] = 1;
		while (!flag[1])
			usleep(10000);
		/* every swapoff since brought all of them back */
		bad = flag[5] && count_swapped(cold, NPAGES);
		if (bad)
			ktap_diag("%s: %zu of the holder's pages still on swap "
				  "after %d swapoffs", name,
				  count_swapped(cold, NPAGES), flag[5]);
		_exit(verify_pages(cold, NPAGES, 82) || bad ? 1 : 0);
	}
	while (!flag[6] && waitpid(holder, &st, WNOHANG) == 0)
		usleep(10000);
	looper = fork();
	if (looper == 0) {
		int fails = 0;

		/* its own group, so that a stuck swapoff can be killed */
		setpgid(0, 0);
		while (!flag[0]) {
			time_t t0 = time(NULL);
			int off = !system("swapoff /dev/zram0");

			fails += !off;
			flag[5] += off;
			if (time(NULL) - t0 > flag[3])
				flag[3] = time(NULL) - t0;
			fails += !!system("swapon /dev/zram0");
		}
		_exit(fails ? 1 : 0);
	}
	buf = map_aligned(SIZE, PMD_SIZE);
	fill_pages(buf, NPAGES, 81);
	/*
	 * 8 s, and on a slow kernel (KASAN) longer, up to 2 min, until this
	 * loop has had pages swapped out: swapoff keeps the swap device
	 * unwritable for most of the time.
	 */
	for (time_t start = time(NULL);
	     time(NULL) < start + 8 ||
	     (!swapping_rounds && time(NULL) < start + 120);
	     rounds++) {
		madvise(buf, SIZE, MADV_PAGEOUT);
		swapping_rounds += count_swapped(buf, NPAGES) > 0;
		if (!all_verified(buf, NPAGES, 81, name)) {
			ok = 0;
			break;
		}
	}
	flag[0] = 1;
	for (waited = 0; waitpid(looper, &st, WNOHANG) == 0; waited++) {
		if (waited == 600) {
			ktap_diag("%s: swapoff has not finished in 60 s: swap "
				  "entries it cannot find (an mm with swap "
				  "missing from swapoff's list?)", name);
			kill(-looper, SIGKILL);
			waitpid(looper, &st, 0);
			ok = 0;
			break;
		}
		usleep(100000);
	}
	if (ok && (!WIFEXITED(st) || WEXITSTATUS(st))) {
		ktap_diag("%s: a swapoff or swapon failed", name);
		ok = 0;
	}
	flag[1] = 1;
	waitpid(holder, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		ktap_diag("%s: the holder's pages read back wrong or stayed "
			  "on swap", name);
		ok = 0;
	}
	if (system("grep -q zram0 /proc/swaps || swapon /dev/zram0")) {
		ktap_diag("%s: swap not back on", name);
		ok = 0;
	}
	ktap_diag("%s: %d pageout rounds, %d of them swapped pages out; the "
		  "holder had %d pages out, %d folios whole; %d swapoffs, the "
		  "longest %d s", name, rounds, swapping_rounds, flag[2],
		  flag[4], flag[5], flag[3]);
	if (!flag[4] || !flag[5] || !swapping_rounds)
		ok = 0;
	ok = all_verified(buf, NPAGES, 81, name) && ok;
	munmap(buf, SIZE);
	munmap((void *)flag, PAGE_SIZE);
	ktap_result(ok, name);
}

FL_FIXTURE(anon_swap)

FL_TEST(anon_swap, pageout_4k, 300) { test_pageout(4, "pageout_4k"); }
FL_TEST(anon_swap, pageout_64k, 300) { test_pageout(64, "pageout_64k"); }
FL_TEST(anon_swap, pageout_pmd, 300) { test_pageout(2048, "pageout_pmd"); }
FL_TEST(anon_swap, pageout_64k_straddling_pmd_after_mremap, 300)
{
	test_straddle_pmd();
}
FL_TEST(anon_swap, soft_dirty_preserved_64k, 300)
{
	test_soft_dirty(3, "soft_dirty_preserved_64k");
}
FL_TEST(anon_swap, soft_dirty_clear_after_clear_refs_64k, 300)
{
	test_soft_dirty(0, "soft_dirty_clear_after_clear_refs_64k");
}
FL_TEST(anon_swap, uffd_wp_preserved_64k, 300) { test_uffd_wp(); }
FL_TEST(anon_swap, fork_mixed_anon_exclusive_64k, 300)
{
	test_fork_mixed_exclusive();
}
FL_TEST(anon_swap, mixed_anon_exclusive_in_one_folio_64k, 300)
{
	test_mixed_exclusive_one_folio();
}
FL_TEST(anon_swap, swap_count_continuation_70_sharers, 600)
{
	test_swap_count_continuation();
}
FL_TEST(anon_swap, swapoff_with_swapped_out_64k, 300) { test_swapoff_mthp(); }
FL_TEST(anon_swap, swapoff_swapon_loop_against_pageout_loop, 300)
{
	test_swapoff_during_pageout();
}
FL_TEST(anon_swap, batch_8_shared_8_exclusive_one_pinned, 300)
{
	test_partly_pinned_batch();
}
FL_TEST(anon_swap, mthp_64k_shared_by_71_reclaimed_from_memcg, 600)
{
	test_mthp_shared_beyond_swap_map_max();
}
FL_TEST(anon_swap, swap_count_continuation_alloc_failure_rolls_back, 600)
{
	test_continuation_alloc_failure(64,
		"swap_count_continuation_alloc_failure_rolls_back");
}
FL_TEST(anon_swap, swap_count_continuation_alloc_failure_4k, 600)
{
	test_continuation_alloc_failure(4,
		"swap_count_continuation_alloc_failure_4k");
}
FL_TEST(anon_swap, swap_count_extend_table_alloc_failure_puts_batch_back, 600)
{
	test_extend_table_alloc_failure();
}
FL_TEST(anon_swap, swapcache_4k_pinned_unmap_puts_pte_back, 300)
{
	test_swapcache_pinned_4k();
}
FL_TEST(anon_swap, mthp_64k_stopped_by_mlock_frees_its_swap_when_full, 300)
{
	test_activate_frees_swap_when_full();
}
FL_TEST(anon_swap, swapcache_64k_pinned_batch_put_back, 300)
{
	test_swapcache_pinned_64k();
}

TEST_HARNESS_MAIN

// SPDX-License-Identifier: GPL-2.0
/*
 * lazyfree: MADV_FREE'd (lazy-free) anonymous memory through reclaim, the
 * path the batched lazy-free unmap changes. A page written after MADV_FREE
 * must survive; copy-on-write must hold when a lazy-free folio mixes
 * writable and read-only PTEs; folios that straddle a PMD or a VMA
 * boundary must reclaim without touching their neighbours; a folio with
 * an extra reference must not be dropped; a clean PMD-mapped THP must be
 * dropped, by the way 6.12's stable line sends it (split, then the PTE
 * path), and its process's RSS high-water mark must keep the peak.
 */
#include "guestlib.h"

#include <sys/uio.h>
#include <sys/wait.h>

#define MEMCG "fltest-lazyfree"
#define SIZE (4UL << 20)
#define NPAGES (SIZE / PAGE_SIZE)

/* Page @pg holds exactly @seed's pattern. */
static int holds(const char *buf, size_t pg, uint64_t seed)
{
	const uint64_t *q = (const uint64_t *)(buf + pg * PAGE_SIZE);

	for (size_t w = 0; w < PAGE_SIZE / 8; w++)
		if (q[w] != pattern(pg, w, seed))
			return 0;
	return 1;
}

static void fill_page(char *buf, size_t pg, uint64_t seed)
{
	uint64_t *q = (uint64_t *)(buf + pg * PAGE_SIZE);

	for (size_t w = 0; w < PAGE_SIZE / 8; w++)
		q[w] = pattern(pg, w, seed);
}

/*
 * Re-dirty one page of every folio after MADV_FREE (first, middle or last
 * page, by turns); after reclaim it must hold what was written.
 */
static void test_redirty(int kb, const char *name)
{
	size_t per = kb / 4, lost = 0, wrong = 0;
	char *buf = map_aligned(SIZE, PMD_SIZE);

	folio_size(kb);
	if (kb == 2048)
		madvise(buf, SIZE, MADV_HUGEPAGE);
	fill_pages(buf, NPAGES, 1);
	if (madvise(buf, SIZE, MADV_FREE))
		die("MADV_FREE");
	for (size_t f = 0; f < NPAGES / per; f++) {
		size_t idx[] = { 0, per / 2, per - 1 };

		fill_page(buf, f * per + idx[f % 3], 2);
	}
	madvise(buf, SIZE, MADV_PAGEOUT);
	memcg_reclaim(MEMCG, SIZE);
	for (size_t f = 0; f < NPAGES / per; f++) {
		size_t idx[] = { 0, per / 2, per - 1 };

		for (size_t i = 0; i < per; i++) {
			size_t pg = f * per + i;

			if (i != idx[f % 3])
				wrong += !zero_or_pattern(buf, pg, 1);
			else if (!holds(buf, pg, 2) && lost++ < 4)
				ktap_diag("%s: page %zu lost its write", name,
					  pg);
		}
	}
	if (wrong)
		ktap_diag("%s: %zu clean pages neither zero nor their data",
			  name, wrong);
	munmap(buf, SIZE);
	ktap_result(!lost && !wrong, name);
}

#define PUTBACK_FOLIOS 16
#define PUTBACK_PAGES (PUTBACK_FOLIOS * 16)

/*
 * Lazy-free 64K folios, one page of each written again after MADV_FREE
 * (the sixth: a batch merges a later PTE's dirty bit into the first), and
 * with @clear_refs the process's soft-dirty bits cleared after that write
 * (clear_refs 4 write-protects the PTEs and clears soft-dirty, but keeps
 * the dirty bit). MADV_PAGEOUT finds each folio dirty when it clears its
 * PTEs, makes it swap-backed again and must put all 16 PTEs back. The
 * put-back path must be the one taken: every page still mapped, every
 * folio large and swap-backed, and pgactivate counting every page (the
 * failed unmap activates the folio; MADV_PAGEOUT ignores references). No
 * page may lose its data: the written one holds the new data, the others
 * the old (not zero: the folio was not discarded). With @clear_refs no
 * page may come back soft-dirty: none of the PTEs was.
 */
static void test_redirty_put_back(int clear_refs, const char *name)
{
	const size_t n = PUTBACK_PAGES, sz = n * PAGE_SIZE;
	char *buf = map_aligned(sz, PMD_SIZE);
	size_t kept = 0, large = 0, backed = 0, dirty = 0, wrong = 0;
	long act0, lazy0, act, lazy;
	int ok = 1;

	folio_size(64);
	fill_pages(buf, n, 31);
	if (madvise(buf, sz, MADV_FREE))
		die("MADV_FREE");
	for (size_t f = 0; f < PUTBACK_FOLIOS; f++)
		fill_page(buf, f * 16 + 5, 32);
	if (clear_refs)
		write_str("/proc/self/clear_refs", "4");
	act0 = proc_field("/proc/vmstat", "pgactivate");
	lazy0 = proc_field("/proc/vmstat", "pglazyfreed");
	if (madvise(buf, sz, MADV_PAGEOUT))
		die("MADV_PAGEOUT");
	act = proc_field("/proc/vmstat", "pgactivate") - act0;
	lazy = proc_field("/proc/vmstat", "pglazyfreed") - lazy0;
	for (size_t pg = 0; pg < n; pg++) {
		uint64_t e = pagemap_entry(buf + pg * PAGE_SIZE);

		kept += !!(e & PM_PRESENT);
		dirty += !!(e & PM_SOFT_DIRTY);
	}
	for (size_t f = 0; f < PUTBACK_FOLIOS; f++) {
		const char *head = buf + f * 65536;
		uint64_t flags = kpageflags_of(head);
		int whole = !!(flags & (1ULL << KPF_COMPOUND_HEAD));

		for (size_t i = 1; i < 16; i++)
			whole = whole && (kpageflags_of(head + i * PAGE_SIZE) &
					  (1ULL << KPF_COMPOUND_TAIL));
		large += whole;
		backed += !!(flags & (1ULL << KPF_SWAPBACKED));
	}
	ktap_diag("%s: after MADV_PAGEOUT: %zu of %zu pages mapped, %zu soft-dirty; %zu of %d folios large, %zu swap-backed; pgactivate +%ld, pglazyfreed +%ld",
		  name, kept, n, dirty, large, PUTBACK_FOLIOS, backed, act,
		  lazy);
	if (kept != n || large != PUTBACK_FOLIOS ||
	    backed != PUTBACK_FOLIOS || act < (long)n) {
		ktap_diag("%s: the PTEs of the redirtied folios were not put back",
			  name);
		ok = 0;
	}
	if (clear_refs && dirty) {
		ktap_diag("%s: %zu pages came back soft-dirty, none was", name,
			  dirty);
		ok = 0;
	}
	for (size_t pg = 0; pg < n; pg++) {
		int good = pg % 16 == 5 ? holds(buf, pg, 32) : holds(buf, pg, 31);

		if (!good && wrong++ < 4)
			ktap_diag("%s: page %zu does not hold its data", name, pg);
	}
	if (wrong)
		ok = 0;
	munmap(buf, sz);
	ktap_result(ok, name);
}

/*
 * The reproducer for the restore bug that made read-only PTEs writable:
 * one 64K folio, its first half MADV_DONTFORK, fork, MADV_DOFORK (the VMAs
 * merge, so one folio has writable and read-only PTEs), MADV_FREE, dirty
 * one byte, reclaim. Afterwards the parent writes everything; the child
 * must still see its own data.
 */
static void test_cow_after_failed_discard(void)
{
	const char *name = "cow_mixed_write_bits_after_reclaim";
	size_t sz = 64 * 1024, n = sz / PAGE_SIZE, half = sz / 2;
	char *buf = map_aligned(sz, sz);
	int ok = 1, st, go[2], done[2];
	pid_t pid;

	folio_size(64);
	fill_pages(buf, n, 3);
	if (madvise(buf, half, MADV_DONTFORK))
		die("MADV_DONTFORK");
	if (pipe(go) || pipe(done))
		die("pipe");
	pid = fork();
	if (pid == 0) {
		char c;
		size_t bad = 0;

		if (write(done[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(2);
		/* the child only has the second half; it must be unchanged */
		for (size_t pg = n / 2; pg < n; pg++)
			bad += !zero_or_pattern(buf, pg, 3);
		_exit(bad ? 1 : 0);
	}
	char c;

	if (read(done[0], &c, 1) != 1)
		die("read");
	madvise(buf, half, MADV_DOFORK);
	if (madvise(buf, sz, MADV_FREE))
		die("MADV_FREE");
	buf[0] = 1;			/* dirty one byte */
	memcg_reclaim(MEMCG, sz * 4);
	madvise(buf, sz, MADV_PAGEOUT);
	for (size_t pg = 0; pg < n; pg++)
		fill_page(buf, pg, 4);	/* the parent's writes must CoW */
	if (write(go[1], "g", 1) != 1)
		die("write");
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		ktap_diag("%s: the child saw the parent's writes", name);
		ok = 0;
	}
	ok = all_verified(buf, n, 4, name) && ok;
	munmap(buf, sz);
	ktap_result(ok, name);
}

/*
 * 64K folios moved by mremap to 32K past a PMD boundary (each folio then
 * straddles two page tables), plus one folio split between two VMAs by
 * a VMA split. MADV_FREE, reclaim, and every page must be zero or its data
 * (re-dirtied pages: their new data), with the guard neighbours intact.
 */
static void test_straddle(void)
{
	const char *name = "straddle_pmd_and_vma_boundaries";
	size_t sz = 1UL << 20, n = sz / PAGE_SIZE, wrong = 0;
	char *src = map_aligned(sz, PMD_SIZE);
	char *area = map_aligned(4 * PMD_SIZE, PMD_SIZE);
	char *dst = area + PMD_SIZE - sz / 2 - 32 * 1024;
	char *buf;

	folio_size(64);
	fill_pages(src, n, 5);
	buf = mremap(src, sz, sz, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	if (buf == MAP_FAILED)
		die("mremap");
	/*
	 * Split the folio under pages 56..71 between two VMAs: a different
	 * VMA flag on 56..63 keeps them from merging back.
	 */
	if (madvise(buf + 56 * PAGE_SIZE, 8 * PAGE_SIZE, MADV_NOHUGEPAGE))
		die("MADV_NOHUGEPAGE");
	madvise(buf, sz, MADV_FREE);
	for (size_t pg = 0; pg < n; pg += 5)
		fill_page(buf, pg, 6);	/* some re-dirtied */
	madvise(buf, sz, MADV_PAGEOUT);
	memcg_reclaim(MEMCG, 4 * sz);
	for (size_t pg = 0; pg < n; pg++) {
		int good = pg % 5 == 0 ? holds(buf, pg, 6) :
			   zero_or_pattern(buf, pg, 5);

		if (!good && wrong++ < 4)
			ktap_diag("%s: page %zu wrong", name, pg);
	}
	munmap(area, 4 * PMD_SIZE);
	ktap_result(!wrong, name);
}

/*
 * vmsplice() the pages of lazy-free 64K folios into a pipe: the pipe holds
 * a reference to each page, so reclaim must not drop them (the process and
 * the pipe would then see different pages). While the pipe holds them they
 * must read their data in the process, and the pipe must return it too.
 */
static void test_referenced_not_dropped(void)
{
	const char *name = "referenced_lazyfree_folio_not_dropped";
	size_t sz = 16 * 64 * 1024, n = sz / PAGE_SIZE, bad = 0;
	long pswp0 = proc_field("/proc/vmstat", "pswpout");
	char *buf = map_aligned(sz, PMD_SIZE), *back = malloc(sz);
	struct iovec iov = { .iov_len = sz };
	size_t got = 0;
	int p[2];

	folio_size(64);
	fill_pages(buf, n, 7);
	if (pipe(p) || fcntl(p[1], F_SETPIPE_SZ, (int)sz) < (int)sz || !back)
		die("pipe");
	if (madvise(buf, sz, MADV_FREE))
		die("MADV_FREE");
	iov.iov_base = buf;
	if (vmsplice(p[1], &iov, 1, 0) != (ssize_t)sz)
		die("vmsplice");
	madvise(buf, sz, MADV_PAGEOUT);
	memcg_reclaim(MEMCG, 4 * sz);
	for (size_t pg = 0; pg < n; pg++)
		if (!holds(buf, pg, 7) && bad++ < 4)
			ktap_diag("%s: page %zu dropped while referenced", name,
				  pg);
	while (got < sz) {
		ssize_t r = read(p[0], back + got, sz - got);

		if (r <= 0)
			die("read pipe");
		got += r;
	}
	if (!all_verified(back, n, 7, name))
		bad++;
	/* unreferenced now: dropped (still lazy-free) or swapped, both fine */
	madvise(buf, sz, MADV_PAGEOUT);
	for (size_t pg = 0; pg < n; pg++)
		if (!zero_or_pattern(buf, pg, 7) && bad++ < 4)
			ktap_diag("%s: page %zu wrong after the pipe drained",
				  name, pg);
	ktap_diag("%s: %ld pages swapped out", name,
		  proc_field("/proc/vmstat", "pswpout") - pswp0);
	close(p[0]);
	close(p[1]);
	free(back);
	munmap(buf, sz);
	ktap_result(!bad, name);
}

/* The kB of @buf's mapping that are PMD-mapped THPs (smaps AnonHugePages). */
static long pmd_mapped_kb(const void *buf)
{
	unsigned long want = (unsigned long)buf, lo, hi;
	char line[256];
	long kb = -1;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = lo <= want && want < hi;
			continue;
		}
		if (in && !strncmp(line, "AnonHugePages:", 14)) {
			kb = atol(line + 14);
			break;
		}
	}
	if (f)
		fclose(f);
	return kb;
}

/*
 * @sz bytes at @buf, PMD-aligned, faulted in as PMD-mapped THPs filled
 * with @seed's pattern; false (and the case skipped) if the kernel could
 * not give THPs, which is no verdict on the path under test.
 */
static int fill_pmd_thps(const char *name, char *buf, size_t sz,
			 uint64_t seed)
{
	long kb;

	folio_size(2048);
	madvise(buf, sz, MADV_HUGEPAGE);
	fill_pages(buf, sz / PAGE_SIZE, seed);
	kb = pmd_mapped_kb(buf);
	if (kb == (long)(sz >> 10))
		return 1;
	ktap_diag("%s: %ld of %zu kB PMD-mapped", name, kb, sz >> 10);
	ktap_skip(name, "no PMD-mapped THPs to start with");
	return 0;
}

/*
 * A clean lazy-free PMD-mapped THP: reclaim drops all of it (pglazyfreed
 * grows by 512) and it reads back as zeros.
 */
static void test_clean_pmd_dropped(void)
{
	const char *name = "clean_pmd_lazyfree_thp_dropped";
	long lazy0 = proc_field("/proc/vmstat", "pglazyfreed");
	char *buf = map_aligned(PMD_SIZE, PMD_SIZE);
	size_t n = PMD_SIZE / PAGE_SIZE, zero = 0;
	int ok = 1;

	if (!fill_pmd_thps(name, buf, PMD_SIZE, 8))
		goto out;
	if (madvise(buf, PMD_SIZE, MADV_FREE))
		die("MADV_FREE");
	madvise(buf, PMD_SIZE, MADV_PAGEOUT);
	if (proc_field("/proc/vmstat", "pglazyfreed") - lazy0 < (long)n) {
		ktap_diag("%s: pglazyfreed grew by %ld, not %zu", name,
			  proc_field("/proc/vmstat", "pglazyfreed") - lazy0, n);
		ok = 0;
	}
	for (size_t pg = 0; pg < n; pg++) {
		const uint64_t *q = (const uint64_t *)(buf + pg * PAGE_SIZE);

		zero += q[0] == 0 && q[511] == 0;
		ok &= zero_or_pattern(buf, pg, 8);
	}
	if (zero != n) {
		ktap_diag("%s: %zu of %zu pages read back as zeros", name, zero,
			  n);
		ok = 0;
	}
	ktap_result(ok, name);
out:
	munmap(buf, PMD_SIZE);
}

/*
 * The path of the case above: since 6.12.117 ("mm/rmap: don't discard
 * lazyfree THPs at PMD level") reclaim splits the PMD (thp_split_pmd grows
 * by one) and unmaps the PTEs; a PMD-level discard drops it unsplit. Kept
 * apart from the outcome, which both paths give.
 */
/* Not inlined: gcc then warns of the harness's setjmp clobbering it. */
static __attribute__((noinline)) void test_clean_pmd_split(void)
{
	const char *name = "clean_pmd_lazyfree_thp_split_before_unmap";
	long split0 = proc_field("/proc/vmstat", "thp_split_pmd");
	char *buf = map_aligned(PMD_SIZE, PMD_SIZE);
	long split;

	if (!fill_pmd_thps(name, buf, PMD_SIZE, 9))
		goto out;
	if (madvise(buf, PMD_SIZE, MADV_FREE))
		die("MADV_FREE");
	madvise(buf, PMD_SIZE, MADV_PAGEOUT);
	split = proc_field("/proc/vmstat", "thp_split_pmd") - split0;
	if (split != 1)
		ktap_diag("%s: thp_split_pmd grew by %ld, not 1: the PMD was not split before the unmap",
			  name, split);
	ktap_result(split == 1 && pmd_mapped_kb(buf) == 0, name);
out:
	munmap(buf, PMD_SIZE);
}

/*
 * Reclaim that lowers a process's RSS must first record the RSS it lowers
 * from (update_hiwater_rss()), as the zap, munmap, MADV_FREE and
 * migration paths do; else VmHWM and getrusage()'s ru_maxrss under-report
 * the peak. A PMD-level discard of a lazy-free THP lowered RSS by 2 MiB a
 * THP without it.
 *
 * MADV_FREE records the peak of its own moment, so the peak is made after
 * it: MADV_FREE region A (16 MiB of THPs), then fill region B (16 MiB), so
 * RSS peaks with both; reclaim drops A; VmHWM must still hold A + B.
 * VmRSS is an exact sum, but update_hiwater_rss() reads the per-CPU RSS
 * counters' approximate total, which may lag by up to a batch
 * (max(32, 2 * CPUs) pages) per CPU: that is the slack allowed, far below
 * the 16 MiB a missed update loses. The test stays on one CPU so that its
 * own counts gather in one CPU's batch. B is verified byte by byte.
 */
static void test_rss_peak_kept(void)
{
	const char *name = "pmd_lazyfree_reclaim_keeps_rss_peak";
	const size_t sz = 16UL << 20, n = sz / PAGE_SIZE;
	const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	const long slack_kb = cpus * (cpus * 2 > 32 ? cpus * 2 : 32) *
			      (PAGE_SIZE >> 10);
	long lazy0 = proc_field("/proc/vmstat", "pglazyfreed");
	long split0 = proc_field("/proc/vmstat", "thp_split_pmd");
	char *a = map_aligned(sz, PMD_SIZE), *b = map_aligned(sz, PMD_SIZE);
	long peak_kb, hwm_kb, rss_kb, lazy, split;
	size_t not_zero = 0;
	int ok = 1;

	pin_to_this_cpu();
	if (!fill_pmd_thps(name, a, sz, 21))
		goto out;
	if (madvise(a, sz, MADV_FREE))
		die("MADV_FREE");
	madvise(b, sz, MADV_HUGEPAGE);
	fill_pages(b, n, 22);
	peak_kb = proc_field("/proc/self/status", "VmRSS");
	madvise(a, sz, MADV_PAGEOUT);
	rss_kb = proc_field("/proc/self/status", "VmRSS");
	hwm_kb = proc_field("/proc/self/status", "VmHWM");
	lazy = proc_field("/proc/vmstat", "pglazyfreed") - lazy0;
	split = proc_field("/proc/vmstat", "thp_split_pmd") - split0;
	for (size_t pg = 0; pg < n; pg++)
		not_zero += !zero_or_pattern(a, pg, 21) ||
			    *(const uint64_t *)(a + pg * PAGE_SIZE) != 0;
	ktap_diag("%s: RSS peak %ld kB, after reclaim %ld kB, VmHWM %ld kB (slack %ld kB); pglazyfreed +%ld, thp_split_pmd +%ld",
		  name, peak_kb, rss_kb, hwm_kb, slack_kb, lazy, split);
	if (lazy < (long)n || not_zero) {
		ktap_diag("%s: A not dropped: pglazyfreed +%ld of %zu, %zu pages not zero",
			  name, lazy, n, not_zero);
		ok = 0;
	}
	if (hwm_kb < peak_kb - slack_kb) {
		ktap_diag("%s: VmHWM %ld kB is below the RSS peak %ld kB: reclaim lowered RSS without update_hiwater_rss()",
			  name, hwm_kb, peak_kb);
		ok = 0;
	}
	ok = all_verified(b, n, 22, name) && ok;
	ktap_result(ok, name);
out:
	munmap(a, sz);
	munmap(b, sz);
}

FL_FIXTURE(lazyfree)

FL_TEST(lazyfree, redirtied_page_survives_64k, 300)
{
	test_redirty(64, "redirtied_page_survives_64k");
}
FL_TEST(lazyfree, redirtied_page_survives_pmd, 300)
{
	test_redirty(2048, "redirtied_page_survives_pmd");
}
FL_TEST(lazyfree, cow_mixed_write_bits_after_reclaim, 300)
{
	test_cow_after_failed_discard();
}
FL_TEST(lazyfree, straddle_pmd_and_vma_boundaries, 300) { test_straddle(); }
FL_TEST(lazyfree, referenced_lazyfree_folio_not_dropped, 300)
{
	test_referenced_not_dropped();
}
FL_TEST(lazyfree, clean_pmd_lazyfree_thp_dropped, 300)
{
	test_clean_pmd_dropped();
}
FL_TEST(lazyfree, clean_pmd_lazyfree_thp_split_before_unmap, 300)
{
	test_clean_pmd_split();
}
FL_TEST(lazyfree, pmd_lazyfree_reclaim_keeps_rss_peak, 300)
{
	test_rss_peak_kept();
}
FL_TEST(lazyfree, redirtied_64k_put_back_whole, 300)
{
	test_redirty_put_back(0, "redirtied_64k_put_back_whole");
}
FL_TEST(lazyfree, redirtied_64k_put_back_not_soft_dirty, 300)
{
	test_redirty_put_back(1, "redirtied_64k_put_back_not_soft_dirty");
}

int main(int argc, char **argv)
{
	memcg_enter(MEMCG);
	return test_harness_run(argc, argv);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * lazyfree: MADV_FREE'd (lazy-free) anonymous memory through reclaim, the
 * path the batched lazy-free unmap changes. A page written after MADV_FREE
 * must survive; copy-on-write must hold when a lazy-free folio mixes
 * writable and read-only PTEs; folios that straddle a PMD or a VMA
 * boundary must reclaim without touching their neighbours.
 */
#include "guestlib.h"

#include <sys/wait.h>

#define MEMCG "fltest-lazyfree"
#define SIZE (4UL << 20)
#define NPAGES (SIZE / PAGE_SIZE)

/* Page @pg may be zero (discarded) or hold @seed's pattern, nothing else. */
static int zero_or_pattern(const char *buf, size_t pg, uint64_t seed)
{
	const uint64_t *q = (const uint64_t *)(buf + pg * PAGE_SIZE);
	int zero = 1, pat = 1;

	for (size_t w = 0; w < PAGE_SIZE / 8; w++) {
		zero &= q[w] == 0;
		pat &= q[w] == pattern(pg, w, seed);
	}
	return zero || pat;
}

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

int main(void)
{
	memcg_enter(MEMCG);
	ktap_plan(4);
	test_redirty(64, "redirtied_page_survives_64k");
	test_redirty(2048, "redirtied_page_survives_pmd");
	test_cow_after_failed_discard();
	test_straddle();
	return ktap_finish();
}

// SPDX-License-Identifier: GPL-2.0
/*
 * thpfault FILL_PCT KEEP_EVERY THP_MB: THP fault latency under
 * fragmentation, what mmtests' thpchallenge measures (written here, not
 * taken from it; what it stands for is in workload.py).
 *
 * 1. Fill: FILL_PCT% of MemFree is mapped and populated in base
 *    pages (MADV_NOHUGEPAGE, MADV_POPULATE_WRITE), one thread a CPU.
 * 2. Fragment: every KEEP_EVERY-th page of it is kept, and so is the
 *    first page met in each PMD-sized block of physical memory (its frame
 *    from /proc/self/pagemap); the rest is given back (MADV_DONTNEED).
 *    Every block the filler held then holds a movable page, so a THP
 *    there needs compaction to migrate it. Keeping pages by their
 *    virtual address alone left whole blocks free (the allocator does
 *    not hand out frames in address order: 126-142 MiB of 256 free in
 *    THP-sized blocks in 6.12 boots). /proc/buddyinfo is then read: how
 *    much is free, and how much of that in blocks of a THP's size or
 *    more.
 * 3. Fault: THP_MB of MADV_HUGEPAGE memory, PMD-aligned, is faulted one
 *    PMD-sized block at a time (one write at its start), each fault timed
 *    alone; pagemap and kpageflags then say whether it got a THP
 *    (fault-huge) or fell back to a base page (fault-base).
 *
 * Records: fault_huge_us_* and fault_base_us_* (fllatency.h; a kind no
 * fault had is left out), faults, huge_faults, fill_mb, kept_mb, free_mb
 * and free_huge_mb (free, and free in blocks of order >= the PMD's,
 * after fragmenting, before the faults).
 *
 * Counting window FL_WIN_THPFAULT: the faults (step 3) alone, none of the
 * filler's work: from the first block's fault to the end of the last
 * one's probe. The probes (two pread()s a block) are in it, so the host
 * takes what a fault costs from handle_mm_fault's own count, entered once
 * a fault; for that count to hold the blocks' faults alone, what the loop
 * touches besides them (its arrays, the clock's vDSO, the probe's code
 * and stack) is touched once before the window opens. Without the counter
 * the marks are one no-op instruction each, outside the timed faults.
 */
#include "fllatency.h"
#include "flthp.h"
#include "fltasks.h"
#include "fl_windows.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define PMD_ORDER 9	/* 2 MiB of 4 KiB pages */

static char *filler;
static size_t filler_pages;
static int nthreads;

static long meminfo_kb(const char *key)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		die("/proc/meminfo");
	while (kb < 0 && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)) &&
		    line[strlen(key)] == ':')
			kb = atol(line + strlen(key) + 1);
	fclose(f);
	return kb;
}

/* Free pages in /proc/buddyinfo, all and in blocks of order >= min. */
static void buddy_free(unsigned long *all, unsigned long *big, int min)
{
	char line[512], *p;
	FILE *f = fopen("/proc/buddyinfo", "r");

	if (!f)
		die("/proc/buddyinfo");
	*all = *big = 0;
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, "zone");
		if (!p)
			continue;
		p += 4;
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')	/* the zone's name */
			p++;
		for (int order = 0;; order++) {
			char *end;
			unsigned long n = strtoul(p, &end, 10);

			if (end == p)
				break;
			*all += n << order;
			if (order >= min)
				*big += n << order;
			p = end;
		}
	}
	fclose(f);
}

static void populate_part(int id, void *arg)
{
	size_t part = filler_pages / nthreads, from = id * part;
	size_t n = id == nthreads - 1 ? filler_pages - from : part;

	(void)arg;
	if (madvise(filler + from * PAGE_SIZE, n * PAGE_SIZE,
		    MADV_POPULATE_WRITE))
		die("MADV_POPULATE_WRITE");
}

/* Filler pages [from, to) given back. */
static void give_back(size_t from, size_t to)
{
	if (to > from && madvise(filler + from * PAGE_SIZE,
				 (to - from) * PAGE_SIZE, MADV_DONTNEED))
		die("MADV_DONTNEED");
}

/* Physical PMD blocks tracked: 2 TiB of frames, a byte each. */
#define MAX_PMD_BLOCKS (1UL << 20)
#define PM_PRESENT (1ULL << 63)
#define PM_PFN ((1ULL << 55) - 1)

/*
 * Step 2: keep every KEEP-th filler page and the first met in each
 * physical PMD block, give back the rest; the pages kept.
 */
static size_t fragment(size_t keep)
{
	unsigned char *seen = calloc(MAX_PMD_BLOCKS, 1);
	int pagemap = open("/proc/self/pagemap", O_RDONLY);
	size_t kept = 0, from = 0, frames = 0;
	uint64_t ent[512];

	if (!seen || pagemap < 0)
		die("fragment: calloc or open pagemap");
	for (size_t pg = 0; pg < filler_pages; pg += 512) {
		size_t n = filler_pages - pg < 512 ? filler_pages - pg : 512;
		off_t at = (off_t)((uintptr_t)(filler + pg * PAGE_SIZE) /
				   PAGE_SIZE * sizeof(uint64_t));

		if (pread(pagemap, ent, n * sizeof(uint64_t), at) !=
		    (ssize_t)(n * sizeof(uint64_t)))
			die("pread pagemap");
		for (size_t i = 0; i < n; i++) {
			uint64_t pfn = ent[i] & PM_PFN;
			size_t block = pfn >> PMD_ORDER;
			int first = (ent[i] & PM_PRESENT) && pfn &&
				    block < MAX_PMD_BLOCKS && !seen[block];

			frames += pfn != 0;
			if (!first && (pg + i) % keep)
				continue;	/* given back with its run */
			if (block < MAX_PMD_BLOCKS)
				seen[block] = 1;
			give_back(from, pg + i);
			from = pg + i + 1;
			kept++;
		}
	}
	give_back(from, filler_pages);
	close(pagemap);
	free(seen);
	if (!frames)
		invalid("pagemap gives no page frames (not root?): the filler "
			"kept pages by address only");
	return kept;
}

int main(int argc, char **argv)
{
	unsigned long free_all, free_big;
	size_t keep, kept, blocks, nhuge = 0, nbase = 0;
	double *huge_us, *base_us;
	struct thp_probe probe;
	char *thp;

	if (argc != 4 || atoi(argv[1]) < 1 || atoi(argv[1]) > 99 ||
	    atol(argv[2]) < 2 || atol(argv[3]) < 2) {
		fprintf(stderr, "usage: thpfault FILL_PCT KEEP_EVERY THP_MB\n");
		return 2;
	}
	if (access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK)) {
		invalid("no THP in this kernel (transparent_hugepage)");
		return 1;
	}
	keep = atol(argv[2]);
	blocks = ((size_t)atol(argv[3]) << 20) / PMD_SIZE;
	filler_pages = (size_t)meminfo_kb("MemFree") * atoi(argv[1]) /
		     100 / (PAGE_SIZE / 1024);
	nthreads = sysconf(_SC_NPROCESSORS_ONLN);
	if (nthreads < 1 || nthreads > FL_MAX_TASKS)
		nthreads = 1;

	filler = mmap(NULL, filler_pages * PAGE_SIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (filler == MAP_FAILED)
		die("mmap filler");
	if (madvise(filler, filler_pages * PAGE_SIZE, MADV_NOHUGEPAGE))
		die("MADV_NOHUGEPAGE");
	fl_wait_tasks(fl_start_tasks(nthreads, 1, 1, populate_part, NULL),
		      nthreads, 1);
	kept = fragment(keep);
	buddy_free(&free_all, &free_big, PMD_ORDER);
	metric("fill_mb", (double)filler_pages * PAGE_SIZE / (1 << 20));
	metric("kept_mb", (double)kept * PAGE_SIZE / (1 << 20));
	metric("free_mb", (double)free_all * PAGE_SIZE / (1 << 20));
	metric("free_huge_mb", (double)free_big * PAGE_SIZE / (1 << 20));

	huge_us = calloc(blocks, sizeof(double));
	base_us = calloc(blocks, sizeof(double));
	if (!huge_us || !base_us)
		die("calloc");
	thp = map_aligned(blocks * PMD_SIZE, PMD_SIZE);
	if (madvise(thp, blocks * PMD_SIZE, MADV_HUGEPAGE))
		die("MADV_HUGEPAGE");
	probe = thp_probe_open();
	/* faulted in now, not in the window: a first write to the arrays
	 * (not zero, which a compiler may drop after calloc), and the
	 * loop's clock and probe once (the filler's first page is kept) */
	memset(huge_us, 0xff, blocks * sizeof(double));
	memset(base_us, 0xff, blocks * sizeof(double));
	now_ms();
	page_is_thp(&probe, filler);
	FL_MARK_BEGIN(FL_WIN_THPFAULT);
	for (size_t i = 0; i < blocks; i++) {
		volatile char *at = thp + i * PMD_SIZE;
		double t0 = now_ms(), us;

		*at = 1;
		us = (now_ms() - t0) * 1e3;
		if (page_is_thp(&probe, (const void *)at))
			huge_us[nhuge++] = us;
		else
			base_us[nbase++] = us;
	}
	FL_MARK_END(FL_WIN_THPFAULT);
	thp_probe_close(&probe);
	metric("faults", blocks);
	metric("huge_faults", nhuge);
	report_latencies("fault_huge_us", huge_us, nhuge);
	report_latencies("fault_base_us", base_us, nbase);
	return 0;
}

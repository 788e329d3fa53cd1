// SPDX-License-Identifier: GPL-2.0
/*
 * khugepaged: what khugepaged and MADV_COLLAPSE do with lazy-free memory.
 * A clean MADV_FREE'd range is not collapsed by khugepaged; one whose pages
 * were written again is; MADV_COLLAPSE collapses either. Data is verified
 * after every collapse.
 *
 * 6.12's MADV_FREE also clears the young bits, so an untouched lazy-free
 * range already fails khugepaged's referenced check. A range read again
 * after MADV_FREE is young yet clean: only a kernel that skips lazy-free
 * folios (it has the page_lazyfree scan status) leaves it alone, so that
 * test is skipped elsewhere. VM_DROPPABLE memory is always lazy-free and
 * is collapsed by every kernel.
 *
 * A range MADV_FREE'd after khugepaged scanned it, while the collapse
 * waits for the mmap lock, must not be collapsed either: the collapse
 * checks again when it isolates the pages. That window is microseconds
 * wide, so the test needs tests/kernel/collapse-window.patch and
 * foliolab_collapse_window=MS on the kernel's command line to hold it
 * open; it is skipped without them.
 */
#include "guestlib.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MAP_DROPPABLE
#define MAP_DROPPABLE 0x08
#endif
#define SCAN_FORMAT TRACING "events/huge_memory/mm_khugepaged_scan_pmd/format"
#define COLLAPSE_EVENT TRACING "events/huge_memory/mm_collapse_huge_page/enable"
#define WINDOW_ARG "foliolab_collapse_window="

#define KHP THP "khugepaged/"
#define SIZE (4UL << 20)
#define NPAGES (SIZE / PAGE_SIZE)


/* Pages of [buf, buf + SIZE) whose /proc/kpageflags have bit @kpf set. */
static size_t pages_with(const char *buf, int kpf)
{
	size_t n = 0;

	for (size_t pg = 0; pg < NPAGES; pg++)
		n += !!(kpageflags_of(buf + pg * PAGE_SIZE) & (1ULL << kpf));
	return n;
}

/* Pages of [buf, buf + SIZE) that are part of a THP. */
static size_t thp_pages(const char *buf)
{
	return pages_with(buf, KPF_THP);
}

static int all_collapsed(const char *buf, const char *name)
{
	size_t thp = thp_pages(buf);

	if (thp != NPAGES)
		ktap_diag("%s: only %zu of %lu pages collapsed", name, thp,
			  NPAGES);
	return thp == NPAGES;
}

/* Let khugepaged make two full passes over every mm. */
static int two_full_scans(void)
{
	long start = read_long(KHP "full_scans");

	for (int i = 0; i < 1200; i++) {
		if (read_long(KHP "full_scans") >= start + 2)
			return 1;
		usleep(50 * 1000);
	}
	return 0;
}

/* Does this kernel's khugepaged know the page_lazyfree scan status? */
static int kernel_skips_lazyfree(void)
{
	char line[4096];
	FILE *f = fopen(SCAN_FORMAT, "r");
	int found = 0;

	if (!f)
		die(SCAN_FORMAT);
	while (!found && fgets(line, sizeof(line), f))
		found = !!strstr(line, "\"page_lazyfree\"");
	fclose(f);
	return found;
}

/*
 * Base pages, then offered to khugepaged, then MADV_FREE'd. With @reread,
 * every page is read again afterwards.
 */
static char *lazyfree_region_of(int type, uint64_t seed, int reread)
{
	char *buf = map_aligned_type(SIZE, PMD_SIZE, type);

	if (madvise(buf, SIZE, MADV_NOHUGEPAGE))
		die("MADV_NOHUGEPAGE");
	fill_pages(buf, NPAGES, seed);
	if (madvise(buf, SIZE, MADV_HUGEPAGE))
		die("MADV_HUGEPAGE");
	if (madvise(buf, SIZE, MADV_FREE))
		die("MADV_FREE");
	if (reread)
		read_pages(buf, NPAGES);	/* young PTEs, still clean */
	return buf;
}

static char *lazyfree_region(uint64_t seed)
{
	return lazyfree_region_of(MAP_PRIVATE, seed, 0);
}

/*
 * A lazy-free range (read again after MADV_FREE if @reread) that khugepaged
 * must leave alone through @scans pairs of full scans.
 */
static void expect_no_collapse(const char *name, uint64_t seed, int reread,
			       int scans)
{
	char *buf = lazyfree_region_of(MAP_PRIVATE, seed, reread);
	/* swap-backed pages are not lazy-free */
	size_t thp, backed = pages_with(buf, KPF_SWAPBACKED);
	int ok = 1;

	for (int i = 0; i < scans; i++)
		ok = two_full_scans() && ok;
	if (!ok)
		ktap_diag("%s: khugepaged made too few full scans", name);
	thp = thp_pages(buf);
	if (thp) {
		/* a page MADV_FREE skipped (e.g. locked by reclaim) stays backed */
		ktap_diag("%s: %zu pages were collapsed; %zu were still "
			  "swap-backed after MADV_FREE", name, thp, backed);
		ok = 0;
	}
	munmap(buf, SIZE);
	ktap_result(ok, name);
}

static void test_clean_lazyfree(void)
{
	expect_no_collapse("khugepaged_skips_clean_lazyfree", 11, 0, 1);
}

static void test_young_clean_lazyfree(void)
{
	const char *name = "khugepaged_skips_young_clean_lazyfree";

	if (!kernel_skips_lazyfree()) {
		ktap_skip(name, "kernel has no page_lazyfree scan status");
		return;
	}
	expect_no_collapse(name, 15, 1, 2);
}

/* Droppable folios are lazy-free by design; khugepaged still collapses. */
static void test_droppable(void)
{
	const char *name = "khugepaged_collapses_droppable";
	char *buf = lazyfree_region_of(MAP_DROPPABLE, 16, 1);
	int ok = two_full_scans() && two_full_scans();

	ok = all_collapsed(buf, name) && ok;
	/* nothing reclaims here, so nothing was dropped */
	ok = all_verified(buf, NPAGES, 16, name) && ok;
	munmap(buf, SIZE);
	ktap_result(ok, name);
}

static void test_redirtied(void)
{
	const char *name = "khugepaged_collapses_redirtied_lazyfree";
	char *buf = lazyfree_region(12);
	int ok;

	fill_pages(buf, NPAGES, 13);	/* every PTE dirty again */
	ok = two_full_scans() && two_full_scans();
	ok = all_collapsed(buf, name) && ok;
	ok = all_verified(buf, NPAGES, 13, name) && ok;
	munmap(buf, SIZE);
	ktap_result(ok, name);
}

static void test_madv_collapse(void)
{
	const char *name = "madv_collapse_collapses_lazyfree";
	char *buf = lazyfree_region(14);
	int ok = 1;

	if (madvise(buf, SIZE, MADV_COLLAPSE)) {
		ktap_diag("%s: MADV_COLLAPSE: %s", name, strerror(errno));
		ok = 0;
	}
	ok = all_collapsed(buf, name) && ok;
	/* the data was never discarded, so it is all still there */
	ok = all_verified(buf, NPAGES, 14, name) && ok;
	munmap(buf, SIZE);
	ktap_result(ok, name);
}

/* Does the command line hold a collapse open after the scan (test only)? */
static int collapse_window_open(void)
{
	char line[4096] = "";
	FILE *f = fopen("/proc/cmdline", "r");

	if (!f)
		die("/proc/cmdline");
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	return !!strstr(line, WINDOW_ARG);
}

/* Collapses that failed at isolation with page_lazyfree since the reset. */
static long collapses_refused_lazyfree(void)
{
	return trace_lines_with("mm_collapse_huge_page:",
				"status=page_lazyfree");
}

/* Wait until khugepaged has allocated a THP for a collapse since @before. */
static int collapse_allocated(long before)
{
	for (int i = 0; i < 1200; i++) {
		if (proc_field("/proc/vmstat", "thp_collapse_alloc") > before)
			return 1;
		usleep(5 * 1000);
	}
	return 0;
}

/*
 * Written base pages that khugepaged scans and decides to collapse; in the
 * window between that scan and the collapse the range is MADV_FREE'd and
 * read again (young and clean: vanilla's referenced check would pass). The
 * collapse must stop at isolation with page_lazyfree, and the range must
 * still hold its data.
 */
static void test_lazyfree_after_scan(void)
{
	const char *name = "khugepaged_rechecks_lazyfree_at_collapse";
	long none = read_long(KHP "max_ptes_none"), before, refused;
	char *buf, arg[16];
	int ok = 1;

	if (!kernel_skips_lazyfree() || !collapse_window_open()) {
		/* the window comes from tests/kernel/collapse-window.patch */
		ktap_skip(name, "needs page_lazyfree and " WINDOW_ARG "MS");
		return;
	}
	/* only a fully written PMD range is a candidate: ours */
	write_str(KHP "max_ptes_none", "0");
	buf = map_aligned_type(SIZE, PMD_SIZE, MAP_PRIVATE);
	if (madvise(buf, SIZE, MADV_NOHUGEPAGE))
		die("MADV_NOHUGEPAGE");
	fill_pages(buf, NPAGES, 17);
	write_str(TRACING "trace", "");
	write_str(COLLAPSE_EVENT, "1");
	before = proc_field("/proc/vmstat", "thp_collapse_alloc");
	if (madvise(buf, SIZE, MADV_HUGEPAGE))
		die("MADV_HUGEPAGE");
	if (!collapse_allocated(before)) {
		ktap_diag("%s: khugepaged never set out to collapse", name);
		ok = 0;
	}
	/* inside the window: the scan saw written, swap-backed pages */
	if (madvise(buf, SIZE, MADV_FREE))
		die("MADV_FREE");
	read_pages(buf, NPAGES);
	ok = two_full_scans() && ok;
	write_str(COLLAPSE_EVENT, "0");
	refused = collapses_refused_lazyfree();
	if (refused < 1) {
		ktap_diag("%s: no collapse was refused at isolation (%ld)",
			  name, refused);
		ok = 0;
	}
	if (thp_pages(buf)) {
		ktap_diag("%s: %zu pages were collapsed", name, thp_pages(buf));
		ok = 0;
	}
	/* nothing reclaims here, so nothing was dropped */
	ok = all_verified(buf, NPAGES, 17, name) && ok;
	snprintf(arg, sizeof(arg), "%ld", none);
	write_str(KHP "max_ptes_none", arg);
	munmap(buf, SIZE);
	ktap_result(ok, name);
}

FL_FIXTURE(khugepaged)

FL_TEST(khugepaged, khugepaged_skips_clean_lazyfree, 300)
{
	test_clean_lazyfree();
}
FL_TEST(khugepaged, khugepaged_skips_young_clean_lazyfree, 300)
{
	test_young_clean_lazyfree();
}
FL_TEST(khugepaged, khugepaged_collapses_droppable, 300) { test_droppable(); }
FL_TEST(khugepaged, khugepaged_collapses_redirtied_lazyfree, 300)
{
	test_redirtied();
}
FL_TEST(khugepaged, madv_collapse_collapses_lazyfree, 300)
{
	test_madv_collapse();
}
FL_TEST(khugepaged, khugepaged_rechecks_lazyfree_at_collapse, 300)
{
	test_lazyfree_after_scan();
}

/* test_harness_run() exits: restored by fl_at_exit() */
static void slow_khugepaged_again(void)
{
	write_str(KHP "scan_sleep_millisecs", "10000");
}

int main(int argc, char **argv)
{
	folio_size(2048);
	write_str(THP "enabled", "always");
	write_str(KHP "scan_sleep_millisecs", "10");
	write_str(KHP "alloc_sleep_millisecs", "10");
	write_str(KHP "pages_to_scan", "8192");
	fl_at_exit(slow_khugepaged_again);
	return test_harness_run(argc, argv);
}

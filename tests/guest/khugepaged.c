// SPDX-License-Identifier: GPL-2.0
/*
 * khugepaged: what khugepaged and MADV_COLLAPSE do with lazy-free memory.
 * A clean MADV_FREE'd range is not collapsed by khugepaged; one whose pages
 * were written again is; MADV_COLLAPSE collapses either. Data is verified
 * after every collapse.
 */
#include "guestlib.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#define KHP THP "khugepaged/"
#define SIZE (4UL << 20)
#define NPAGES (SIZE / PAGE_SIZE)

/* Pages of [buf, buf + SIZE) that are part of a THP. */
static size_t thp_pages(const char *buf)
{
	size_t n = 0;

	for (size_t pg = 0; pg < NPAGES; pg++)
		n += !!(kpageflags_of(buf + pg * PAGE_SIZE) & (1ULL << KPF_THP));
	return n;
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

/* Base pages, then offered to khugepaged, then MADV_FREE'd. */
static char *lazyfree_region(uint64_t seed)
{
	char *buf = map_aligned(SIZE, PMD_SIZE);

	if (madvise(buf, SIZE, MADV_NOHUGEPAGE))
		die("MADV_NOHUGEPAGE");
	fill_pages(buf, NPAGES, seed);
	if (madvise(buf, SIZE, MADV_HUGEPAGE))
		die("MADV_HUGEPAGE");
	if (madvise(buf, SIZE, MADV_FREE))
		die("MADV_FREE");
	return buf;
}

static void test_clean_lazyfree(void)
{
	const char *name = "khugepaged_skips_clean_lazyfree";
	char *buf = lazyfree_region(11);
	size_t thp;
	int ok = two_full_scans();

	if (!ok)
		ktap_diag("%s: khugepaged made no two full scans", name);
	thp = thp_pages(buf);
	if (thp) {
		ktap_diag("%s: %zu pages were collapsed", name, thp);
		ok = 0;
	}
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

int main(void)
{
	folio_size(2048);
	write_str(THP "enabled", "always");
	write_str(KHP "scan_sleep_millisecs", "10");
	write_str(KHP "alloc_sleep_millisecs", "10");
	write_str(KHP "pages_to_scan", "8192");
	ktap_plan(3);
	test_clean_lazyfree();
	test_redirtied();
	test_madv_collapse();
	write_str(KHP "scan_sleep_millisecs", "10000");
	return ktap_finish();
}

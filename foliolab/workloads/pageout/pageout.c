// SPDX-License-Identifier: GPL-2.0
/*
 * pageout: W0. Fault in SIZE_MB of anonymous memory (the folio size is
 * whatever the mTHP settings give), time one MADV_PAGEOUT over all of it,
 * then read every page back and check its pattern.
 *
 * usage: pageout SIZE_MB [--quiet] [--lazyfree] [--same]
 *   --quiet     print no metrics (used for the ftrace-profiled pass)
 *   --lazyfree  MADV_FREE the memory first: reclaim then drops the pages
 *               instead of swapping them, and each page must read back
 *               either as zeros (dropped) or as its pattern
 *   --same      fill each page with one repeated word (its own): zram then
 *               stores it without compressing it, so what is timed is the
 *               unmap and swap-out, not the compressor
 */
#include "common.h"
#include "fl_windows.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_FREE
#define MADV_FREE 8
#endif

static int has_arg(int argc, char **argv, const char *arg)
{
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], arg))
			return 1;
	return 0;
}

/* Pages that are neither all zeros nor their whole pattern. */
static size_t verify_lazyfree(const char *buf, size_t npages, uint64_t seed)
{
	size_t bad = 0;

	for (size_t pg = 0; pg < npages; pg++)
		if (!zero_or_pattern(buf, pg, seed) && bad++ < 8)
			fprintf(stderr, "page %zu: neither zeros nor its "
				"pattern\n", pg);
	return bad;
}

int main(int argc, char **argv)
{
	size_t size, npages, swapped, dropped, bad;
	int quiet = has_arg(argc, argv, "--quiet");
	int lazyfree = has_arg(argc, argv, "--lazyfree");
	double t0, t1;
	char *buf;

	if (argc < 2 || atol(argv[1]) <= 0) {
		fprintf(stderr, "usage: pageout SIZE_MB [--quiet] [--lazyfree] "
			"[--same]\n");
		return 2;
	}
	if (has_arg(argc, argv, "--same"))
		pattern_word_mask = 0;
	size = (size_t)atol(argv[1]) << 20;
	npages = size / PAGE_SIZE;
	pin_to_this_cpu();
	buf = map_aligned(size, PMD_SIZE);
	fill_pages(buf, npages, 0);
	if (lazyfree && madvise(buf, size, MADV_FREE))
		die("madvise(MADV_FREE)");

	t0 = now_ms();
	FL_MARK_BEGIN(FL_WIN_PAGEOUT);
	if (madvise(buf, size, MADV_PAGEOUT))
		die("madvise(MADV_PAGEOUT)");
	FL_MARK_END(FL_WIN_PAGEOUT);
	t1 = now_ms();

	swapped = count_swapped(buf, npages);
	/* neither a page nor a swap entry */
	dropped = count_pagemap(buf, npages, PM_SWAP | PM_PRESENT, 0);
	bad = lazyfree ? verify_lazyfree(buf, npages, 0) :
			 verify_pages(buf, npages, 0);
	if (!quiet) {
		metric("pageout_ms", t1 - t0);
		metric("swapped_pct", 100.0 * swapped / npages);
		metric("dropped_pct", 100.0 * dropped / npages);
		metric("verify_errors", bad);
	}
	if (bad) {
		printf("@@ corrupt %zu of %zu pages read back wrong\n", bad,
		       npages);
		return 1;
	}
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * pageout: W0. Fault in SIZE_MB of anonymous memory (the folio size is
 * whatever the mTHP settings give), time one MADV_PAGEOUT over all of it,
 * then read every page back and check its pattern.
 *
 * usage: pageout SIZE_MB [--quiet]
 *   --quiet  print no metrics (used for the ftrace-profiled pass)
 */
#include "common.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

int main(int argc, char **argv)
{
	size_t size, npages, swapped, bad;
	int quiet = argc > 2 && !strcmp(argv[2], "--quiet");
	double t0, t1;
	char *buf;

	if (argc < 2 || atol(argv[1]) <= 0) {
		fprintf(stderr, "usage: pageout SIZE_MB [--quiet]\n");
		return 2;
	}
	size = (size_t)atol(argv[1]) << 20;
	npages = size / PAGE_SIZE;
	buf = map_aligned(size, PMD_SIZE);
	fill_pages(buf, npages, 0);

	t0 = now_ms();
	if (madvise(buf, size, MADV_PAGEOUT))
		die("madvise(MADV_PAGEOUT)");
	t1 = now_ms();

	swapped = count_swapped(buf, npages);
	bad = verify_pages(buf, npages, 0);
	if (!quiet) {
		metric("pageout_ms", t1 - t0);
		metric("swapped_pct", 100.0 * swapped / npages);
		metric("verify_errors", bad);
	}
	if (bad) {
		printf("@@ corrupt %zu of %zu pages read back wrong\n", bad,
		       npages);
		return 1;
	}
	return 0;
}

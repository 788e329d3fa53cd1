// SPDX-License-Identifier: GPL-2.0
/*
 * madvthroughput ADVICE SIZE_MB ITERATIONS: how fast madvise(ADVICE) goes
 * over SIZE_MB of anonymous memory faulted in as base pages, ADVICE one
 * of dontneed, free, cold, pageout.
 *
 * Each iteration writes every page of the mapping (its own pattern: not
 * zero-filled), then times one madvise() of all of it, then checks with
 * pagemap what the advice left: dontneed, no page present; free and cold,
 * every page still present (free only marks them lazily freeable, cold
 * only deactivates them); pageout, every page swapped out. Pinned to the
 * CPU it starts on (common.h says why).
 *
 * Records: mb_per_s (MiB advised over the seconds the madvise calls took,
 * all iterations), ms_mean (a call), pages (advised, all iterations) and
 * pages_as_advised (pages in the state the advice should leave).
 *
 * Counting window FL_WIN_MADVISE: the iterations, the writing and the
 * pagemap checks between the calls included (one window a sample cannot
 * hold the calls alone); the host takes what each call costs from its
 * own count, do_madvise's (entered once a call). Without the counter the
 * marks are one no-op instruction each, outside the timed calls.
 */
#include "common.h"
#include "fl_windows.h"

#ifndef MADV_COLD
#define MADV_COLD 20
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_FREE
#define MADV_FREE 8
#endif

static const struct {
	const char *name;
	int advice;
	uint64_t mask, want;	/* pagemap bits the advice leaves */
} ADVICES[] = {
	{ "dontneed", MADV_DONTNEED, PM_PRESENT | PM_SWAP, 0 },
	{ "free", MADV_FREE, PM_PRESENT, PM_PRESENT },
	{ "cold", MADV_COLD, PM_PRESENT, PM_PRESENT },
	{ "pageout", MADV_PAGEOUT, PM_SWAP, PM_SWAP },
};

int main(int argc, char **argv)
{
	size_t size, npages, as_advised = 0;
	double total_ms = 0;
	int iterations, a = -1;
	char *buf;

	for (size_t i = 0; argc == 4 && i < sizeof(ADVICES) / sizeof(*ADVICES);
	     i++)
		if (!strcmp(argv[1], ADVICES[i].name))
			a = i;
	if (a < 0 || atol(argv[2]) < 1 || atoi(argv[3]) < 1) {
		fprintf(stderr, "usage: madvthroughput dontneed|free|cold|"
			"pageout SIZE_MB ITERATIONS\n");
		return 2;
	}
	size = (size_t)atol(argv[2]) << 20;
	npages = size / PAGE_SIZE;
	iterations = atoi(argv[3]);
	pin_to_this_cpu();
	buf = map_aligned(size, PMD_SIZE);
	FL_MARK_BEGIN(FL_WIN_MADVISE);
	for (int it = 0; it < iterations; it++) {
		double t0;

		fill_pages(buf, npages, (uint64_t)it << 40);
		t0 = now_ms();
		if (madvise(buf, size, ADVICES[a].advice))
			die("madvise");
		total_ms += now_ms() - t0;
		as_advised += count_pagemap(buf, npages, ADVICES[a].mask,
					    ADVICES[a].want);
	}
	FL_MARK_END(FL_WIN_MADVISE);
	metric("mb_per_s", (double)(size >> 20) * iterations /
			   (total_ms / 1e3));
	metric("ms_mean", total_ms / iterations);
	metric("pages", (double)npages * iterations);
	metric("pages_as_advised", as_advised);
	return 0;
}

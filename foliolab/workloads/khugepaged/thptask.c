// SPDX-License-Identifier: GPL-2.0
/*
 * thptask: one task of W3. Maps SIZE_MB of anonymous memory, faults it in
 * as base pages (MADV_NOHUGEPAGE while touching), then hands it to
 * khugepaged (MADV_HUGEPAGE) and creates READYFILE.
 *
 *   hot:  then makes random one-word read-modify-writes over the region:
 *         ACCESSES of them (printing the time they took), or forever if
 *         ACCESSES is 0.
 *   cold: then MADV_FREEs the whole region (clean lazy-free memory) and
 *         sleeps until killed. With REREAD 1 it first reads one word of
 *         every page again: the PTEs are then young but still clean, so
 *         the memory is still lazy-free yet looks referenced to khugepaged.
 *
 * usage: thptask hot SIZE_MB READYFILE [ACCESSES]
 *        thptask cold SIZE_MB READYFILE [REREAD]
 */
#include "common.h"

#ifndef MADV_FREE
#define MADV_FREE 8
#endif

static void ready(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0644);

	if (fd < 0)
		die(path);
	close(fd);
}

int main(int argc, char **argv)
{
	size_t size, npages;
	long accesses;
	uint64_t x = 88172645463325252ULL;
	char *buf;
	int hot;

	if (argc < 4 || (strcmp(argv[1], "hot") && strcmp(argv[1], "cold"))) {
		fprintf(stderr,
			"usage: thptask hot SIZE_MB READYFILE [ACCESSES]\n"
			"       thptask cold SIZE_MB READYFILE [REREAD]\n");
		return 2;
	}
	hot = !strcmp(argv[1], "hot");
	size = (size_t)atol(argv[2]) << 20;
	npages = size / PAGE_SIZE;
	/* the optional 4th argument: ACCESSES for hot, REREAD for cold */
	accesses = argc > 4 ? atol(argv[4]) : 0;
	buf = map_aligned(size, PMD_SIZE);
	if (madvise(buf, size, MADV_NOHUGEPAGE))
		die("madvise(MADV_NOHUGEPAGE)");
	fill_pages(buf, npages, 0);
	if (madvise(buf, size, MADV_HUGEPAGE))
		die("madvise(MADV_HUGEPAGE)");
	if (!hot) {
		long reread = accesses;

		if (madvise(buf, size, MADV_FREE))
			die("madvise(MADV_FREE)");
		if (reread)
			read_pages(buf, npages);
		ready(argv[3]);
		for (;;)
			pause();
	}
	ready(argv[3]);
	double t0 = now_ms();

	for (long i = 0; !accesses || i < accesses; i++) {
		uint64_t *w;

		/* xorshift64: a cheap random page and word */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		w = (uint64_t *)(buf + (x % npages) * PAGE_SIZE) + (x >> 52) % 512;
		*w += 1;
	}
	double t = (now_ms() - t0) / 1e3;

	metric("hot2_access_s", t);
	metric("hot2_maccess_per_s", accesses / t / 1e6);
	return 0;
}

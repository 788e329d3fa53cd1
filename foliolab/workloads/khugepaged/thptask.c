// SPDX-License-Identifier: GPL-2.0
/*
 * thptask: one task of W3. Maps SIZE_MB of anonymous memory, faults it in
 * as base pages (MADV_NOHUGEPAGE while touching), then hands it to
 * khugepaged (MADV_HUGEPAGE) and creates READYFILE.
 *
 *   hot:  then makes random one-word read-modify-writes over the region:
 *         ACCESSES of them (printing the time they took), or forever if
 *         ACCESSES is 0. With AFTER, it goes on past ACCESSES until it is
 *         told (SIGUSR1) that its memory is collapsed, and then makes AFTER
 *         more, timed apart: the fixed number's time still spans the
 *         collapse, and the run ends soon after it instead of at a number
 *         large enough for the slowest collapse.
 *   cold: then MADV_FREEs the whole region (clean lazy-free memory) and
 *         sleeps until killed. With REREAD 1 it first reads one word of
 *         every page again: the PTEs are then young but still clean, so
 *         the memory is still lazy-free yet looks referenced to khugepaged.
 *
 * usage: thptask hot SIZE_MB READYFILE [ACCESSES [AFTER]]
 *        thptask cold SIZE_MB READYFILE [REREAD]
 */
#include "common.h"
#include <signal.h>

#ifndef MADV_FREE
#define MADV_FREE 8
#endif

/* set by SIGUSR1: khugepaged.sh saw all of hot2's memory PMD-mapped */
static volatile sig_atomic_t collapsed;

static void on_collapsed(int sig)
{
	(void)sig;
	collapsed = 1;
}

/* xorshift64: a cheap random page and word; one read-modify-write there */
static inline void access_one(char *buf, size_t npages, uint64_t *x)
{
	uint64_t *w;

	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	w = (uint64_t *)(buf + (*x % npages) * PAGE_SIZE) + (*x >> 52) % 512;
	*w += 1;
}

/* Accesses between two looks at the flag: the hot loop stays as it was. */
#define CHUNK 1000000L

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
	long accesses, after;
	uint64_t x = 88172645463325252ULL;
	char *buf;
	int hot;

	if (argc < 4 || (strcmp(argv[1], "hot") && strcmp(argv[1], "cold"))) {
		fprintf(stderr,
			"usage: thptask hot SIZE_MB READYFILE [ACCESSES [AFTER]]\n"
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
	after = argc > 5 ? atol(argv[5]) : -1;
	if (after >= 0 && signal(SIGUSR1, on_collapsed) == SIG_ERR)
		die("signal(SIGUSR1)");
	ready(argv[3]);
	double t0 = now_ms();

	for (long i = 0; !accesses || i < accesses; i++)
		access_one(buf, npages, &x);
	double t = (now_ms() - t0) / 1e3;

	metric("hot2_access_s", t);
	metric("hot2_maccess_per_s", accesses / t / 1e6);
	if (after < 0)
		return 0;
	while (!collapsed)
		for (long i = 0; i < CHUNK; i++)
			access_one(buf, npages, &x);
	double t1 = now_ms();

	for (long i = 0; i < after; i++)
		access_one(buf, npages, &x);
	metric("hot2_collapsed_maccess_per_s",
	       after / ((now_ms() - t1) / 1e3) / 1e6);
	return 0;
}

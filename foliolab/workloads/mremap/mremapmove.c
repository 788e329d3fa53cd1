// SPDX-License-Identifier: GPL-2.0
/*
 * mremapmove MOVE SIZE_MB ITERATIONS: how fast mremap() moves a populated
 * anonymous region, back and forth (written here; what it stands for is
 * in workload.py).
 *
 * The region, SIZE_MB at a PMD-aligned address, is written whole (its own
 * pattern a page) and then moved 2 * ITERATIONS times, each call timed
 * alone. MOVE says how:
 *   pmd      MREMAP_MAYMOVE | MREMAP_FIXED between two PMD-aligned
 *            slots: the kernel may move whole page tables (a PMD entry
 *            each) or, for THPs, whole huge PMDs;
 *   pte      the same, the second slot a page off PMD alignment: every
 *            PTE is moved on its own, and a THP's PMD is split on the
 *            first move;
 *   maymove  MREMAP_MAYMOVE only: the region grows by a page where a
 *            guard page stops it growing in place, so the kernel moves
 *            it where it chooses (as realloc() of a large block does);
 *            the page is then given back (flags 0, in place) and a new
 *            guard put after it, both untimed.
 * THP or base pages are the guest script's setting (transparent_hugepage
 * enabled). Afterwards every page must still be present and hold its
 * pattern.
 *
 * Records: ops_per_sec (moves over the seconds the calls took), mb_per_s,
 * us_mean, us_min, us_max (a call), ops, pages, thp_blocks and blocks
 * (PMD-sized blocks of the region in THPs before the moves, and all),
 * pages_present (after) and verify_errors; a page read back wrong is
 * reported as corruption.
 *
 * Counting window FL_WIN_MREMAP: the moves, from the first call to the
 * end of the last, with what lies between them (the clock's reads, and
 * under maymove the untimed shrink and guard), none of the filling or the
 * checks after. The host takes what a move costs from its own count,
 * move_vma's, entered once a move. Without the counter the marks are one
 * no-op instruction each, outside the timed calls.
 */
#include "flthp.h"
#include "fl_windows.h"

#ifndef MREMAP_FIXED
#define MREMAP_FIXED 2
#endif

enum move { MOVE_PMD, MOVE_PTE, MOVE_MAYMOVE };

static const char *const MOVES[] = { "pmd", "pte", "maymove" };

static size_t size;

/* A page of PROT_NONE at @addr, where nothing is mapped. */
static void guard_at(char *addr)
{
	if (mmap(addr, PAGE_SIZE, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) !=
	    addr)
		die("mmap guard");
}

/* Move the region at @from once; where it is now. @t: the call's ms. */
static char *move_once(enum move how, char *from, char *to, double *t)
{
	double t0 = now_ms();
	char *p;

	if (how != MOVE_MAYMOVE) {
		p = mremap(from, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, to);
		*t = now_ms() - t0;
		if (p != to)
			die("mremap fixed");
		return p;
	}
	p = mremap(from, size, size + PAGE_SIZE, MREMAP_MAYMOVE);
	*t = now_ms() - t0;
	if (p == MAP_FAILED)
		die("mremap maymove");
	if (p == from) {
		invalid("mremap grew the region in place: no guard after it");
		exit(1);
	}
	if (munmap(from + size, PAGE_SIZE))	/* the old guard */
		die("munmap guard");
	if (mremap(p, size + PAGE_SIZE, size, 0) != p)
		die("mremap shrink");
	guard_at(p + size);
	return p;
}

int main(int argc, char **argv)
{
	double total = 0, lo = 0, hi = 0, t;
	size_t npages, blocks;
	char *slot[2], *region;
	int how = -1, iterations;
	unsigned long bad;

	for (int i = 0; argc == 4 && i < 3; i++)
		if (!strcmp(argv[1], MOVES[i]))
			how = i;
	if (how < 0 || atol(argv[2]) < 1 || atoi(argv[3]) < 1) {
		fprintf(stderr,
			"usage: mremapmove pmd|pte|maymove SIZE_MB ITERATIONS\n");
		return 2;
	}
	size = (size_t)atol(argv[2]) << 20;
	npages = size / PAGE_SIZE;
	blocks = size / PMD_SIZE;
	iterations = atoi(argv[3]);
	pin_to_this_cpu();

	/* Both slots inside one PROT_NONE reservation, a PMD apart, so the
	 * moves never land on anything else; the region replaces the first
	 * slot's part of it, and a MREMAP_FIXED move the second's. */
	slot[0] = map_aligned_type(2 * size + 4 * PMD_SIZE, PMD_SIZE,
				   MAP_PRIVATE);
	if (mprotect(slot[0], 2 * size + 3 * PMD_SIZE, PROT_NONE))
		die("mprotect");
	slot[1] = slot[0] + size + PMD_SIZE + (how == MOVE_PTE ? PAGE_SIZE : 0);
	region = mmap(slot[0], size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (region != slot[0])
		die("mmap region");
	fill_pages(region, npages, 0x3e3e);
	metric("thp_blocks", count_thp_blocks(region, blocks));
	metric("blocks", blocks);

	FL_MARK_BEGIN(FL_WIN_MREMAP);
	for (int i = 0; i < 2 * iterations; i++) {
		region = move_once(how, region, slot[(i + 1) % 2], &t);
		total += t;
		lo = i == 0 || t < lo ? t : lo;
		hi = t > hi ? t : hi;
	}
	FL_MARK_END(FL_WIN_MREMAP);

	metric("ops_per_sec", 2 * iterations / (total / 1e3));
	metric("mb_per_s", (double)(size >> 20) * 2 * iterations /
			   (total / 1e3));
	metric("us_mean", total * 1e3 / (2 * iterations));
	metric("us_min", lo * 1e3);
	metric("us_max", hi * 1e3);
	metric("ops", 2 * iterations);
	metric("pages", npages);
	metric("pages_present", count_pagemap(region, npages, PM_PRESENT,
					      PM_PRESENT));
	bad = verify_pages(region, npages, 0x3e3e);
	metric("verify_errors", bad);
	if (bad) {
		printf("@@ corrupt %lu of %zu pages read back wrong after "
		       "the moves\n", bad, npages);
		return 1;
	}
	return 0;
}

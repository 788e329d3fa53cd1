/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whether a page of this process is part of a transparent huge page, for
 * the general workloads that ask for THPs (mremap, thpchallenge): the
 * page's frame from /proc/self/pagemap, its flags from /proc/kpageflags
 * (both need root, which the guest's workloads have).
 */
#ifndef FOLIOLAB_FLTHP_H
#define FOLIOLAB_FLTHP_H

#include "common.h"

#define PM_PFN_MASK ((1ULL << 55) - 1)
#define KPF_THP 22

struct thp_probe {
	int pagemap, kpageflags;
};

static inline struct thp_probe thp_probe_open(void)
{
	struct thp_probe p = {
		open("/proc/self/pagemap", O_RDONLY),
		open("/proc/kpageflags", O_RDONLY),
	};

	if (p.pagemap < 0 || p.kpageflags < 0)
		die("open pagemap/kpageflags");
	return p;
}

static inline void thp_probe_close(struct thp_probe *p)
{
	close(p->pagemap);
	close(p->kpageflags);
}

/* 1 if the page at @addr is present and part of a THP, else 0. */
static inline int page_is_thp(struct thp_probe *p, const void *addr)
{
	uint64_t ent, flags;
	off_t off = (uintptr_t)addr / PAGE_SIZE * 8;

	if (pread(p->pagemap, &ent, 8, off) != 8)
		die("pread pagemap");
	if (!(ent & PM_PRESENT) || !(ent & PM_PFN_MASK))
		return 0;
	if (pread(p->kpageflags, &flags, 8, (ent & PM_PFN_MASK) * 8) != 8)
		die("pread kpageflags");
	return !!(flags & (1ULL << KPF_THP));
}

/* How many of the @n PMD-sized blocks from @buf (PMD-aligned) are THPs. */
static inline size_t count_thp_blocks(const char *buf, size_t n)
{
	struct thp_probe p = thp_probe_open();
	size_t huge = 0;

	for (size_t i = 0; i < n; i++)
		huge += page_is_thp(&p, buf + i * PMD_SIZE);
	thp_probe_close(&p);
	return huge;
}

#endif

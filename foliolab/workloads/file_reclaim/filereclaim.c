// SPDX-License-Identifier: GPL-2.0
/*
 * filereclaim: W2. Map FILE MAP_SHARED, touch every page so the page cache
 * folios (read in earlier with read(), which gives large folios on XFS) are
 * mapped, record the folio-order histogram of the mapping, then time a
 * write of PERCENT% of the file size to CGROUP/memory.reclaim (wall and
 * system time). With --quiet, reclaim the same and print no metrics: the
 * caller profiles that pass (a separate, untimed run).
 *
 * usage: filereclaim FILE CGROUP PERCENT [--quiet]
 */
#include "common.h"
#include "fl_windows.h"

#include <sys/resource.h>
#include <sys/stat.h>

#define KPF_COMPOUND_HEAD 15
#define KPF_COMPOUND_TAIL 16
#define MAX_ORDER_SEEN 12

static void touch(const volatile char *map, size_t npages)
{
	unsigned long sum = 0;

	for (size_t pg = 0; pg < npages; pg++)
		sum += map[pg * PAGE_SIZE];
	(void)sum;
}

/* Count mapped folios by order, from pagemap PFNs and /proc/kpageflags. */
static void folio_histogram(const char *map, size_t npages)
{
	int pm = open("/proc/self/pagemap", O_RDONLY);
	int kf = open("/proc/kpageflags", O_RDONLY);
	size_t count[MAX_ORDER_SEEN + 1] = { 0 }, in_large = 0, mapped = 0;
	size_t run = 0;
	char key[32];

	if (pm < 0 || kf < 0)
		die("open pagemap/kpageflags");
	for (size_t pg = 0; pg <= npages; pg++) {
		uint64_t ent = 0, flags = 0;
		int tail = 0;

		if (pg < npages) {
			off_t off = ((uintptr_t)map / PAGE_SIZE + pg) * 8;

			if (pread(pm, &ent, 8, off) != 8)
				die("pread pagemap");
			if (ent & (1ULL << 63)) {
				uint64_t pfn = ent & ((1ULL << 55) - 1);

				if (pread(kf, &flags, 8, pfn * 8) != 8)
					die("pread kpageflags");
				tail = !!(flags & (1ULL << KPF_COMPOUND_TAIL));
				mapped++;
			}
		}
		/* A tail extends the current folio; anything else ends it. */
		if (tail && run) {
			run++;
			continue;
		}
		if (run) {
			int order = 0;

			while ((1UL << (order + 1)) <= run && order < MAX_ORDER_SEEN)
				order++;
			count[order]++;
			if (order)
				in_large += run;
		}
		run = (pg < npages && (ent & (1ULL << 63))) ? 1 : 0;
	}
	close(pm);
	close(kf);
	for (int o = 0; o <= MAX_ORDER_SEEN; o++) {
		if (!count[o])
			continue;
		snprintf(key, sizeof(key), "folios_order_%d", o);
		metric(key, count[o]);
	}
	metric("mapped_pct", 100.0 * mapped / npages);
	metric("large_folio_pct", mapped ? 100.0 * in_large / mapped : 0);
}

static void reclaim(const char *cgroup, size_t bytes, int quiet)
{
	char path[256], amount[32];
	struct rusage r0, r1;
	long before, after;
	double t0, t1, sys;

	snprintf(path, sizeof(path), "%s/memory.current", cgroup);
	before = read_long(path);
	snprintf(path, sizeof(path), "%s/memory.reclaim", cgroup);
	snprintf(amount, sizeof(amount), "%zu", bytes);
	getrusage(RUSAGE_SELF, &r0);
	t0 = now_ms();
	FL_MARK_BEGIN(FL_WIN_RECLAIM);
	write_sysfs(path, amount);
	FL_MARK_END(FL_WIN_RECLAIM);
	t1 = now_ms();
	getrusage(RUSAGE_SELF, &r1);
	snprintf(path, sizeof(path), "%s/memory.current", cgroup);
	after = read_long(path);
	sys = (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
	      (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
	if (quiet)
		return;
	metric("reclaim_real_s", (t1 - t0) / 1e3);
	metric("reclaim_sys_s", sys);
	metric("reclaimed_mb", (before - after) / 1048576.0);
}

int main(int argc, char **argv)
{
	int quiet = argc > 4 && !strcmp(argv[4], "--quiet");
	size_t size, npages;
	struct stat st;
	char *map;
	int fd;

	if (argc < 4) {
		fprintf(stderr,
			"usage: filereclaim FILE CGROUP PERCENT [--quiet]\n");
		return 2;
	}
	/* mapping and reclaim on one CPU: the same TLB flushes every sample */
	pin_to_this_cpu();
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		die(argv[1]);
	size = st.st_size;
	npages = size / PAGE_SIZE;
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	touch(map, npages);
	if (!quiet)
		folio_histogram(map, npages);
	reclaim(argv[2], size / 100 * atoi(argv[3]), quiet);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for foliolab's guest tests: mTHP sizes, pagemap bits, a
 * private memcg to reclaim from and failslab.
 */
#ifndef FOLIOLAB_GUESTLIB_H
#define FOLIOLAB_GUESTLIB_H

#include "common.h"
#include "fltest.h"

#include <linux/kernel-page-flags.h>
#include <sys/stat.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_FREE
#define MADV_FREE 8
#endif
#define THP "/sys/kernel/mm/transparent_hugepage/"
#define TRACING "/sys/kernel/tracing/"
#define PM_SOFT_DIRTY (1ULL << 55)
#define PM_UFFD_WP (1ULL << 57)

static inline void write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);

	if (fd >= 0) {
		if (write(fd, s, strlen(s)) < 0)
			ktap_diag("write %s: %s", path, strerror(errno));
		close(fd);
	}
}

/* Anonymous faults use folios of @kb only (4: base pages, 2048: PMD). */
static inline void folio_size(int kb)
{
	static const int sizes[] = { 16, 32, 64, 128, 256, 512, 1024, 2048 };
	char path[128];

	write_str(THP "enabled", "madvise");
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(path, sizeof(path), THP "hugepages-%dkB/enabled",
			 sizes[i]);
		write_str(path, sizes[i] == kb ? "always" : "never");
	}
}

/* pagemap: a swapped-out page's swap offset (bits 5-54) */
#define PM_SWAP_OFFSET_MASK (((1ULL << 55) - 1) & ~0x1fULL)

static inline uint64_t pagemap_entry(const void *addr)
{
	static int fd = -1;
	uint64_t ent = 0;

	if (fd < 0)
		fd = open("/proc/self/pagemap", O_RDONLY);
	if (pread(fd, &ent, 8, (uintptr_t)addr / PAGE_SIZE * 8) != 8)
		die("pread pagemap");
	return ent;
}


/*
 * The word for the page mapped at @addr in a per-PFN /proc file
 * (kpageflags, kpagecount), opened once into *@fd; 0 if nothing is mapped.
 */
static inline uint64_t kpage_word(const char *path, int *fd, const void *addr)
{
	uint64_t ent = pagemap_entry(addr), word = 0;

	if (!(ent & PM_PRESENT))
		return 0;
	if (*fd < 0)
		*fd = open(path, O_RDONLY);
	if (pread(*fd, &word, 8, (ent & ((1ULL << 55) - 1)) * 8) != 8)
		die(path);
	return word;
}

static inline uint64_t kpageflags_of(const void *addr)
{
	static int fd = -1;

	return kpage_word("/proc/kpageflags", &fd, addr);
}

/*
 * The number after @key in a /proc file of "key value" (vmstat) or
 * "Key:   value kB" (meminfo) lines; -1 if the key is not there.
 */
/*
 * Lines of the trace buffer (since its last reset) that hold both @event
 * and @detail; -1 if the trace cannot be read.
 */
static inline long trace_lines_with(const char *event, const char *detail)
{
	FILE *f = fopen(TRACING "trace", "r");
	char line[512];
	long n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, event) && strstr(line, detail);
	fclose(f);
	return n;
}

static inline long proc_field(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	size_t len = strlen(key);
	char line[256];
	long val = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) &&
		    (line[len] == ' ' || line[len] == ':')) {
			val = atol(line + len + 1);
			break;
		}
	if (f)
		fclose(f);
	return val;
}

static inline int all_swapped(const char *buf, size_t npages,
			      const char *what)
{
	size_t n = count_swapped(buf, npages);

	if (n < npages * 9 / 10) {
		ktap_diag("%s: only %zu of %zu pages swapped out", what, n,
			  npages);
		return 0;
	}
	return 1;
}

static inline int all_verified(const char *buf, size_t npages, uint64_t seed,
			       const char *what)
{
	size_t bad = verify_pages(buf, npages, seed);

	if (bad)
		ktap_diag("%s: %zu pages read back wrong", what, bad);
	return bad == 0;
}

/* Move this process into a fresh memcg, so what it allocates can be
 * reclaimed with memcg_reclaim(). */
static inline void memcg_enter(const char *name)
{
	char path[256], pid[32];

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", name);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/cgroup.procs", name);
	snprintf(pid, sizeof(pid), "%d", getpid());
	write_str(path, pid);
}

/* Move this process back into the root memcg. */
static inline void memcg_leave(void)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", getpid());
	write_str("/sys/fs/cgroup/cgroup.procs", pid);
}

/* Reclaim up to @bytes from memcg @name; errors (EAGAIN) are fine. */
static inline void memcg_reclaim(const char *name, size_t bytes)
{
	char path[256], amount[32];
	int fd;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/memory.reclaim", name);
	snprintf(amount, sizeof(amount), "%zu", bytes);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		die(path);
	if (write(fd, amount, strlen(amount)) < 0 && errno != EAGAIN)
		ktap_diag("memory.reclaim: %s", strerror(errno));
	close(fd);
}

/*
 * [*start, *end) of kernel function @fn's text, from /proc/kallsyms (the
 * next text symbol's address ends it); 0 if it is not there.
 */
static inline int ksym_range(const char *fn, unsigned long *start,
			     unsigned long *end)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	unsigned long a, found = 0, next = ~0UL;
	char name[256], type;

	if (!f)
		return 0;
	while (fscanf(f, "%lx %c %255s%*[^\n]", &a, &type, name) == 3)
		if (!strcmp(name, fn))
			found = a;
	rewind(f);
	while (found && fscanf(f, "%lx %c %255s%*[^\n]", &a, &type,
			       name) == 3)
		if ((type == 't' || type == 'T') && a > found && a < next)
			next = a;
	fclose(f);
	*start = found;
	*end = next;
	return found && next != ~0UL;
}

#define FAILSLAB "/sys/kernel/debug/failslab/"

/*
 * Make failslab fail the first @times slab allocations, sleeping ones too,
 * made by a task whose /proc/PID/make-it-fail is 1 (the caller sets it)
 * with the text of kernel function @fn on its stack: a test's failures
 * then land only on the path it forces. 0, with nothing armed, if there is
 * no failslab with a stack trace filter (CONFIG_FAILSLAB,
 * CONFIG_FAULT_INJECTION_STACKTRACE_FILTER) or no @fn in /proc/kallsyms.
 */
static inline int failslab_arm(const char *fn, long times)
{
	unsigned long start, end;
	char val[32];

	if (access(FAILSLAB "probability", W_OK) ||
	    access(FAILSLAB "require-start", W_OK) ||
	    !ksym_range(fn, &start, &end))
		return 0;
	snprintf(val, sizeof(val), "%lu", start);
	write_str(FAILSLAB "require-start", val);
	snprintf(val, sizeof(val), "%lu", end);
	write_str(FAILSLAB "require-end", val);
	write_str(FAILSLAB "task-filter", "Y");
	write_str(FAILSLAB "ignore-gfp-wait", "N");
	write_str(FAILSLAB "cache-filter", "N");
	write_str(FAILSLAB "verbose", "0");
	write_str(FAILSLAB "space", "0");
	write_str(FAILSLAB "interval", "1");
	snprintf(val, sizeof(val), "%ld", times);
	write_str(FAILSLAB "times", val);
	write_str(FAILSLAB "probability", "100");
	return 1;
}

/* Could failslab_arm(@fn, ...) arm failslab? */
static inline int failslab_usable(const char *fn)
{
	unsigned long start, end;

	return !access(FAILSLAB "probability", W_OK) &&
	       !access(FAILSLAB "require-start", W_OK) &&
	       ksym_range(fn, &start, &end);
}

/* How many of failslab_arm()'s @times failures were used, and disarm it. */
static inline long failslab_disarm(long times)
{
	write_str(FAILSLAB "probability", "0");
	return times - read_long(FAILSLAB "times");
}

/* Set task @pid's make-it-fail (0: this task). */
static inline void make_it_fail(pid_t pid, int on)
{
	char path[64];

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/make-it-fail", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/make-it-fail");
	write_str(path, on ? "1" : "0");
}

#endif

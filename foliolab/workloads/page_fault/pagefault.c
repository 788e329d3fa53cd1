// SPDX-License-Identifier: GPL-2.0
/*
 * pagefault CASE processes|threads TASKS SECONDS SIZE_MB DIR: page faults
 * per second over TASKS tasks, the operation and unit of will-it-scale's
 * page_fault1/2/3 (written here, not taken from it).
 *
 * Each task, on a CPU of its own (task i on CPU i modulo the CPUs), maps
 * SIZE_MB, writes one byte in every page (one write fault each: an op),
 * unmaps it, and again, until told to stop:
 *   CASE 1  anonymous private memory (page_fault1);
 *   CASE 2  a private mapping of a file of its own on the tmpfs DIR
 *           (page_fault2: each write copies the file's page);
 *   CASE 3  a shared mapping of that file (page_fault3: each write
 *           faults the cached page in and dirties it).
 * After a second of warm-up, the ops done in SECONDS are the sample;
 * will-it-scale reports per-task ops a second, averaged over its samples.
 *
 * Records: ops_per_s (all tasks), the slowest and fastest task's ops a
 * second, ops (every op of the run, warm-up included: the host holds
 * them to the kernel's pgfault count) and min_passes, the fewest whole
 * passes over its mapping any task made in the measured seconds (none:
 * it did not touch every page it was asked to).
 *
 * Counting window FL_WIN_FAULT: the measured seconds, marked by the
 * parent (the task that starts, times and stops the others). The window
 * is the machine's, so it holds every task's faults, mmaps and munmaps in
 * those seconds, processes or threads, on any CPU, and none of their
 * setup (file, warm-up) or exit; the host divides it by the faults the
 * kernel took in it (handle_mm_fault entries), not by the ops counted
 * here, which the tasks go on adding between the marks and the reads.
 * Without the counter the marks are one no-op instruction each, outside
 * the tasks' loop.
 */
#include "fltasks.h"
#include "fl_windows.h"

#include <stdatomic.h>

/* A task's counters, a cache line each (will-it-scale's layout too). */
struct counter {
	_Atomic unsigned long ops;
	_Atomic unsigned long passes;
	char pad[64 - 2 * sizeof(unsigned long)];
};

struct shared {
	_Atomic int ready, go, stop;
	int failed;
	struct counter c[FL_MAX_TASKS];
};

static int pf_case;
static size_t size;
static const char *dir;
static struct shared *sh;

static int task_file(void)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/pf-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0)
		die("mkstemp");
	unlink(path);
	if (ftruncate(fd, size))
		die("ftruncate");
	return fd;
}

static void fault_task(int id, void *arg)
{
	struct counter *c = &sh->c[id];
	int fd = -1, flags = MAP_PRIVATE | MAP_ANONYMOUS;

	(void)arg;
	if (pf_case != 1) {
		fd = task_file();
		flags = pf_case == 2 ? MAP_PRIVATE : MAP_SHARED;
	}
	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load(&sh->go))
		;
	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, fd,
			       0);

		if (p == MAP_FAILED) {
			sh->failed = 1;
			break;
		}
		for (size_t off = 0; off < size; off += PAGE_SIZE) {
			p[off] = 0;
			atomic_fetch_add_explicit(&c->ops, 1,
						  memory_order_relaxed);
		}
		munmap(p, size);
		atomic_fetch_add_explicit(&c->passes, 1, memory_order_relaxed);
	}
	if (fd >= 0)
		close(fd);
}

static unsigned long sum_ops(int n)
{
	unsigned long s = 0;

	for (int i = 0; i < n; i++)
		s += atomic_load(&sh->c[i].ops);
	return s;
}

int main(int argc, char **argv)
{
	unsigned long ops0[FL_MAX_TASKS], pass0[FL_MAX_TASKS], total0, total1;
	double t0, t1, secs, lo = 0, hi = 0;
	unsigned long min_passes = ~0UL;
	int threads, n, failed;
	struct fl_task *t;

	if (argc != 7 || atoi(argv[1]) < 1 || atoi(argv[1]) > 3 ||
	    (strcmp(argv[2], "processes") && strcmp(argv[2], "threads")) ||
	    atoi(argv[3]) < 1 || atoi(argv[3]) > FL_MAX_TASKS ||
	    atoi(argv[4]) < 1 || atol(argv[5]) < 1) {
		fprintf(stderr, "usage: pagefault 1|2|3 processes|threads "
			"TASKS SECONDS SIZE_MB DIR\n");
		return 2;
	}
	pf_case = atoi(argv[1]);
	threads = !strcmp(argv[2], "threads");
	n = atoi(argv[3]);
	secs = atoi(argv[4]);
	size = (size_t)atol(argv[5]) << 20;
	dir = argv[6];
	sh = fl_shared(sizeof(*sh));

	t = fl_start_tasks(n, threads, 1, fault_task, NULL);
	while (atomic_load(&sh->ready) < n)
		fl_sleep_ms(1);
	atomic_store(&sh->go, 1);
	fl_sleep_ms(1000);	/* warm-up, as will-it-scale has */
	for (int i = 0; i < n; i++) {
		ops0[i] = atomic_load(&sh->c[i].ops);
		pass0[i] = atomic_load(&sh->c[i].passes);
	}
	FL_MARK_BEGIN(FL_WIN_FAULT);
	total0 = sum_ops(n);
	t0 = now_ms();
	fl_sleep_ms(secs * 1e3);
	total1 = sum_ops(n);
	t1 = now_ms();
	FL_MARK_END(FL_WIN_FAULT);
	for (int i = 0; i < n; i++) {
		double r = (atomic_load(&sh->c[i].ops) - ops0[i]) * 1e3 /
			   (t1 - t0);
		unsigned long p = atomic_load(&sh->c[i].passes) - pass0[i];

		lo = i == 0 || r < lo ? r : lo;
		hi = r > hi ? r : hi;
		min_passes = p < min_passes ? p : min_passes;
	}
	atomic_store(&sh->stop, 1);
	failed = fl_wait_tasks(t, n, threads);
	if (failed || sh->failed) {
		invalid("a page-fault task failed (mmap, or a process's exit)");
		return 1;
	}
	metric("ops_per_s", (total1 - total0) * 1e3 / (t1 - t0));
	metric("task_ops_per_s_min", lo);
	metric("task_ops_per_s_max", hi);
	metric("ops", sum_ops(n));
	metric("min_passes", min_passes);
	return 0;
}

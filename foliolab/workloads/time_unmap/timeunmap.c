// SPDX-License-Identifier: GPL-2.0
/*
 * timeunmap THREADS SIZE_MB ITERATIONS: how long munmap takes of a large
 * anonymous mapping populated by THREADS threads, the measurement of
 * mmtests' time_unmap (written here, not taken from it): TLB shootdowns.
 *
 * Thread i runs on CPU i modulo the CPUs. Each iteration the main thread
 * (thread 0) maps SIZE_MB; every thread writes one word in each page of
 * its slice; the threads other than the main one then spin on a flag, so
 * their CPUs are in the mm and running it, while the main thread times
 * one munmap of the whole mapping; then they are let go for the next.
 *
 * Records, over the iterations: time_us_mean, time_us_min, time_us_max
 * (microseconds, one munmap each), pages_touched (pages written, all
 * iterations) and pages (pages mapped, all iterations).
 *
 * Counting window FL_WIN_UNMAP: the iterations, marked by the main
 * thread once the others are on their CPUs, from the first mmap to the
 * end of the last munmap, before the other threads are let go to exit.
 * The window is the machine's: it holds every thread's populating too,
 * and the other CPUs' TLB flushes. One window a sample cannot hold the
 * munmaps alone, so the host takes what each munmap costs from its own
 * count, do_vmi_munmap's (entered once a munmap, with the TLB flush and
 * the IPIs it sends). Without the counter the marks are one no-op
 * instruction each, outside the timed munmap.
 */
#include "fltasks.h"
#include "fl_windows.h"

#include <stdatomic.h>

static int nthreads, iterations;
static size_t npages;
static char *_Atomic map;
static _Atomic int phase;	/* iteration * 2 + 1: populate; + 2: done */
static _Atomic int arrived;
static _Atomic int pinned;	/* helpers on their CPUs */
static _Atomic unsigned long touched;

/* Wait until every thread has arrived at the step @want (a barrier that
 * spins: a thread that slept would leave its CPU to idle, lazy TLB). */
static void all_arrive(int want)
{
	atomic_fetch_add(&arrived, 1);
	while (atomic_load(&arrived) < want)
		;
}

static void touch_slice(int id)
{
	size_t per = npages / nthreads;
	size_t from = id * per, to = id == nthreads - 1 ? npages : from + per;
	char *p = atomic_load(&map);

	for (size_t pg = from; pg < to; pg++)
		p[pg * PAGE_SIZE] = 1;
	atomic_fetch_add(&touched, to - from);
}

/* Helper @task of fltasks.h (0-based) is thread task + 1. */
static void helper(int task, void *arg)
{
	int id = task + 1;

	(void)arg;
	fl_pin_cpu(id);
	atomic_fetch_add(&pinned, 1);
	for (int it = 0; it < iterations; it++) {
		while (atomic_load(&phase) < it * 2 + 1)
			;
		touch_slice(id);
		all_arrive((it + 1) * nthreads);
		while (atomic_load(&phase) < it * 2 + 2)
			;	/* spinning through the munmap */
	}
}

int main(int argc, char **argv)
{
	double sum = 0, lo = 0, hi = 0;
	struct fl_task *t = NULL;
	size_t size;

	if (argc != 4 || atoi(argv[1]) < 1 || atoi(argv[1]) > FL_MAX_TASKS ||
	    atol(argv[2]) < 1 || atoi(argv[3]) < 1) {
		fprintf(stderr, "usage: timeunmap THREADS SIZE_MB ITERATIONS\n");
		return 2;
	}
	nthreads = atoi(argv[1]);
	size = (size_t)atol(argv[2]) << 20;
	npages = size / PAGE_SIZE;
	iterations = atoi(argv[3]);
	fl_pin_cpu(0);
	if (nthreads > 1)
		t = fl_start_tasks(nthreads - 1, 1, 0, helper, NULL);
	/* the helpers' start and move to their CPUs are setup: not in it */
	while (atomic_load(&pinned) < nthreads - 1)
		fl_sleep_ms(1);
	FL_MARK_BEGIN(FL_WIN_UNMAP);
	for (int it = 0; it < iterations; it++) {
		char *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		double t0, us;

		if (p == MAP_FAILED)
			die("mmap");
		atomic_store(&map, p);
		atomic_store(&phase, it * 2 + 1);
		touch_slice(0);
		all_arrive((it + 1) * nthreads);
		t0 = now_ms();
		if (munmap(p, size))
			die("munmap");
		us = (now_ms() - t0) * 1e3;
		if (it == iterations - 1)
			FL_MARK_END(FL_WIN_UNMAP);	/* before they exit */
		atomic_store(&phase, it * 2 + 2);
		sum += us;
		lo = it == 0 || us < lo ? us : lo;
		hi = us > hi ? us : hi;
	}
	if (t)
		fl_wait_tasks(t, nthreads - 1, 1);
	metric("time_us_mean", sum / iterations);
	metric("time_us_min", lo);
	metric("time_us_max", hi);
	metric("pages_touched", atomic_load(&touched));
	metric("pages", (double)npages * iterations);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * usemem TASKS TOTAL_MB LOOPS VERIFY [RANDOM]: anonymous fill, the
 * operation and unit of vm-scalability's usemem (written here, not taken
 * from it).
 *
 * TASKS processes each map TOTAL_MB / TASKS of anonymous private memory
 * and write every word of it, LOOPS times over (the first pass faults it
 * in): page after page, or with RANDOM 1 in a random order of the pages
 * (one a task, the same each pass; every page is still written whole,
 * once a pass, so the count and the check stay exact, where
 * vm-scalability's random mode draws its positions at random). Then,
 * once every task is done with its writing, check every page it wrote
 * (VERIFY 1; untimed). Each task's throughput is its MiB written over
 * the time it took, in KB/s; vm-scalability's throughput is their sum
 * (each task alone, whatever the others did meanwhile).
 *
 * Records: throughput_kbs (the sum), elapsed_ms (the first task's start
 * to the last one's end), pages (pages each pass was asked to write, all
 * tasks), pages_written (pages written, all tasks, all passes) and
 * verify_errors; a page read back wrong is reported as corruption.
 *
 * Counting window FL_WIN_USEMEM: the fill, every task's timed part
 * (mmap and its passes, the faults and under swap the reclaim they
 * cause). The last task to be ready opens it as it lets them all go, and
 * the last to finish writing closes it: the window is the machine's, so
 * one begin and one end hold all the tasks' work whichever process marks
 * them, and neither the tasks' start nor their check, munmap and exit.
 * Tasks that finish early wait in it (1 ms sleeps: a little timer work
 * that varies from boot to boot, as the report's determinism check finds
 * of such functions). Without the counter the marks are one no-op
 * instruction each, outside every task's timing.
 *
 * A task that fails (die(), or killed: the memcg's OOM killer under
 * swap) would leave the others waiting for it for ever: the parent, which
 * waits for them in whichever order they end, then sets the shared abort
 * flag, the others stop at their next pass or wait, and the parent closes
 * the window if it was opened (once a sample, so that a counting boot's
 * later samples keep their own windows) and reports the sample invalid.
 */
#include "fltasks.h"
#include "fl_windows.h"

#include <stdatomic.h>

struct task_result {
	double start_ms, end_ms;
	unsigned long pages_written, bad;
	char pad[64 - 2 * sizeof(double) - 2 * sizeof(unsigned long)];
};

struct shared {
	_Atomic int ready, go, written, check, abort, window_closed;
	struct task_result r[FL_MAX_TASKS];
};

static struct shared *sh;
static size_t task_pages;
static int ntasks, loops, verify, random_order;

/* The window's end, once a sample: by the last task to finish writing,
 * or by the parent after a task failed. */
static void close_window(void)
{
	if (!atomic_exchange(&sh->window_closed, 1))
		FL_MARK_END(FL_WIN_USEMEM);
}

/* xorshift64: the pages' order, the same for a task and pass each run */
static uint64_t next_random(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A random permutation of the pages 0..n-1 (Fisher-Yates). */
static void shuffle(uint32_t *order, size_t n, uint64_t seed)
{
	uint64_t x = seed | 1;

	for (size_t i = 0; i < n; i++)
		order[i] = i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = next_random(&x) % (i + 1);
		uint32_t t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
}

/* One pass: every page written whole, in @order (NULL: page by page). */
static void write_pass(char *p, const uint32_t *order, uint64_t seed)
{
	if (!order) {
		fill_pages(p, task_pages, seed);
		return;
	}
	for (size_t i = 0; i < task_pages; i++) {
		uint64_t pg = order[i], *q = (uint64_t *)(p + pg * PAGE_SIZE);

		for (size_t w = 0; w < PAGE_SIZE / 8; w++)
			q[w] = pattern(pg, w, seed);
	}
}

static void fill_task(int id, void *arg)
{
	struct task_result *r = &sh->r[id];
	uint64_t seed = (uint64_t)id << 40;
	uint32_t *order = NULL;
	char *p;

	(void)arg;
	if (random_order) {
		/* made before the start: untimed */
		order = malloc(task_pages * sizeof(*order));
		if (!order)
			die("malloc");
		shuffle(order, task_pages, seed ^ 0x9e3779b97f4a7c15ULL);
	}
	if (atomic_fetch_add(&sh->ready, 1) == ntasks - 1) {
		FL_MARK_BEGIN(FL_WIN_USEMEM);	/* all ready: go */
		atomic_store(&sh->go, 1);
	}
	while (!atomic_load(&sh->go))
		if (atomic_load(&sh->abort))
			return;
	r->start_ms = now_ms();
	p = mmap(NULL, task_pages * PAGE_SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap");
	for (int l = 0; l < loops && !atomic_load(&sh->abort); l++) {
		write_pass(p, order, seed ^ ((uint64_t)l << 32));
		r->pages_written += task_pages;
	}
	r->end_ms = now_ms();
	/*
	 * Verified once all are written (a check swapping pages in would
	 * slow the tasks still writing), and only once the last one to
	 * finish has closed the window: the tasks wait on check, which it
	 * sets after its marker, not on written, whose last increment comes
	 * before the marker and would let a task waking meanwhile check
	 * (under swap, swap in) inside the window.
	 */
	if (atomic_fetch_add(&sh->written, 1) == ntasks - 1) {
		close_window();	/* the last one's writing done */
		atomic_store(&sh->check, 1);
	}
	while (!atomic_load(&sh->check) && !atomic_load(&sh->abort))
		fl_sleep_ms(1);
	if (verify && !atomic_load(&sh->abort))
		r->bad = verify_pages(p, task_pages,
				      seed ^ ((uint64_t)(loops - 1) << 32));
	munmap(p, task_pages * PAGE_SIZE);
	free(order);
}

int main(int argc, char **argv)
{
	double kbs = 0, first = 0, last = 0;
	unsigned long written = 0, bad = 0;
	struct fl_task *t;
	int failed;

	if (argc < 5 || argc > 6 || atoi(argv[1]) < 1 ||
	    atoi(argv[1]) > FL_MAX_TASKS || atol(argv[2]) < 1 ||
	    atoi(argv[3]) < 1) {
		fprintf(stderr,
			"usage: usemem TASKS TOTAL_MB LOOPS VERIFY [RANDOM]\n");
		return 2;
	}
	ntasks = atoi(argv[1]);
	task_pages = ((size_t)atol(argv[2]) << 20) / PAGE_SIZE / ntasks;
	loops = atoi(argv[3]);
	verify = atoi(argv[4]);
	random_order = argc == 6 && atoi(argv[5]);
	sh = fl_shared(sizeof(*sh));

	/* not pinned: usemem's processes go where the scheduler puts them */
	t = fl_start_tasks(ntasks, 0, 0, fill_task, NULL);
	failed = fl_wait_processes(t, ntasks, &sh->abort);
	if (failed) {
		if (atomic_load(&sh->go))
			close_window();
		invalid("a usemem task failed (killed, or mmap failed)");
		return 1;
	}
	for (int i = 0; i < ntasks; i++) {
		struct task_result *r = &sh->r[i];

		kbs += r->pages_written * (PAGE_SIZE / 1024) /
		       ((r->end_ms - r->start_ms) / 1e3);
		first = i == 0 || r->start_ms < first ? r->start_ms : first;
		last = r->end_ms > last ? r->end_ms : last;
		written += r->pages_written;
		bad += r->bad;
	}
	metric("throughput_kbs", kbs);
	metric("elapsed_ms", last - first);
	metric("pages", (double)task_pages * ntasks);
	metric("pages_written", written);
	if (verify)
		metric("verify_errors", bad);
	if (bad) {
		printf("@@ corrupt %lu of %zu pages read back wrong\n", bad,
		       task_pages * ntasks);
		return 1;
	}
	return 0;
}

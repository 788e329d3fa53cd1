// SPDX-License-Identifier: GPL-2.0
/*
 * lrureadonce TASKS TOTAL_MB DIR: files read once through the page cache,
 * the operation and unit of vm-scalability's lru-file-readonce (written
 * here, not taken from it; what it stands for is in workload.py).
 *
 * TASKS processes each make a sparse file of TOTAL_MB / TASKS in DIR
 * (unlinked at once: it goes with the process), then, all started at
 * once, read it from start to end with 1 MiB read()s. A hole has no
 * blocks, so each read allocates page cache and zeroes it, with no I/O:
 * the cost is the kernel's page cache and LRU work, and, once the memcg
 * the guest script puts the tasks in is full, the reclaim of what was
 * read before. Each task's throughput is its bytes over its own time, in
 * KB/s; the sum is the throughput (vm-scalability sums its dd's rates).
 * One word of every 4 KiB read is checked to be zero, inside the timed
 * loop (a check after it would have to read everything again).
 *
 * A task that has read its file keeps it open (its page cache on the
 * LRU, as vm-scalability's dd leaves its file in the page cache) until
 * every task has read: its close, which frees the unlinked file's pages,
 * would otherwise give the others room that reclaim should make.
 *
 * Records: throughput_kbs, elapsed_ms (the first task's start to the
 * last one's end), bytes (asked, all tasks) and bytes_read; a page read
 * back not zero is reported as corruption.
 *
 * Counting window FL_WIN_READONCE: the reading, every task's timed part
 * (the page cache allocated and zeroed, the memcg's reclaim it causes,
 * the copies to the tasks). The last task to be ready opens it as it
 * lets them all go, and the last to finish reading closes it: the window
 * is the machine's, so one begin and one end hold all the tasks' work,
 * and neither their files' making nor their closing and exit. Tasks that
 * finish early wait in it (1 ms sleeps). A task that fails makes the
 * parent set the abort flag: the others stop at their next read or wait,
 * and the parent closes the window if it was opened (once a sample).
 * Without the counter the marks are one no-op instruction each, outside
 * every task's timing.
 */
#include "fltasks.h"
#include "fl_windows.h"

#include <stdatomic.h>

#define CHUNK (1UL << 20)

struct task_result {
	double start_ms, end_ms;
	unsigned long bytes_read, nonzero;
	char pad[64 - 2 * sizeof(double) - 2 * sizeof(unsigned long)];
};

struct shared {
	_Atomic int ready, go, done, released, abort, window_closed;
	struct task_result r[FL_MAX_TASKS];
};

static struct shared *sh;
static size_t task_bytes;
static const char *dir;
static int ntasks;

/* The window's end, once a sample: by the last task to finish reading,
 * or by the parent after a task failed. */
static void close_window(void)
{
	if (!atomic_exchange(&sh->window_closed, 1))
		FL_MARK_END(FL_WIN_READONCE);
}

static int sparse_file(int id)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/readonce-%d", dir, id);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die(path);
	unlink(path);
	if (ftruncate(fd, task_bytes))
		die("ftruncate");
	return fd;
}

static void read_task(int id, void *arg)
{
	struct task_result *r = &sh->r[id];
	int fd = sparse_file(id);
	char *buf = malloc(CHUNK);
	ssize_t n = 0;

	(void)arg;
	if (!buf)
		die("malloc");
	memset(buf, 1, CHUNK);	/* faulted in before the clock starts */
	if (atomic_fetch_add(&sh->ready, 1) == ntasks - 1) {
		FL_MARK_BEGIN(FL_WIN_READONCE);	/* all ready: go */
		atomic_store(&sh->go, 1);
	}
	while (!atomic_load(&sh->go))
		if (atomic_load(&sh->abort))
			return;
	r->start_ms = now_ms();
	while (!atomic_load(&sh->abort) && (n = read(fd, buf, CHUNK)) > 0) {
		r->bytes_read += n;
		for (ssize_t off = 0; off < n; off += PAGE_SIZE)
			r->nonzero += *(uint64_t *)(buf + off) != 0;
	}
	r->end_ms = now_ms();
	if (n < 0)
		die("read");
	/*
	 * The others wait on released, which the last one to finish sets
	 * after its marker, not on done, whose last increment comes before
	 * it: a task waking in between would close its file, and free its
	 * page cache, inside the window.
	 */
	if (atomic_fetch_add(&sh->done, 1) == ntasks - 1) {
		close_window();	/* the last one's reading done */
		atomic_store(&sh->released, 1);
	}
	while (!atomic_load(&sh->released) && !atomic_load(&sh->abort))
		fl_sleep_ms(1);
	close(fd);
	free(buf);
}

int main(int argc, char **argv)
{
	double kbs = 0, first = 0, last = 0;
	unsigned long bytes_read = 0, nonzero = 0;
	struct fl_task *t;

	if (argc != 4 || atoi(argv[1]) < 1 || atoi(argv[1]) > FL_MAX_TASKS ||
	    atol(argv[2]) < 1) {
		fprintf(stderr, "usage: lrureadonce TASKS TOTAL_MB DIR\n");
		return 2;
	}
	ntasks = atoi(argv[1]);
	task_bytes = ((size_t)atol(argv[2]) << 20) / ntasks / PAGE_SIZE *
		     PAGE_SIZE;
	dir = argv[3];
	sh = fl_shared(sizeof(*sh));

	/* not pinned: vm-scalability's dd processes are not */
	t = fl_start_tasks(ntasks, 0, 0, read_task, NULL);
	if (fl_wait_processes(t, ntasks, &sh->abort)) {
		if (atomic_load(&sh->go))
			close_window();
		invalid("a lrureadonce task failed (killed, or a call failed)");
		return 1;
	}
	for (int i = 0; i < ntasks; i++) {
		struct task_result *r = &sh->r[i];

		kbs += r->bytes_read / 1024.0 / ((r->end_ms - r->start_ms) / 1e3);
		first = i == 0 || r->start_ms < first ? r->start_ms : first;
		last = r->end_ms > last ? r->end_ms : last;
		bytes_read += r->bytes_read;
		nonzero += r->nonzero;
	}
	metric("throughput_kbs", kbs);
	metric("elapsed_ms", last - first);
	metric("bytes", (double)task_bytes * ntasks);
	metric("bytes_read", bytes_read);
	if (nonzero) {
		printf("@@ corrupt %lu pages of a hole read back not zero\n",
		       nonzero);
		return 1;
	}
	return 0;
}

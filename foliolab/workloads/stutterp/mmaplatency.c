// SPDX-License-Identifier: GPL-2.0
/*
 * mmaplatency SECONDS MAP_KB ANON_MB FILE_MB DIR CGROUP: mmap latency
 * under reclaim, what mmtests' pagereclaim-stutterp measures (written
 * here, not taken from it; what it stands for is in workload.py).
 *
 * Run inside the memcg CGROUP (a cgroup v2 directory), it starts the
 * pressure: a process writing ANON_MB of anonymous memory over and over
 * (more than the memcg holds: it swaps), and, FILE_MB > 0, one writing a
 * file of FILE_MB in DIR over and over with 1 MiB write()s (dirty page
 * cache for reclaim to write back). Once the memcg has met its
 * memory.max (memory.events "max"; 60 s at most, else the sample is
 * invalid), this process times rounds of mmap() of MAP_KB of anonymous
 * memory, a write to each of its pages, and munmap(), for SECONDS: each
 * round's faults charge the memcg, and so reclaim in it.
 *
 * Records: mmap_us_* (fllatency.h: a round's latency), rounds, limit_ms
 * (from the start of the pressure to the memcg's limit), anon_mb and
 * file_mb (written by the pressure while the rounds ran).
 */
#include "fllatency.h"
#include "fltasks.h"

#include <signal.h>
#include <stdatomic.h>

#define CHUNK (1UL << 20)
#define LIMIT_WAIT_MS 60000.0

struct shared {
	_Atomic unsigned long anon_pages, file_chunks;
};

static struct shared *sh;
static size_t anon_pages, file_chunks;
static const char *dir;

static void anon_pressure(int id, void *arg)
{
	char *p = mmap(NULL, anon_pages * PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)id, (void)arg;
	if (p == MAP_FAILED)
		die("mmap pressure");
	for (uint64_t pass = 0;; pass++)
		for (size_t pg = 0; pg < anon_pages; pg++) {
			*(uint64_t *)(p + pg * PAGE_SIZE) = pass ^ pg;
			atomic_fetch_add_explicit(&sh->anon_pages, 1,
						  memory_order_relaxed);
		}
}

static void file_pressure(int id, void *arg)
{
	char path[256], *buf = malloc(CHUNK);
	int fd;

	(void)id, (void)arg;
	snprintf(path, sizeof(path), "%s/stutterp-file", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || !buf)
		die(path);
	unlink(path);
	memset(buf, 0x5a, CHUNK);
	for (;;)
		for (size_t c = 0; c < file_chunks; c++) {
			if (pwrite(fd, buf, CHUNK, c * CHUNK) != (ssize_t)CHUNK)
				die("pwrite");
			atomic_fetch_add_explicit(&sh->file_chunks, 1,
						  memory_order_relaxed);
		}
}

/* memory.events' "max": how often a charge met memory.max. */
static long max_events(const char *cgroup)
{
	char path[512], key[64];
	long value, max = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.events", cgroup);
	f = fopen(path, "r");
	if (!f)
		die(path);
	while (fscanf(f, "%63s %ld", key, &value) == 2)
		if (!strcmp(key, "max"))
			max = value;
	fclose(f);
	return max;
}

int main(int argc, char **argv)
{
	double seconds, start, t0, *us;
	size_t map_pages, rounds = 0, cap;
	unsigned long anon0, file0;
	struct fl_task *anon, *file = NULL;
	long max0;

	if (argc != 7 || atof(argv[1]) <= 0 || atol(argv[2]) < 4 ||
	    atol(argv[3]) < 1 || atol(argv[4]) < 0) {
		fprintf(stderr, "usage: mmaplatency SECONDS MAP_KB ANON_MB "
			"FILE_MB DIR CGROUP\n");
		return 2;
	}
	seconds = atof(argv[1]);
	map_pages = atol(argv[2]) / 4;
	anon_pages = (size_t)atol(argv[3]) << 8;
	file_chunks = atol(argv[4]);
	dir = argv[5];
	sh = fl_shared(sizeof(*sh));
	/* room for a round every 50 us, far faster than a round of 64
	 * faults goes (the array is charged to the memcg: kept small) */
	cap = (size_t)(seconds * 2e4) + 1;
	us = malloc(cap * sizeof(*us));
	if (!us)
		die("malloc");
	memset(us, 0, cap * sizeof(*us));	/* faulted in now, not in a round */

	max0 = max_events(argv[6]);
	start = now_ms();
	anon = fl_start_tasks(1, 0, 0, anon_pressure, NULL);
	if (file_chunks)
		file = fl_start_tasks(1, 0, 0, file_pressure, NULL);
	while (max_events(argv[6]) == max0 && now_ms() - start < LIMIT_WAIT_MS)
		fl_sleep_ms(10);
	metric("limit_ms", now_ms() - start);
	if (max_events(argv[6]) == max0) {
		invalid("the memcg never met memory.max: no reclaim to measure");
		kill(anon->pid, SIGKILL);
		if (file)
			kill(file->pid, SIGKILL);
		return 1;
	}

	anon0 = atomic_load(&sh->anon_pages);
	file0 = atomic_load(&sh->file_chunks);
	start = now_ms();
	while ((t0 = now_ms()) - start < seconds * 1e3 && rounds < cap) {
		char *p = mmap(NULL, map_pages * PAGE_SIZE,
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			die("mmap");
		for (size_t pg = 0; pg < map_pages; pg++)
			p[pg * PAGE_SIZE] = 1;
		munmap(p, map_pages * PAGE_SIZE);
		us[rounds++] = (now_ms() - t0) * 1e3;
	}
	metric("anon_mb", (atomic_load(&sh->anon_pages) - anon0) / 256.0);
	metric("file_mb", (double)(atomic_load(&sh->file_chunks) - file0));

	/* the pressure ends here: it never would on its own */
	kill(anon->pid, SIGKILL);
	if (file)
		kill(file->pid, SIGKILL);
	/* killed, so "failed": that is expected here, not a fault */
	fl_wait_tasks(anon, 1, 0);
	if (file)
		fl_wait_tasks(file, 1, 0);
	metric("rounds", rounds);
	report_latencies("mmap_us", us, rounds);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * dirtythreads WORKERS TOTAL_MB SECONDS: dirty-tlb's threaded writer.
 *
 * One private anonymous mapping of TOTAL_MB, and WORKERS threads that each
 * write a word into every page of their own slice of it, pass after pass,
 * for SECONDS. stress-ng's vm workers are a process each, and a kernel that
 * drops a CPU from an mm's cpumask when it switches away from the mm (x86
 * on 6.12) flushes such a worker's TLB on one or two CPUs however many the
 * machine has. Threads share one mm, so every CPU they run on stays in its
 * mask and a flush of a page reclaim unmapped reaches them all: the case
 * the batched flush of dirty folios is about on any kernel.
 *
 * Reports the pages written per second (all threads) and how many CPUs
 * the threads were seen on; each thread's write returns what the page
 * held, which must be what that thread wrote there last (zero on the first
 * pass) whether or not reclaim swapped it out meanwhile: a mismatch is
 * reported as corruption. A page holds one word, so zram stores it in
 * far less than stress-ng's write64 pages: compare IPIs and flushes per
 * page swapped out across the two writers, not times.
 */
#include "common.h"	/* first: it asks for _GNU_SOURCE */

#include <pthread.h>
#include <stdatomic.h>

/* Check the deadline and the CPU once per this many pages. */
#define PAGES_PER_CHECK 256

struct writer {
	pthread_t thread;
	unsigned long id;
	uint64_t *base;		/* the slice, one word per page used */
	size_t pages;
	double deadline_ms;
	unsigned long written;
	unsigned long bad;
};

static atomic_ulong cpus_seen;	/* a bit per CPU below 64 */

/* What writer @id leaves in page @i of its slice on pass @pass. */
static inline uint64_t word_of(uint64_t id, uint64_t pass, size_t i)
{
	return id << 48 | (pass & 0xffffff) << 24 | (i & 0xffffff);
}

static void *write_slice(void *arg)
{
	struct writer *w = arg;
	const size_t stride = PAGE_SIZE / sizeof(uint64_t);
	unsigned long written = 0, bad = 0;
	uint64_t pass = 0;

	/* the counters stay in locals: the writers' structs share lines */
	while (now_ms() < w->deadline_ms) {
		for (size_t i = 0; i < w->pages; i++) {
			/*
			 * One write access that returns the old word: a page
			 * reclaim took is faulted back in by a write, as
			 * stress-ng's writers fault it (a read fault would
			 * keep its swap slot), and an untouched page is not
			 * first mapped to the zero page (a read would, and
			 * the write after it would flush every CPU of the mm:
			 * a flush per page that is not reclaim's).
			 */
			uint64_t old = __atomic_exchange_n(
				w->base + i * stride, word_of(w->id, pass, i),
				__ATOMIC_RELAXED);

			if (old != (pass ? word_of(w->id, pass - 1, i) : 0))
				bad++;
			written++;
			if (i % PAGES_PER_CHECK)
				continue;
			int cpu = sched_getcpu();

			if (cpu >= 0 && cpu < 64)
				atomic_fetch_or(&cpus_seen, 1UL << cpu);
			if (now_ms() >= w->deadline_ms)
				goto out;
		}
		pass++;
	}
out:
	w->written = written;
	w->bad = bad;
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long workers, total_mb, seconds, written = 0, bad = 0;
	struct writer *w;
	size_t pages, slice;
	double t0, t1;
	char *map;

	if (argc != 4) {
		fprintf(stderr, "usage: dirtythreads WORKERS TOTAL_MB SECONDS\n");
		return 2;
	}
	workers = strtoul(argv[1], NULL, 10);
	total_mb = strtoul(argv[2], NULL, 10);
	seconds = strtoul(argv[3], NULL, 10);
	pages = total_mb * (1UL << 20) / PAGE_SIZE;
	if (!workers || !seconds || pages < workers) {
		fprintf(stderr, "dirtythreads: nothing to write\n");
		return 2;
	}
	slice = pages / workers;
	map = map_aligned(pages * PAGE_SIZE, PAGE_SIZE);
	w = calloc(workers, sizeof(*w));
	if (!w)
		die("calloc");
	t0 = now_ms();
	for (unsigned long i = 0; i < workers; i++) {
		w[i].id = i + 1;
		w[i].base = (uint64_t *)(map + i * slice * PAGE_SIZE);
		w[i].pages = slice;
		w[i].deadline_ms = t0 + seconds * 1e3;
		if (pthread_create(&w[i].thread, NULL, write_slice, &w[i]))
			die("pthread_create");
	}
	for (unsigned long i = 0; i < workers; i++) {
		pthread_join(w[i].thread, NULL);
		written += w[i].written;
		bad += w[i].bad;
	}
	t1 = now_ms();
	metric("pages_written_per_s", written / ((t1 - t0) / 1e3));
	metric("writer_cpus", __builtin_popcountl(atomic_load(&cpus_seen)));
	if (bad)
		printf("@@ corrupt dirtythreads: %lu page(s) lost their word\n",
		       bad);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the foliolab guest workloads. Results go to stdout as
 * "@@ metric KEY VALUE" records; the guest harness forwards stdout over the
 * results port, which never carries kernel messages.
 */
#ifndef FOLIOLAB_COMMON_H
#define FOLIOLAB_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* sched_getcpu(), CPU_SET() */
#endif

#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE_SIZE 4096UL
#define PMD_SIZE (2UL << 20)

/*
 * Counting windows. Under foliolab's counter plugin (compare --count) the
 * kernel work between FL_MARK_BEGIN(tag) and FL_MARK_END(tag) is counted
 * exactly; without the plugin the markers are no-ops. Each is one
 * unprivileged instruction carrying 0xf1 (magic), begin/end and a tag
 * (0-127): x86_64 nopl 0x464cXXXX(%rax), arm64 movz xzr, #XXXX, lsl #48
 * (see foliolab/plugin/decode.h). A tag names what the window holds: the
 * tags, FL_WIN_*, are in fl_windows.h, generated from windows.py.
 */
#define FL_MARK_WORD(tag, end)	(0xf100 | ((end) ? 0x80 : 0) | ((tag) & 0x7f))
/*
 * A host test defines FL_MARK itself (before this header) to see which
 * markers a program executes, in what order, from which task.
 */
#if defined(FL_MARK)
#elif defined(__x86_64__)
#define FL_MARK(word) \
	asm volatile(".byte 0x0f, 0x1f, 0x80\n\t.long 0x464c0000 + %c0" \
		     :: "i"(word) : "memory")
#elif defined(__aarch64__)
#define FL_MARK(word) \
	asm volatile(".inst 0xd2e0001f + ((%c0) << 5)" :: "i"(word) : "memory")
#else
#error "no window marker for this architecture"
#endif
#define FL_MARK_BEGIN(tag)	FL_MARK(FL_MARK_WORD(tag, 0))
#define FL_MARK_END(tag)	FL_MARK(FL_MARK_WORD(tag, 1))

static inline double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline void metric(const char *key, double value)
{
	printf("@@ metric %s %.6f\n", key, value);
	fflush(stdout);
}

static inline void invalid(const char *why)
{
	printf("@@ invalid %s\n", why);
	fflush(stdout);
}

static inline void die(const char *what)
{
	fprintf(stderr, "%s: %s\n", what, strerror(errno));
	exit(1);
}

/*
 * Keep this process on the CPU it runs on. A single-threaded workload that
 * migrates while it faults its memory in leaves up to a folio batch of it
 * in the other CPU's LRU cache, where MADV_PAGEOUT (which drains only its
 * own CPU's) cannot isolate it, and puts a second CPU in the mm's cpumask,
 * which turns reclaim's immediate TLB flushes into deferred ones. Either
 * changes the kernel's work from one sample to the next by chance.
 */
static inline void pin_to_this_cpu(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	if (cpu < 0)
		die("sched_getcpu");
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

/* Read a number from a sysfs/procfs/cgroup file. */
static inline long read_long(const char *path)
{
	char buf[64] = "";
	int fd = open(path, O_RDONLY);

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) < 0)
		die(path);
	close(fd);
	return atol(buf);
}

/* Write @val to a sysfs/procfs/cgroup file; EAGAIN (memory.reclaim) is ok. */
static inline void write_sysfs(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_TRUNC);

	if (fd < 0 || (write(fd, val, strlen(val)) < 0 && errno != EAGAIN))
		die(path);
	close(fd);
}

/*
 * mmap an anonymous region of @size bytes aligned to @align; @type is
 * MAP_PRIVATE, MAP_SHARED (shmem) or MAP_DROPPABLE.
 */
static inline char *map_aligned_type(size_t size, size_t align, int type)
{
	char *p = mmap(NULL, size + align, PROT_READ | PROT_WRITE,
		       type | MAP_ANONYMOUS, -1, 0);
	uintptr_t a;

	if (p == MAP_FAILED)
		die("mmap");
	a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	return (char *)a;
}

static inline char *map_aligned(size_t size, size_t align)
{
	return map_aligned_type(size, align, MAP_PRIVATE);
}

/* Read one word of every page: sets the accessed bits, dirties nothing. */
static inline void read_pages(const char *buf, size_t npages)
{
	volatile uint64_t sum = 0;

	for (size_t pg = 0; pg < npages; pg++)
		sum += *(volatile const uint64_t *)(buf + pg * PAGE_SIZE);
}

/*
 * Which bits of the word index vary a page's pattern: 7 gives eight distinct
 * words, which zram has to compress; 0 makes every page one repeated word,
 * which zram keeps as a "same-filled" page without compressing anything (as
 * with the memset() of the seed's benchmark, yet still unique per page).
 */
static uint64_t pattern_word_mask = 7;

/*
 * Pattern word @w of page @pg: unique per page (the page number is in every
 * word) yet compressible (it repeats every pattern_word_mask + 1 words), so
 * zram stays cheap.
 */
static inline uint64_t pattern(uint64_t pg, uint64_t w, uint64_t seed)
{
	return 0xa5a5000000000000ULL ^ (pg << 12) ^ (w & pattern_word_mask) ^
	       seed;
}

static inline void fill_pages(char *buf, size_t npages, uint64_t seed)
{
	for (size_t pg = 0; pg < npages; pg++) {
		uint64_t *q = (uint64_t *)(buf + pg * PAGE_SIZE);

		for (size_t w = 0; w < PAGE_SIZE / 8; w++)
			q[w] = pattern(pg, w, seed);
	}
}

/* Return the number of pages whose contents differ from their pattern. */
static inline size_t verify_pages(const char *buf, size_t npages,
				  uint64_t seed)
{
	size_t bad = 0;

	for (size_t pg = 0; pg < npages; pg++) {
		const uint64_t *q = (const uint64_t *)(buf + pg * PAGE_SIZE);

		for (size_t w = 0; w < PAGE_SIZE / 8; w++) {
			if (q[w] != pattern(pg, w, seed)) {
				if (bad < 8)
					fprintf(stderr,
						"page %zu word %zu: %#llx != %#llx\n",
						pg, w, (unsigned long long)q[w],
						(unsigned long long)pattern(pg, w, seed));
				bad++;
				break;
			}
		}
	}
	return bad;
}

/*
 * Count the pages of [buf, buf + npages) whose pagemap entry, masked with
 * @mask, equals @value.
 */
static inline size_t count_pagemap(const char *buf, size_t npages,
				   uint64_t mask, uint64_t value)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	size_t n = 0;
	uint64_t ent;

	if (fd < 0)
		die("open pagemap");
	for (size_t pg = 0; pg < npages; pg++) {
		off_t off = ((uintptr_t)buf / PAGE_SIZE + pg) * 8;

		if (pread(fd, &ent, 8, off) != 8)
			die("pread pagemap");
		n += (ent & mask) == value;
	}
	close(fd);
	return n;
}

#define PM_SWAP (1ULL << 62)
#define PM_PRESENT (1ULL << 63)

/*
 * Page @pg of @buf is all zeros (a dropped lazy-free page) or holds @seed's
 * whole pattern, nothing else.
 */
static inline int zero_or_pattern(const char *buf, size_t pg, uint64_t seed)
{
	const uint64_t *q = (const uint64_t *)(buf + pg * PAGE_SIZE);
	int zero = 1, pat = 1;

	for (size_t w = 0; w < PAGE_SIZE / 8; w++) {
		zero &= q[w] == 0;
		pat &= q[w] == pattern(pg, w, seed);
	}
	return zero || pat;
}

/* Count pages of [buf, buf + npages) that pagemap reports as swapped. */
static inline size_t count_swapped(const char *buf, size_t npages)
{
	return count_pagemap(buf, npages, PM_SWAP, PM_SWAP);
}

#endif

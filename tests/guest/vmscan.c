// SPDX-License-Identifier: GPL-2.0
/*
 * vmscan: dirty memory reclaimed while it is being written (the window the
 * batched TLB flush in shrink_folio_list() changes). Writer threads stamp
 * (page, sequence) into anonymous memory and into a MAP_SHARED XFS file
 * inside a memcg whose memory.max is a quarter of the working set, while
 * a second process truncates and punches holes in a second file and
 * mremaps a region back and forth. (A second process: mremap in the
 * writers' own mm would flush their pending TLB batch and hide a missing
 * flush in reclaim.) At the end every page must hold the last stamp
 * written to it: anon read directly, the file with O_DIRECT.
 *
 * A last case aims at the flush itself: writer threads pinned to their own
 * CPUs rewrite a few pages each in a tight loop (so their CPUs keep the TLB
 * entries) and check before every write that the page still holds their
 * previous stamp, while another process pages their memory (anonymous,
 * then shmem) out. A write that goes through a stale TLB entry after
 * pageout has copied the page is lost, and the next check, after swap-in,
 * sees an older stamp. (The sweeps above cannot show that: QEMU's TLB is
 * too small to keep an entry for a page the sweep comes back to.)
 */
#include "guestlib.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#define MEMCG "fltest-vmscan"
#define XFS_DIR "/mnt/fltest-vmscan"
#define TMPFS_DIR "/mnt/fltest-vmscan-tmpfs"
#define ANON (48UL << 20)
#define FILESZ (16UL << 20)
#define SECONDS 10
#define TLB_PAGES 64		/* per writer: fits a small TLB, fills an LRU batch */

struct writer {
	char *map;
	size_t npages;
	uint64_t *last;		/* last sequence written per page */
	uint64_t tag;
};

static volatile int stop;

static void stamp(char *page, uint64_t tag, size_t pg, uint64_t seq)
{
	uint64_t *q = (uint64_t *)page;

	/* first, middle and last word: a torn or stale page shows */
	q[0] = tag ^ pg;
	q[1] = seq;
	q[256] = seq ^ pg;
	q[511] = seq + pg;
}

/* Does @page hold stamp @seq, or zeroes if it was never stamped (seq 0)? */
static int stamped(const char *page, uint64_t tag, size_t pg, uint64_t seq)
{
	const uint64_t *q = (const uint64_t *)page;

	if (!seq)	/* a slow guest may not get round to every page */
		return !q[0] && !q[1] && !q[256] && !q[511];
	return q[0] == (tag ^ pg) && q[1] == seq && q[256] == (seq ^ pg) &&
	       q[511] == seq + pg;
}

static size_t count_stamped(const struct writer *w)
{
	size_t n = 0;

	for (size_t pg = 0; pg < w->npages; pg++)
		n += !!w->last[pg];
	return n;
}

static void *write_loop(void *arg)
{
	struct writer *w = arg;
	uint64_t seq = 0;

	while (!stop)
		for (size_t pg = 0; pg < w->npages && !stop; pg++) {
			stamp(w->map + pg * PAGE_SIZE, w->tag, pg, ++seq);
			w->last[pg] = seq;
		}
	return NULL;
}

static void *truncate_loop(void *arg)
{
	int fd = open(XFS_DIR "/churn", O_RDWR | O_CREAT | O_TRUNC, 0644);
	char *buf = malloc(1 << 20);

	(void)arg;
	memset(buf, 0x77, 1 << 20);
	while (!stop) {
		for (int i = 0; i < 8; i++)
			if (pwrite(fd, buf, 1 << 20, (off_t)i << 20) < 0)
				break;
		fallocate(fd, 0x03 /* PUNCH_HOLE | KEEP_SIZE */, 1 << 20, 2 << 20);
		if (ftruncate(fd, 3 << 20) || ftruncate(fd, 0))
			break;
	}
	free(buf);
	close(fd);
	return NULL;
}

static void *mremap_loop(void *arg)
{
	size_t sz = 4UL << 20;
	char *a = map_aligned(sz, PMD_SIZE), *b = map_aligned(sz, PMD_SIZE);

	(void)arg;
	fill_pages(a, sz / PAGE_SIZE, 31);
	while (!stop) {
		char *t = mremap(a, sz, sz, MREMAP_MAYMOVE | MREMAP_FIXED, b);

		if (t == MAP_FAILED)
			break;
		b = a;
		a = t;
	}
	if (verify_pages(a, sz / PAGE_SIZE, 31))
		return (void *)1;
	return NULL;
}

struct tlb_writer {
	char *map;
	int cpu;
	long errors;
};

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *check_and_stamp(void *arg)
{
	struct tlb_writer *w = arg;
	uint64_t r;

	pin(w->cpu);
	for (r = 1; !stop; r++)
		for (size_t pg = 0; pg < TLB_PAGES; pg++) {
			uint64_t *q = (uint64_t *)(w->map + pg * PAGE_SIZE);

			if ((q[0] != r - 1 || q[511] != r - 1) &&
			    w->errors++ < 4)
				fprintf(stderr, "# cpu %d page %zu: stamp %llu, "
					"%llu, expected %llu\n", w->cpu, pg,
					(unsigned long long)q[0],
					(unsigned long long)q[511],
					(unsigned long long)r - 1);
			q[0] = r;
			q[511] = r;
		}
	return NULL;
}

/*
 * Child: one pinned check-and-stamp writer per CPU but the first, until
 * the reclaimer sends SIGUSR1 (blocked since before the fork) or
 * MAX_SECONDS have passed.
 */
#define MAX_SECONDS (12 * SECONDS)
static int cached_writers(char *map, int ncpu)
{
	struct timespec limit = { .tv_sec = MAX_SECONDS };
	struct tlb_writer w[64];
	pthread_t thr[64];
	long errors = 0;
	sigset_t usr1;

	/*
	 * Fault every page in here, on CPU 0: a new folio waits in its CPU's
	 * LRU-add batch until drained, and the reclaimer drains CPU 0's.
	 */
	memset(map, 0, (size_t)ncpu * TLB_PAGES * PAGE_SIZE);
	stop = 0;	/* the writers above set it */
	for (int i = 1; i < ncpu; i++) {
		w[i] = (struct tlb_writer){ .cpu = i,
			.map = map + (size_t)i * TLB_PAGES * PAGE_SIZE };
		pthread_create(&thr[i], NULL, check_and_stamp, &w[i]);
	}
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	/* a stray signal (EINTR) only stops the writers early */
	sigtimedwait(&usr1, NULL, &limit);
	stop = 1;
	for (int i = 1; i < ncpu; i++) {
		pthread_join(thr[i], NULL);
		errors += w[i].errors;
	}
	return errors ? 1 : 0;
}

/*
 * The reclaimer is another process using process_madvise(MADV_PAGEOUT):
 * nothing it does flushes the writers' mm, and MADV_PAGEOUT ignores the
 * accessed bits, so the pages are reclaimed while they are being written.
 * @type is MAP_PRIVATE (anon) or MAP_SHARED (shmem, which reclaim writes
 * out through shmem_writepage()); only the writers' process maps the pages.
 * The writers run SECONDS, and on until reclaim has swapped out 100 pages
 * (a loaded host gives the guest less time: 59 in 10 s once), at most
 * MAX_SECONDS.
 */
static void test_cached_writers(const char *name, int type)
{
	int ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	long pswp0 = proc_field("/proc/vmstat", "pswpout"), pswp;
	time_t start = time(NULL);
	sigset_t usr1, old;
	struct iovec iov;
	int st = 0, pidfd, ok = 1, told = 0;
	cpu_set_t all;
	long calls = 0;
	pid_t kid, done;

	if (ncpu < 2) {
		ktap_skip(name, "needs two CPUs");
		return;
	}
	if (ncpu > 64)
		ncpu = 64;
	iov.iov_len = (size_t)ncpu * TLB_PAGES * PAGE_SIZE;
	iov.iov_base = map_aligned_type(iov.iov_len, PAGE_SIZE, type);
	sched_getaffinity(0, sizeof(all), &all);
	pin(0);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old);
	kid = fork();
	if (kid == 0)
		_exit(cached_writers(iov.iov_base, ncpu));
	sigprocmask(SIG_SETMASK, &old, NULL);
	pidfd = syscall(SYS_pidfd_open, kid, 0);
	if (pidfd < 0)
		die("pidfd_open");
	while ((done = waitpid(kid, &st, WNOHANG)) == 0) {
		calls++;
		/* ESRCH: the writers exited after waitpid() looked */
		if (syscall(SYS_process_madvise, pidfd, &iov, 1, MADV_PAGEOUT,
			    0) < 0 && errno != EAGAIN && errno != ESRCH && ok) {
			ktap_diag("%s: process_madvise: %s", name,
				  strerror(errno));
			ok = 0;
		}
		if (!told && time(NULL) - start >= SECONDS &&
		    proc_field("/proc/vmstat", "pswpout") - pswp0 >= 100) {
			kill(kid, SIGUSR1);
			told = 1;
		}
	}
	close(pidfd);
	if (done < 0) {
		ktap_diag("%s: waitpid: %s", name, strerror(errno));
		ok = 0;
	}
	pswp = proc_field("/proc/vmstat", "pswpout") - pswp0;
	ktap_diag("%s: %ld pages swapped out in %ld calls, %ld s", name, pswp,
		  calls, (long)(time(NULL) - start));
	if (pswp < 100) {
		ktap_diag("%s: too few swap-outs to tell", name);
		ok = 0;
	}
	if (done > 0 && WIFSIGNALED(st)) {
		ktap_diag("%s: the writers died of signal %d", name,
			  WTERMSIG(st));
		ok = 0;
	} else if (done > 0 && (!WIFEXITED(st) || WEXITSTATUS(st))) {
		ktap_diag("%s: a writer saw an older stamp than its last", name);
		ok = 0;
	}
	munmap(iov.iov_base, iov.iov_len + PAGE_SIZE);
	ktap_result(ok, name);
	sched_setaffinity(0, sizeof(all), &all);
}

/* Pages of the file mapped at @map (not faulted) that are in memory. */
static size_t in_page_cache(void *map, size_t npages)
{
	unsigned char vec[npages];
	size_t n = 0;

	if (mincore(map, npages * PAGE_SIZE, vec))
		die("mincore");
	for (size_t pg = 0; pg < npages; pg++)
		n += vec[pg] & 1;
	return n;
}

/*
 * A @size file of @seed's pattern at TMPFS_DIR/@file on a huge=always
 * tmpfs mounted for the case, which must hold it in PMD folios: a
 * ShmemHugePages short of two of them clears *@ok, since the case is
 * then not about large folios. Returns the open file.
 */
static int huge_tmpfs_file(const char *name, const char *file, char *buf,
			   size_t size, uint64_t seed, int *ok)
{
	char path[128];
	long huge_kb;
	int fd;

	if (mount("tmpfs", TMPFS_DIR, "tmpfs", 0, "huge=always,size=64m"))
		die("mount tmpfs");
	snprintf(path, sizeof(path), "%s/%s", TMPFS_DIR, file);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || !buf)
		die("tmpfs file");
	fill_pages(buf, size / PAGE_SIZE, seed);
	if (write(fd, buf, size) != (ssize_t)size)
		die("write tmpfs");
	huge_kb = proc_field("/proc/meminfo", "ShmemHugePages");
	if (huge_kb < 4096) {
		ktap_diag("%s: ShmemHugePages %ld kB, want two PMD folios",
			  name, huge_kb);
		*ok = 0;
	}
	return fd;
}

/* Read the whole file back through @buf: is every page @seed's pattern? */
static int tmpfs_file_verified(int fd, char *buf, size_t size,
			       uint64_t seed, const char *name)
{
	memset(buf, 0, size);
	if (pread(fd, buf, size, 0) != (ssize_t)size)
		die("read tmpfs");
	return all_verified(buf, size / PAGE_SIZE, seed, name);
}

/*
 * A 3 MiB tmpfs file in PMD folios: the second folio crosses i_size, so
 * shmem_writepage() splits it while reclaim writes it out and puts its
 * tails (those before EOF) on reclaim's list, where they must be written
 * out in turn. Every page must go to swap and come back intact.
 */
static void test_shmem_split_in_pageout(void)
{
	const char *name = "shmem_folio_split_in_pageout_keeps_data";
	const size_t size = 3UL << 20, npages = size / PAGE_SIZE;
	long split0 = proc_field("/proc/vmstat", "thp_split_page");
	char *buf = malloc(size);
	size_t left = npages;
	int fd, ok = 1;
	void *map;

	fd = huge_tmpfs_file(name, "split", buf, size, 31, &ok);
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	for (int i = 0; i < 20 && in_page_cache(map, npages); i++)
		memcg_reclaim(MEMCG, 4 * size);
	left = in_page_cache(map, npages);
	if (left) {
		ktap_diag("%s: %zu of %zu pages still in memory", name, left,
			  npages);
		ok = 0;
	}
	if (proc_field("/proc/vmstat", "thp_split_page") == split0) {
		ktap_diag("%s: the folio crossing EOF was not split", name);
		ok = 0;
	}
	ok &= tmpfs_file_verified(fd, buf, size, 31, name);
	munmap(map, size);
	close(fd);
	free(buf);
	umount(TMPFS_DIR);
	ktap_result(ok, name);
}

/*
 * Why @npages of @map are still in memory after pageouts: of those mapped,
 * how many are off the LRU (isolated, or waiting in a CPU's LRU cache,
 * where MADV_PAGEOUT cannot take them), in the swap cache, under
 * writeback, locked, or part of a large folio.
 */
static void diag_resident(const char *name, char *map, size_t npages)
{
	unsigned char vec[npages];
	size_t in = 0, unmapped = 0, off_lru = 0, swapcache = 0, wb = 0;
	size_t locked = 0, large = 0;

	if (mincore(map, npages * PAGE_SIZE, vec)) {
		ktap_diag("%s: mincore: %s", name, strerror(errno));
		return;
	}
	for (size_t pg = 0; pg < npages; pg++) {
		uint64_t f;

		if (!(vec[pg] & 1))
			continue;
		in++;
		f = kpageflags_of(map + pg * PAGE_SIZE);
		if (!f) {
			unmapped++;
			continue;
		}
		off_lru += !(f & (1ULL << KPF_LRU));
		swapcache += !!(f & (1ULL << KPF_SWAPCACHE));
		wb += !!(f & (1ULL << KPF_WRITEBACK));
		locked += !!(f & (1ULL << KPF_LOCKED));
		large += !!(f & (1ULL << KPF_COMPOUND_HEAD |
				 1ULL << KPF_COMPOUND_TAIL));
	}
	ktap_diag("%s: of %zu pages in memory: %zu not mapped; of the mapped, "
		  "%zu off the LRU, %zu in the swap cache, %zu under writeback, "
		  "%zu locked, %zu in large folios", name, in, unmapped, off_lru,
		  swapcache, wb, locked, large);
}

/*
 * Write-out refused: with the memcg's memory.swap.max at 0, shmem cannot
 * charge swap for any folio, so shmem_writepage() (shmem_writeout() on
 * 7.x) splits each PMD folio of a huge=always tmpfs file after its swap
 * allocation fails, fails again for the head page, and hands it back
 * dirty for reclaim to activate. MADV_PAGEOUT (memcg reclaim does not
 * scan swap-backed memory once the memcg can swap no more) must leave
 * every page in the page cache with its data; with swap.max back to max,
 * the same pages must go to swap and come back intact.
 *
 * The case stays on one CPU. A folio reclaim hands back, and a page
 * faulted in from swap, waits in the LRU cache of the CPU that put it
 * there (up to 31 folios) until that cache is drained; MADV_PAGEOUT skips
 * a folio that is not on the LRU and drains only its own CPU's cache. So
 * after a move to another CPU, the rest of that cache (1 or 16 of the
 * 1024 pages handed back by the refused pageout) would be skipped on every
 * later try.
 */
static void test_shmem_pageout_refused(void)
{
	const char *name = "shmem_pageout_refused_by_swap_max_keeps_data";
	const char *swap_max = "/sys/fs/cgroup/" MEMCG "/memory.swap.max";
	const char *events = "/sys/fs/cgroup/" MEMCG "/memory.swap.events";
	const size_t size = 4UL << 20, npages = size / PAGE_SIZE;
	long fail0 = proc_field(events, "fail");
	long split0 = proc_field("/proc/vmstat", "thp_split_page");
	char *buf = malloc(size), *map;
	size_t left;
	int fd, ok = 1;

	pin_to_this_cpu();
	fd = huge_tmpfs_file(name, "refused", buf, size, 47, &ok);
	/* PMD-aligned, so MADV_PAGEOUT takes each folio whole */
	map = mmap(map_aligned(size, PMD_SIZE), size, PROT_READ,
		   MAP_SHARED | MAP_FIXED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	/*
	 * A pageout in which no swap charge fails (seen on 7.3.4 under a
	 * loaded host: every page unmapped and still in memory, no split)
	 * is not the case: say what the pages were and try again.
	 */
	write_str(swap_max, "0");
	for (int try = 0; try < 5 && proc_field(events, "fail") == fail0;
	     try++) {
		if (try) {
			ktap_diag("%s: try %d: no swap charge failed", name,
				  try);
			diag_resident(name, map, npages);
		}
		read_pages(map, npages);
		if (madvise(map, size, MADV_PAGEOUT))
			die("MADV_PAGEOUT");
	}
	write_str(swap_max, "max");
	left = in_page_cache(map, npages);
	ktap_diag("%s: %zu of %zu pages in memory after the refused pageout, "
		  "%ld swap charges failed, %ld THP splits", name, left, npages,
		  proc_field(events, "fail") - fail0,
		  proc_field("/proc/vmstat", "thp_split_page") - split0);
	if (left != npages) {
		ktap_diag("%s: pages left memory with no swap to go to", name);
		ok = 0;
	}
	if (proc_field(events, "fail") == fail0) {
		ktap_diag("%s: no swap charge failed: the case was not reached",
			  name);
		diag_resident(name, map, npages);
		ok = 0;
	}
	ok &= tmpfs_file_verified(fd, buf, size, 47, name);
	/*
	 * The refused pageout unmapped every page: MADV_PAGEOUT finds only
	 * what is mapped, so fault the pages in again before each try.
	 */
	for (int i = 0; i < 20 && (left = in_page_cache(map, npages)); i++) {
		read_pages(map, npages);
		madvise(map, size, MADV_PAGEOUT);
	}
	left = in_page_cache(map, npages);
	if (left) {
		ktap_diag("%s: %zu of %zu pages still in memory with swap "
			  "allowed", name, left, npages);
		diag_resident(name, map, npages);
		ok = 0;
	}
	ok &= tmpfs_file_verified(fd, buf, size, 47, name);
	munmap(map, size);
	close(fd);
	free(buf);
	umount(TMPFS_DIR);
	ktap_result(ok, name);
}

#define CHURN_PAGES 2048	/* 8 MiB of shmem in a 4 MiB memcg */

/* Keep the first half of the shmem mapping at @arg dirty. */
static void *dirty_first_half(void *arg)
{
	char *map = arg;

	while (!stop)
		for (size_t pg = 0; pg < CHURN_PAGES / 2; pg++) {
			uint64_t *q = (uint64_t *)(map + pg * PAGE_SIZE);

			q[0] = pattern(pg, 0, 41);
			q[511] = pattern(pg, 511, 41);
		}
	return NULL;
}

/*
 * Child: with memory.high at half the size of an 8 MiB memfd (reclaim
 * without the OOM kills that memory.max brings with the classic LRU),
 * keep the first half dirty through a mapping and punch holes into the
 * second half, rewriting each hole with write(). Reclaim runs all the
 * time, so holes are punched in folios that reclaim has unmapped and is
 * writing out.
 */
static int punch_and_rewrite(int fd)
{
	uint64_t page[PAGE_SIZE / 8];
	pthread_t thr;
	char *map;
	long n = 0;

	map = mmap(NULL, CHURN_PAGES * PAGE_SIZE, PROT_READ | PROT_WRITE,
		   MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return 2;
	stop = 0;
	pthread_create(&thr, NULL, dirty_first_half, map);
	for (time_t end = time(NULL) + SECONDS; time(NULL) < end; n++) {
		size_t pg = CHURN_PAGES / 2 + (n * 7) % (CHURN_PAGES / 2);
		off_t off = (off_t)pg * PAGE_SIZE;

		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      off, 4 * PAGE_SIZE))
			return 3;
		for (size_t i = 0; i < 4 && pg + i < CHURN_PAGES; i++) {
			for (size_t w = 0; w < PAGE_SIZE / 8; w++)
				page[w] = pattern(pg + i, w, 41);
			if (pwrite(fd, page, PAGE_SIZE, off + i * PAGE_SIZE) !=
			    PAGE_SIZE)
				return 4;
		}
	}
	stop = 1;
	pthread_join(thr, NULL);
	return 0;
}

/*
 * Folios truncated (hole-punched) while reclaim holds them for writeout
 * lose their mapping; reclaim must notice that rather than write them to
 * swap. At the end every page must hold its pattern.
 */
static void test_shmem_punch_during_pageout(void)
{
	const char *name = "shmem_punch_hole_during_pageout_keeps_data";
	const size_t size = CHURN_PAGES * PAGE_SIZE;
	long pswp0 = proc_field("/proc/vmstat", "pswpout"), pswp;
	int fd = memfd_create("fltest-punch", 0), st, ok = 1;
	char *buf = malloc(size), limit[32];
	pid_t kid;

	if (fd < 0 || !buf || ftruncate(fd, size))
		die("memfd");
	fill_pages(buf, CHURN_PAGES, 41);
	if (pwrite(fd, buf, size, 0) != (ssize_t)size)
		die("write memfd");
	free(buf);		/* not to be reclaimed with the memfd */
	snprintf(limit, sizeof(limit), "%zu", size / 2);
	write_str("/sys/fs/cgroup/" MEMCG "/memory.high", limit);
	kid = fork();
	if (kid == 0)
		_exit(punch_and_rewrite(fd));
	waitpid(kid, &st, 0);
	write_str("/sys/fs/cgroup/" MEMCG "/memory.high", "max");
	pswp = proc_field("/proc/vmstat", "pswpout") - pswp0;
	ktap_diag("%s: %ld pages swapped out", name, pswp);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		ktap_diag("%s: the churn process failed (status %#x)", name,
			  st);
		ok = 0;
	}
	if (pswp < 1000) {
		ktap_diag("%s: too few swap-outs to tell", name);
		ok = 0;
	}
	buf = malloc(size);
	if (!buf || pread(fd, buf, size, 0) != (ssize_t)size)
		die("read memfd");
	ok &= all_verified(buf, CHURN_PAGES, 41, name);
	close(fd);
	free(buf);
	ktap_result(ok, name);
}

/*
 * The sweep: writer threads stamp anonymous memory and a MAP_SHARED XFS
 * file in a memcg a quarter of their size, while another process truncates,
 * punches holes and mremaps; then every stamp must be the last written.
 */
static void test_sweep(void)
{
	struct writer anon = { .npages = ANON / PAGE_SIZE, .tag = 0xa11 };
	struct writer file = { .npages = FILESZ / PAGE_SIZE, .tag = 0xf11e };
	pthread_t thr[4];
	void *mremap_bad;
	pid_t churn;
	int st;
	size_t bad_anon = 0, bad_file = 0;
	char limit[32];
	char *back;
	int fd;

	/* let dirty file pages reach reclaim instead of flusher writeback */
	write_str("/proc/sys/vm/dirty_ratio", "80");
	write_str("/proc/sys/vm/dirty_background_ratio", "60");
	snprintf(limit, sizeof(limit), "%lu", (ANON + FILESZ) / 4);
	write_str("/sys/fs/cgroup/" MEMCG "/memory.max", limit);
	folio_size(4);

	anon.map = map_aligned(ANON, PMD_SIZE);
	anon.last = calloc(anon.npages, sizeof(uint64_t));
	fd = open(XFS_DIR "/stamps", O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, FILESZ))
		die("stamps file");
	file.map = mmap(NULL, FILESZ, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			0);
	file.last = calloc(file.npages, sizeof(uint64_t));
	if (file.map == MAP_FAILED)
		die("mmap");

	churn = fork();
	if (churn == 0) {
		/* truncate/punch-hole and mremap loops, then report */
		pthread_create(&thr[2], NULL, truncate_loop, NULL);
		pthread_create(&thr[3], NULL, mremap_loop, NULL);
		sleep(SECONDS + 1);
		stop = 1;
		pthread_join(thr[2], NULL);
		pthread_join(thr[3], &mremap_bad);
		_exit(mremap_bad ? 1 : 0);
	}
	pthread_create(&thr[0], NULL, write_loop, &anon);
	pthread_create(&thr[1], NULL, write_loop, &file);
	sleep(SECONDS);
	stop = 1;
	pthread_join(thr[0], NULL);
	pthread_join(thr[1], NULL);
	waitpid(churn, &st, 0);
	mremap_bad = (void *)(long)!(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* verification needs room for its O_DIRECT buffer */
	write_str("/sys/fs/cgroup/" MEMCG "/memory.max", "max");
	for (size_t pg = 0; pg < anon.npages; pg++) {
		const uint64_t *q = (const uint64_t *)(anon.map + pg * PAGE_SIZE);

		if (!stamped(anon.map + pg * PAGE_SIZE, anon.tag, pg,
			     anon.last[pg]) && bad_anon++ < 4)
			ktap_diag("anon page %zu: stamp %#llx %llu %#llx %llu, "
				  "last written %llu", pg,
				  (unsigned long long)q[0],
				  (unsigned long long)q[1],
				  (unsigned long long)q[256],
				  (unsigned long long)q[511],
				  (unsigned long long)anon.last[pg]);
	}
	if (bad_anon)
		ktap_diag("%zu of %zu anon pages wrong", bad_anon, anon.npages);
	ktap_diag("anon: %zu of %zu pages stamped; file: %zu of %zu",
		  count_stamped(&anon), anon.npages, count_stamped(&file),
		  file.npages);
	ktap_result(!bad_anon, "anon_stamps_survive_reclaim");

	if (msync(file.map, FILESZ, MS_SYNC) || fsync(fd))
		die("msync");
	munmap(file.map, FILESZ);
	close(fd);
	sync();
	write_str("/proc/sys/vm/drop_caches", "3");
	back = aligned_alloc(PAGE_SIZE, FILESZ);	/* O_DIRECT alignment */
	fd = open(XFS_DIR "/stamps", O_RDONLY | O_DIRECT);
	if (fd < 0 || pread(fd, back, FILESZ, 0) != (ssize_t)FILESZ)
		die("O_DIRECT read");
	for (size_t pg = 0; pg < file.npages; pg++)
		if (!stamped(back + pg * PAGE_SIZE, file.tag, pg, file.last[pg]) &&
		    bad_file++ < 4)
			ktap_diag("file page %zu: stale or torn stamp on disk",
				  pg);
	ktap_result(!bad_file, "file_stamps_reach_disk");
	ktap_result(!mremap_bad, "mremap_region_intact");
	close(fd);
	unlink(XFS_DIR "/stamps");
	write_str("/proc/sys/vm/dirty_ratio", "20");
	write_str("/proc/sys/vm/dirty_background_ratio", "10");
}

FL_FIXTURE(vmscan)

/* test_harness_run() exits: torn down by fl_at_exit() */
static void unmount_xfs(void)
{
	umount(XFS_DIR);
}

#define NULLB "/dev/nullb0"
#define ZRAM "/dev/zram0"
#define ASYNC_PAGES 1024

/*
 * Anonymous pages paged out to a swap device whose writes are not
 * synchronous (null_blk, memory-backed): 7.3 collects a pass's swap
 * writes into bios of up to 32 folios and submits each when it is full
 * (6.12 submits each write at once), into madvise()'s block plug, so
 * pageout() returns with the folio's write not yet done, and the folio is
 * handed back under writeback (pageout_one()'s "goto keep"), to be freed
 * by a later pass. zram, the suite's swap, completes every write before
 * pageout() returns. The device gets the highest swap priority, and zram
 * is swapped off for the case: a CPU takes swap slots from the cluster it
 * last used, whatever the device's priority, so with zram on, some pages
 * went there and were freed at once (as few as 500 of 1024 folios were
 * kept). The case stays on one CPU, so that the folios it faults in are
 * in the LRU cache MADV_PAGEOUT drains (see the shmem case). Asserted: every
 * page swapped out; SwapCached up by at least half of them (the folios
 * kept under writeback); every byte read back through the swap cache,
 * then paged out again, the swap cache reclaimed and read back from the
 * device, then brought in by swapoff.
 */
static void test_async_swap_pageout(void)
{
	const char *name = "anon_pageout_to_async_swap_keeps_data";
	const char *mb = "/sys/module/null_blk/parameters/memory_backed";
	char *buf, backed[8] = "";
	long cached0, cached;
	size_t out;
	FILE *f;
	int ok = 1;

	pin_to_this_cpu();
	f = fopen(mb, "r");
	if (f) {
		if (!fgets(backed, sizeof(backed), f))
			backed[0] = 0;
		fclose(f);
	}
	if (access(NULLB, W_OK) || backed[0] != 'Y') {
		ktap_skip(name, "no memory-backed " NULLB
			  " (CONFIG_BLK_DEV_NULL_BLK, null_blk.memory_backed=1)");
		return;
	}
	if (system("mkswap " NULLB " > /dev/null") ||
	    swapon(NULLB, SWAP_FLAG_PREFER | SWAP_FLAG_PRIO_MASK)) {
		ktap_diag("%s: mkswap or swapon " NULLB " failed", name);
		ktap_result(0, name);
		return;
	}
	if (swapoff(ZRAM)) {
		ktap_diag("%s: swapoff " ZRAM " failed", name);
		swapoff(NULLB);
		ktap_result(0, name);
		return;
	}
	folio_size(4);
	buf = map_aligned(ASYNC_PAGES * PAGE_SIZE, PMD_SIZE);
	fill_pages(buf, ASYNC_PAGES, 53);
	cached0 = proc_field("/proc/meminfo", "SwapCached");
	/*
	 * A failed madvise is reported, not fatal: zram must be swapped on
	 * again (a die() in a helper below leaves that to the suite's
	 * other_swap and swapoff oracles).
	 */
	if (madvise(buf, ASYNC_PAGES * PAGE_SIZE, MADV_PAGEOUT)) {
		ktap_diag("%s: MADV_PAGEOUT: %s", name, strerror(errno));
		ok = 0;
	}
	cached = proc_field("/proc/meminfo", "SwapCached") - cached0;
	out = count_swapped(buf, ASYNC_PAGES);
	ktap_diag("%s: %zu of %d pages swapped out, SwapCached +%ld kB",
		  name, out, ASYNC_PAGES, cached);
	if (out != ASYNC_PAGES) {
		ktap_diag("%s: not every page went to swap", name);
		ok = 0;
	}
	if (cached < ASYNC_PAGES / 2 * (long)(PAGE_SIZE / 1024)) {
		ktap_diag("%s: the folios were not kept under writeback", name);
		ok = 0;
	}
	ok = all_verified(buf, ASYNC_PAGES, 53, name) && ok;
	/* clean swap cache folios now: freed without a write, read back */
	for (int i = 0; i < 10 && count_swapped(buf, ASYNC_PAGES) < ASYNC_PAGES;
	     i++)
		madvise(buf, ASYNC_PAGES * PAGE_SIZE, MADV_PAGEOUT);
	ok = all_swapped(buf, ASYNC_PAGES, name) && ok;
	/* free the unmapped swap cache folios, so the reads go to the device */
	for (int i = 0; i < 5; i++)
		memcg_reclaim(MEMCG, 2 * ASYNC_PAGES * PAGE_SIZE);
	ktap_diag("%s: SwapCached %ld kB before the read back", name,
		  proc_field("/proc/meminfo", "SwapCached"));
	ok = all_verified(buf, ASYNC_PAGES, 53, name) && ok;
	madvise(buf, ASYNC_PAGES * PAGE_SIZE, MADV_PAGEOUT);
	if (swapoff(NULLB)) {
		ktap_diag("%s: swapoff " NULLB " failed", name);
		ok = 0;
	}
	ok = all_verified(buf, ASYNC_PAGES, 53, name) && ok;
	munmap(buf, ASYNC_PAGES * PAGE_SIZE);
	if (swapon(ZRAM, 0)) {
		ktap_diag("%s: swapon " ZRAM " failed", name);
		ok = 0;
	}
	ktap_result(ok, name);
}

FL_TEST(vmscan, sweep_anon_file_stamps_survive_reclaim, 300)
{
	test_sweep();
}
FL_TEST(vmscan, pinned_writers_lose_no_write_to_reclaim, 300)
{
	test_cached_writers("pinned_writers_lose_no_write_to_reclaim",
			    MAP_PRIVATE);
}
FL_TEST(vmscan, pinned_writers_lose_no_shmem_write_to_reclaim, 300)
{
	test_cached_writers("pinned_writers_lose_no_shmem_write_to_reclaim",
			    MAP_SHARED);
}
FL_TEST(vmscan, shmem_folio_split_in_pageout_keeps_data, 300)
{
	test_shmem_split_in_pageout();
}
FL_TEST(vmscan, shmem_punch_hole_during_pageout_keeps_data, 300)
{
	test_shmem_punch_during_pageout();
}
FL_TEST(vmscan, shmem_pageout_refused_by_swap_max_keeps_data, 300)
{
	test_shmem_pageout_refused();
}
FL_TEST(vmscan, anon_pageout_to_async_swap_keeps_data, 300)
{
	test_async_swap_pageout();
}

int main(int argc, char **argv)
{
	mkdir(XFS_DIR, 0755);
	mkdir(TMPFS_DIR, 0755);
	umount(XFS_DIR);		/* left over from an earlier crash */
	umount(TMPFS_DIR);
	if (system("mkfs.xfs -q -f /dev/ram0") ||
	    mount("/dev/ram0", XFS_DIR, "xfs", 0, NULL)) {
		printf("Bail out! no XFS on /dev/ram0 (brd)\n");
		return 1;
	}
	memcg_enter(MEMCG);
	fl_at_exit(unmount_xfs);
	return test_harness_run(argc, argv);
}

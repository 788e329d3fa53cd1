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
 */
#include "guestlib.h"

#include <pthread.h>
#include <sys/mount.h>
#include <sys/wait.h>

#define MEMCG "fltest-vmscan"
#define XFS_DIR "/mnt/fltest-vmscan"
#define ANON (48UL << 20)
#define FILESZ (16UL << 20)
#define SECONDS 10

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

static int stamped(const char *page, uint64_t tag, size_t pg, uint64_t seq)
{
	const uint64_t *q = (const uint64_t *)page;

	return q[0] == (tag ^ pg) && q[1] == seq && q[256] == (seq ^ pg) &&
	       q[511] == seq + pg;
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

int main(void)
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

	mkdir(XFS_DIR, 0755);
	umount(XFS_DIR);		/* left over from an earlier crash */
	if (system("mkfs.xfs -q -f /dev/ram0") ||
	    mount("/dev/ram0", XFS_DIR, "xfs", 0, NULL)) {
		ktap_plan(1);
		ktap_result(0, "xfs_on_ram0_available");
		return 1;
	}
	/* let dirty file pages reach reclaim instead of flusher writeback */
	write_str("/proc/sys/vm/dirty_ratio", "80");
	write_str("/proc/sys/vm/dirty_background_ratio", "60");
	memcg_enter(MEMCG);
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

	ktap_plan(3);
	/* verification needs room for its O_DIRECT buffer */
	write_str("/sys/fs/cgroup/" MEMCG "/memory.max", "max");
	for (size_t pg = 0; pg < anon.npages; pg++)
		if (!stamped(anon.map + pg * PAGE_SIZE, anon.tag, pg,
			     anon.last[pg]) && bad_anon++ < 4)
			ktap_diag("anon page %zu: stale or torn stamp", pg);
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
	umount(XFS_DIR);
	write_str("/proc/sys/vm/dirty_ratio", "20");
	write_str("/proc/sys/vm/dirty_background_ratio", "10");
	return ktap_finish();
}

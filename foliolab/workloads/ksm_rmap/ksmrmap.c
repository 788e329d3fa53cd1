// SPDX-License-Identifier: GPL-2.0
/*
 * ksmrmap: W4. One anonymous mapping of NVMAS identical pages is split into
 * NVMAS VMAs that share one anon_vma (mprotect on every other page; no
 * fork), marked MADV_MERGEABLE and merged by KSM. Then MOVE pages, each on
 * a different KSM page, are migrated to the other NUMA node with
 * move_pages() (MPOL_MF_MOVE_ALL: KSM pages are mapped shared), which
 * walks the rmap of each KSM page (rmap_walk_ksm; the shell traces its
 * durations). Meanwhile another thread keeps changing the
 * protection of one page of the same mapping, which needs the anon_vma
 * lock, and records how long each mprotect() took.
 *
 * usage: ksmrmap NVMAS MOVE MERGE_TIMEOUT_S
 */
#include "common.h"
#include "fl_windows.h"

#include <pthread.h>
#include <sys/syscall.h>

#define MPOL_MF_MOVE_ALL (1 << 2)
#define KSM "/sys/kernel/mm/ksm/"
#define TRACING_ON "/sys/kernel/tracing/tracing_on"
#define FILL 0x6b

static char *region;
static size_t npages;
static volatile int stop;
static double lock_max_ms, lock_sum_ms;
static long lock_calls;

static size_t count_vmas(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi, start = (uintptr_t)region;
	unsigned long end = start + npages * PAGE_SIZE;
	char line[512];
	size_t n = 0;

	if (!f)
		die("maps");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo >= start &&
		    hi <= end)
			n++;
	fclose(f);
	return n;
}

/* The bystander: flip the last page between read-only and read-write. */
static void *contender(void *arg)
{
	char *page = region + (npages - 1) * PAGE_SIZE;
	int prot = PROT_READ;

	(void)arg;
	while (!stop) {
		double t0 = now_ms(), dt;

		prot = prot == PROT_READ ? PROT_READ | PROT_WRITE : PROT_READ;
		if (mprotect(page, PAGE_SIZE, prot))
			die("mprotect (contender)");
		dt = now_ms() - t0;
		if (dt > lock_max_ms)
			lock_max_ms = dt;
		lock_sum_ms += dt;
		lock_calls++;
		usleep(1000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	size_t move, moved = 0, bad = 0;
	double t0, merge_s, move_ms;
	int timeout_s;
	pthread_t thr;

	if (argc < 4) {
		fprintf(stderr, "usage: ksmrmap NVMAS MOVE MERGE_TIMEOUT_S\n");
		return 2;
	}
	npages = atol(argv[1]);
	move = atol(argv[2]);
	timeout_s = atoi(argv[3]);
	region = map_aligned(npages * PAGE_SIZE, PMD_SIZE);
	memset(region, FILL, npages * PAGE_SIZE);
	if (madvise(region, npages * PAGE_SIZE, MADV_MERGEABLE))
		die("madvise(MADV_MERGEABLE)");
	for (size_t pg = 1; pg < npages; pg += 2)
		if (mprotect(region + pg * PAGE_SIZE, PAGE_SIZE, PROT_READ))
			die("mprotect");
	metric("vmas", count_vmas());

	/* Wait until KSM has merged (nearly) every page. */
	t0 = now_ms();
	for (;;) {
		long merged = read_long(KSM "pages_shared") +
			      read_long(KSM "pages_sharing");

		if (merged >= (long)(npages * 95 / 100))
			break;
		if (now_ms() - t0 > timeout_s * 1e3) {
			printf("@@ invalid KSM merged only %ld of %zu pages\n",
			       merged, npages);
			break;
		}
		usleep(100 * 1000);
	}
	merge_s = (now_ms() - t0) / 1e3;
	/*
	 * Stop ksmd (run=0 keeps what it merged): its scanning takes folio
	 * references that make every migration attempt fail with -EAGAIN.
	 */
	write_sysfs(KSM "run", "0");
	metric("ksm_merge_s", merge_s);
	metric("ksm_pages_shared", read_long(KSM "pages_shared"));

	/* Migrate one page per KSM page (they are 256 sharers apart). */
	void **pages = calloc(move, sizeof(void *));
	int *nodes = calloc(move, sizeof(int)), *status = calloc(move, sizeof(int));
	size_t stride = npages / move;

	for (size_t i = 0; i < move; i++)
		pages[i] = region + i * stride * PAGE_SIZE;
	if (syscall(SYS_move_pages, 0, move, pages, NULL, status, 0))
		die("move_pages (query)");
	for (size_t i = 0; i < move; i++)
		nodes[i] = status[0] == 0 ? 1 : 0;

	if (!getenv("FL_NO_CONTENDER"))
		pthread_create(&thr, NULL, contender, NULL);
	write_sysfs(TRACING_ON, "1");
	t0 = now_ms();
	FL_MARK_BEGIN(FL_WIN_MOVE);
	/* > 0 (pages not moved) is judged by the query below */
	if (syscall(SYS_move_pages, 0, move, pages, nodes, status,
		    MPOL_MF_MOVE_ALL) < 0)
		die("move_pages");
	FL_MARK_END(FL_WIN_MOVE);
	move_ms = now_ms() - t0;
	write_sysfs(TRACING_ON, "0");
	stop = 1;
	if (!getenv("FL_NO_CONTENDER"))
		pthread_join(thr, NULL);

	/* Pages sharing a KSM page with an earlier one moved along with it. */
	if (syscall(SYS_move_pages, 0, move, pages, NULL, status, 0))
		die("move_pages (query)");
	for (size_t i = 0; i < move; i++)
		moved += status[i] == nodes[i];
	char ref[PAGE_SIZE];

	memset(ref, FILL, PAGE_SIZE);
	for (size_t pg = 0; pg < npages; pg++)
		bad += memcmp(region + pg * PAGE_SIZE, ref, PAGE_SIZE) != 0;
	metric("move_ms", move_ms);
	metric("moved_pct", 100.0 * moved / move);
	metric("lock_wait_max_ms", lock_max_ms);
	metric("lock_wait_avg_ms", lock_calls ? lock_sum_ms / lock_calls : 0);
	metric("verify_errors", bad);
	if (bad)
		printf("@@ corrupt %zu of %zu pages read back wrong\n", bad,
		       npages);
	return bad ? 1 : 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * anon_swap: data integrity of anonymous memory through swap-out and
 * swap-in (the unmap path S0 batches). Every test writes a unique pattern
 * into every page, forces the path, and verifies every word. Needs a swap
 * device (zram) and runs as root in the foliolab guest.
 */
#include "guestlib.h"

#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define SIZE (8UL << 20)
#define NPAGES (SIZE / PAGE_SIZE)

/* Pattern in, MADV_PAGEOUT, all swapped, every word back. */
static void test_pageout(int kb, const char *name)
{
	char *buf = map_aligned(SIZE, PMD_SIZE);
	int ok;

	folio_size(kb);
	if (kb == 2048)
		madvise(buf, SIZE, MADV_HUGEPAGE);
	fill_pages(buf, NPAGES, kb);
	ok = !madvise(buf, SIZE, MADV_PAGEOUT);
	ok = ok && all_swapped(buf, NPAGES, name);
	ok = all_verified(buf, NPAGES, kb, name) && ok;
	munmap(buf, SIZE);
	ktap_result(ok, name);
}

/* Soft-dirty set on every third page only; it must survive swap-out. */
static void test_soft_dirty(void)
{
	const char *name = "soft_dirty_preserved_64k";
	char *buf = map_aligned(SIZE, PMD_SIZE);
	size_t wrong = 0;
	int ok = 1;

	folio_size(64);
	fill_pages(buf, NPAGES, 55);
	write_str("/proc/self/clear_refs", "4");
	for (size_t pg = 0; pg < NPAGES; pg += 3)
		/* rewrite one word with its own value: a write all the same */
		((volatile char *)buf)[pg * PAGE_SIZE + 8] = buf[pg * PAGE_SIZE + 8];
	if (madvise(buf, SIZE, MADV_PAGEOUT))
		ok = 0;
	ok = ok && all_swapped(buf, NPAGES, name);
	for (size_t pg = 0; pg < NPAGES; pg++) {
		int want = pg % 3 == 0;
		int have = !!(pagemap_entry(buf + pg * PAGE_SIZE) &
			      PM_SOFT_DIRTY);

		if (want != have && wrong++ < 4)
			ktap_diag("page %zu: soft-dirty %d, expected %d", pg,
				  have, want);
	}
	ok = ok && !wrong;
	ok = all_verified(buf, NPAGES, 55, name) && ok;
	munmap(buf, SIZE);
	ktap_result(ok, name);
}

/* uffd-wp on every other page; the marker bit must survive swap-out. */
static void test_uffd_wp(void)
{
	const char *name = "uffd_wp_preserved_64k";
	char *buf = map_aligned(SIZE, PMD_SIZE);
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	size_t wrong = 0;
	int ok = 1, uffd;

	folio_size(64);
	fill_pages(buf, NPAGES, 57);
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api)) {
		ktap_skip(name, "userfaultfd not available");
		return;
	}
	reg.range.start = (uintptr_t)buf;
	reg.range.len = SIZE;
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		ktap_skip(name, "uffd-wp not supported");
		return;
	}
	for (size_t pg = 0; pg < NPAGES; pg += 2) {
		struct uffdio_writeprotect wp = {
			.range = { (uintptr_t)buf + pg * PAGE_SIZE, PAGE_SIZE },
			.mode = UFFDIO_WRITEPROTECT_MODE_WP,
		};

		if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
			die("UFFDIO_WRITEPROTECT");
	}
	if (madvise(buf, SIZE, MADV_PAGEOUT))
		ok = 0;
	ok = ok && all_swapped(buf, NPAGES, name);
	for (size_t pg = 0; pg < NPAGES; pg++) {
		int want = pg % 2 == 0;
		int have = !!(pagemap_entry(buf + pg * PAGE_SIZE) & PM_UFFD_WP);

		if (want != have && wrong++ < 4)
			ktap_diag("page %zu: uffd-wp %d, expected %d", pg, have,
				  want);
	}
	ok = ok && !wrong;
	ok = all_verified(buf, NPAGES, 57, name) && ok;	/* reads: no wp fault */
	close(uffd);
	munmap(buf, SIZE);
	ktap_result(ok, name);
}

/*
 * After fork and the child's exit, the parent's pages are no longer
 * anon-exclusive; writing every other page makes those exclusive again, so
 * each 64K folio holds a mix. Swap-out must keep every page's data.
 */
static void test_fork_mixed_exclusive(void)
{
	const char *name = "fork_mixed_anon_exclusive_64k";
	char *buf = map_aligned(SIZE, PMD_SIZE);
	pid_t pid;
	int ok;

	folio_size(64);
	fill_pages(buf, NPAGES, 7);
	pid = fork();
	if (pid == 0)
		_exit(verify_pages(buf, NPAGES, 7) ? 1 : 0);
	waitpid(pid, NULL, 0);
	for (size_t pg = 0; pg < NPAGES; pg += 2) {
		uint64_t *q = (uint64_t *)(buf + pg * PAGE_SIZE);

		for (size_t w = 0; w < PAGE_SIZE / 8; w++)
			q[w] = pattern(pg, w, 7);	/* same value: a write */
	}
	ok = !madvise(buf, SIZE, MADV_PAGEOUT);
	ok = ok && all_swapped(buf, NPAGES, name);
	ok = all_verified(buf, NPAGES, 7, name) && ok;
	munmap(buf, SIZE);
	ktap_result(ok, name);
}

static long swap_free_kb(void)
{
	return proc_field("/proc/meminfo", "SwapFree");
}

/*
 * One swapped-out page shared by more than 62 processes: the swap count
 * overflows swap_map into a continuation page. Every sharer reads it back;
 * when all are gone the swap space is free again.
 */
#define CONT_PAGES 1024

static void test_swap_count_continuation(void)
{
	const char *name = "swap_count_continuation_70_sharers";
	/* the per-CPU swap slot caches may hold 128 entries per CPU */
	long slack = 128 * 4 * sysconf(_SC_NPROCESSORS_ONLN);
	long before = swap_free_kb(), after;
	char *buf = map_aligned(CONT_PAGES * PAGE_SIZE, PMD_SIZE);
	int ok, bad = 0, pipefd[2];
	pid_t pids[70];

	folio_size(4);
	fill_pages(buf, CONT_PAGES, 62);
	ok = !madvise(buf, CONT_PAGES * PAGE_SIZE, MADV_PAGEOUT);
	ok = ok && all_swapped(buf, CONT_PAGES, name);
	if (pipe(pipefd))
		die("pipe");
	for (int i = 0; i < 70; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			char c;

			/* hold the swap entries until all 70 exist */
			if (read(pipefd[0], &c, 1) != 1)
				_exit(2);
			_exit(verify_pages(buf, CONT_PAGES, 62) ? 1 : 0);
		}
	}
	close(pipefd[0]);
	for (int i = 0; i < 70; i++)
		if (write(pipefd[1], "x", 1) != 1)
			die("write pipe");
	for (int i = 0; i < 70; i++) {
		int st;

		waitpid(pids[i], &st, 0);
		bad += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	close(pipefd[1]);
	if (bad)
		ktap_diag("%s: %d children read back wrong data", name, bad);
	ok = all_verified(buf, CONT_PAGES, 62, name) && ok && !bad;
	munmap(buf, CONT_PAGES * PAGE_SIZE);
	after = swap_free_kb();
	if (after < before - slack) {
		ktap_diag("%s: SwapFree %ld kB, was %ld kB", name, after,
			  before);
		ok = 0;
	}
	ktap_result(ok, name);
}

/* swapoff must bring every swapped-out mTHP page back intact. */
static void test_swapoff_mthp(void)
{
	const char *name = "swapoff_with_swapped_out_64k";
	char *buf = map_aligned(SIZE, PMD_SIZE);
	int ok;

	folio_size(64);
	fill_pages(buf, NPAGES, 64);
	ok = !madvise(buf, SIZE, MADV_PAGEOUT);
	ok = ok && all_swapped(buf, NPAGES, name);
	if (system("swapoff /dev/zram0")) {
		ktap_diag("%s: swapoff failed", name);
		ok = 0;
	}
	ok = all_verified(buf, NPAGES, 64, name) && ok;
	if (system("swapon /dev/zram0"))
		ktap_diag("%s: swapon failed", name);
	munmap(buf, SIZE);
	ktap_result(ok, name);
}

int main(void)
{
	ktap_plan(8);
	test_pageout(4, "pageout_4k");
	test_pageout(64, "pageout_64k");
	test_pageout(2048, "pageout_pmd");
	test_soft_dirty();
	test_uffd_wp();
	test_fork_mixed_exclusive();
	test_swap_count_continuation();
	test_swapoff_mthp();
	return ktap_finish();
}

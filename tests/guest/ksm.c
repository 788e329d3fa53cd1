// SPDX-License-Identifier: GPL-2.0
/*
 * ksm: KSM pages through the paths that walk their rmap. Merged pages are
 * shared with forked children and swapped out; an mremap-moved KSM page
 * still migrates and swaps out (the address-based narrowing broke this);
 * and with FL_KSM_VMAS (default 20000) one-page VMAs on one anon_vma every
 * page migrates with move_pages(). Merged pages that are COWed, aged by
 * smart scan, merged again, unmerged and merged again still migrate (the
 * rmap_item's remembered page index follows them). A merge that fails
 * (one page held by a pipe) is retried in every scan, and a page COWed from
 * a KSM page without a change merges again in the next scan, and so does a
 * pair whose merge failed for want of a stable node (failslab). A KSM page
 * poisoned with MADV_HWPOISON in a process of many VMAs, moved by mremap()
 * and forked, gets both processes killed early (collect_procs_ksm() finds them at the
 * page's index). All data is verified in every process.
 */
#include "guestlib.h"

#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#define KSM "/sys/kernel/mm/ksm/"
#define MEMCG "fltest-ksm"
#define MPOL_MF_MOVE_ALL (1 << 2)

/*
 * Identical content in groups of @group pages (so several KSM pages), a
 * group's content given by @seed and its number.
 */
static void fill_runs(char *buf, size_t npages, size_t group, uint64_t seed)
{
	for (size_t pg = 0; pg < npages; pg++) {
		uint64_t *q = (uint64_t *)(buf + pg * PAGE_SIZE);

		for (size_t w = 0; w < PAGE_SIZE / 8; w++)
			q[w] = pattern(pg / group, w, seed);
	}
}

/* Pages @first..@end-1 of @buf that do not hold what fill_runs() wrote. */
static size_t check_run_pages(const char *buf, size_t first, size_t end,
			      size_t group, uint64_t seed)
{
	size_t bad = 0;

	for (size_t pg = first; pg < end; pg++) {
		const uint64_t *q = (const uint64_t *)(buf + pg * PAGE_SIZE);

		for (size_t w = 0; w < PAGE_SIZE / 8; w++)
			if (q[w] != pattern(pg / group, w, seed)) {
				bad++;
				break;
			}
	}
	return bad;
}

/* Pages of @buf that do not hold what fill_runs() wrote. */
static size_t check_runs(const char *buf, size_t npages, size_t group,
			 uint64_t seed)
{
	return check_run_pages(buf, 0, npages, group, seed);
}

#define GROUP_SEED 0x4b534d
#define PAIR_SEED 0x636f7770

static void fill_groups(char *buf, size_t npages)
{
	fill_runs(buf, npages, 64, GROUP_SEED);
}

static size_t check_groups(const char *buf, size_t npages)
{
	return check_runs(buf, npages, 64, GROUP_SEED);
}

/* How many times the page at @addr is mapped (0 if none is mapped there). */
static uint64_t mapcount_of(const void *addr)
{
	static int fd = -1;

	return kpage_word("/proc/kpagecount", &fd, addr);
}

/*
 * How many of @pages are merged right now: mapped more than once, since
 * these tests merge only within one process and fork only afterwards.
 * (6.12's /proc/kpageflags sets KPF_KSM on every anonymous page: it tests
 * the mapping's low bits with & instead of comparing them, so it cannot
 * tell.)
 */
static size_t ksm_count(char **pages, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += mapcount_of(pages[i]) >= 2;
	return k;
}

/*
 * Run ksmd until at least @want of @pages are KSM pages, then stop it.
 * (The global pages_shared/pages_sharing counters lag behind unmaps of
 * earlier tests, so they cannot tell.)
 */
static int merge(char **pages, size_t n, size_t want)
{
	size_t k = 0;

	write_str(KSM "pages_to_scan", "20000");
	write_str(KSM "sleep_millisecs", "0");
	write_str(KSM "run", "1");
	for (int i = 0; i < 600 && k < want; i++) {
		usleep(100 * 1000);
		k = ksm_count(pages, n);
	}
	/* run=0 keeps the merged pages; a scanning ksmd blocks migration */
	write_str(KSM "run", "0");
	if (k < want)
		ktap_diag("KSM merged %zu of %zu pages (wanted %zu)", k, n,
			  want);
	return k >= want;
}

static char **page_list(char *buf, size_t n)
{
	char **pages = calloc(n, sizeof(char *));

	for (size_t i = 0; i < n; i++)
		pages[i] = buf + i * PAGE_SIZE;
	return pages;
}

/* The NUMA node that @page is not on (the guest has two). */
static int other_node(char *page)
{
	int status = -1;

	if (syscall(SYS_move_pages, 0, 1, &page, NULL, &status, 0) ||
	    status < 0)
		die("move_pages (query)");
	return !status;
}

static int move_all(char **pages, size_t n, int node, const char *name)
{
	int *nodes = calloc(n, sizeof(int)), *status = calloc(n, sizeof(int));
	size_t moved = 0;

	for (size_t i = 0; i < n; i++)
		nodes[i] = node;
	if (syscall(SYS_move_pages, 0, n, pages, nodes, status,
		    MPOL_MF_MOVE_ALL) < 0)
		ktap_diag("%s: move_pages: %s", name, strerror(errno));
	/* pages sharing a KSM page move with the first of them: ask again */
	syscall(SYS_move_pages, 0, n, pages, NULL, status, 0);
	for (size_t i = 0; i < n; i++)
		moved += status[i] == node;
	if (moved != n)
		ktap_diag("%s: %zu of %zu pages on node %d", name, moved, n,
			  node);
	free(nodes);
	free(status);
	return moved == n;
}

static void test_merge_fork_swap(void)
{
	const char *name = "merge_fork_swapout_verify";
	size_t n = 1024, bad = 0;
	char *buf = map_aligned(n * PAGE_SIZE, PMD_SIZE);
	char **pages = page_list(buf, n);
	long pswp0;
	int ok, st, go[2];
	pid_t kids[2];

	fill_groups(buf, n);
	madvise(buf, n * PAGE_SIZE, MADV_MERGEABLE);
	ok = merge(pages, n, n * 9 / 10);
	free(pages);
	if (pipe(go))
		die("pipe");
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			char c;

			if (read(go[0], &c, 1) != 1)
				_exit(2);
			_exit(check_groups(buf, n) ? 1 : 0);
		}
	}
	pswp0 = proc_field("/proc/vmstat", "pswpout");
	memcg_reclaim(MEMCG, n * PAGE_SIZE * 4);
	if (proc_field("/proc/vmstat", "pswpout") <= pswp0) {
		ktap_diag("%s: nothing was swapped out", name);
		ok = 0;
	}
	if (write(go[1], "gg", 2) != 2)
		die("write");
	for (int i = 0; i < 2; i++) {
		waitpid(kids[i], &st, 0);
		bad += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	bad += check_groups(buf, n);
	if (bad)
		ktap_diag("%s: wrong data in %zu process(es)/pages", name, bad);
	munmap(buf, n * PAGE_SIZE);
	ktap_result(ok && !bad, name);
}

static int check_5a(char **pages, const char *name)
{
	for (int i = 0; i < 3; i++)
		for (size_t b = 0; b < PAGE_SIZE; b++)
			if (pages[i][b] != 0x5a) {
				ktap_diag("%s: page %d byte %zu wrong", name, i,
					  b);
				return 0;
			}
	return 1;
}

/*
 * Three identical pages; the middle one is moved with mremap, so its
 * address no longer matches its linear page index. Once KSM has merged
 * them, the moved page must swap out with the others (reclaim walks the
 * KSM rmap), and once merged again it must migrate with them. Swap-out
 * comes first: on vanilla 6.12 with the classic LRU, memcg reclaim did not
 * evict a just-migrated KSM folio in 32 passes (seen while writing this
 * test; MGLRU did; not investigated further).
 */
static void test_mremap_moved(void)
{
	const char *name = "mremap_moved_ksm_page_swaps_and_migrates";
	char *buf = map_aligned(3 * PAGE_SIZE, PMD_SIZE);
	char *far = map_aligned(PMD_SIZE, PMD_SIZE) + 5 * PAGE_SIZE;
	char *pages[3];
	int ok, out = 0;

	for (int i = 0; i < 3; i++)
		memset(buf + i * PAGE_SIZE, 0x5a, PAGE_SIZE);
	madvise(buf, 3 * PAGE_SIZE, MADV_MERGEABLE);
	pages[1] = mremap(buf + PAGE_SIZE, PAGE_SIZE, PAGE_SIZE,
			  MREMAP_MAYMOVE | MREMAP_FIXED, far);
	if (pages[1] == MAP_FAILED)
		die("mremap");
	pages[0] = buf;
	pages[2] = buf + 2 * PAGE_SIZE;
	ok = merge(pages, 3, 3);
	/*
	 * arm64 makes new PTEs young (PTE_AF is in the page protection), so
	 * the PTEs KSM installed are young there and the classic LRU's first
	 * pass activates the folio instead of reclaiming it (and it then waits
	 * on the active list: 50 passes were not enough). Age them as x86
	 * has them.
	 */
	write_str("/proc/self/clear_refs", "1");
	/* a reclaim pass may only deactivate or age them: retry */
	for (int i = 0; i < 50 && !out; i++) {
		usleep(100 * 1000);
		memcg_reclaim(MEMCG, 64UL << 20);
		out = 1;
		for (int j = 0; j < 3; j++)
			out &= !!(pagemap_entry(pages[j]) & PM_SWAP);
	}
	if (!out)
		ktap_diag("%s: the KSM page was not swapped out", name);
	ok = check_5a(pages, name) && ok && out;
	ok = merge(pages, 3, 3) && ok;
	ok = move_all(pages, 3, other_node(pages[1]), name) && ok;
	ok = move_all(pages, 3, other_node(pages[1]), name) && ok;
	ok = check_5a(pages, name) && ok;
	ktap_result(ok, name);
}

/* Verify what fill_runs() wrote, unmap @buf and report the result. */
static void finish_runs(char *buf, char **pages, size_t n, size_t group,
			uint64_t seed, int ok, const char *name)
{
	size_t bad = check_runs(buf, n, group, seed);

	if (bad) {
		ktap_diag("%s: %zu pages wrong", name, bad);
		ok = 0;
	}
	munmap(buf, n * PAGE_SIZE);
	free(pages);
	ktap_result(ok, name);
}

static void finish_groups(char *buf, char **pages, size_t n, int ok,
			  const char *name)
{
	finish_runs(buf, pages, n, 64, GROUP_SEED, ok, name);
}

/* Let ksmd make @n more full scans, then stop it. */
static int full_scans(int n)
{
	long start = read_long(KSM "full_scans");
	int ok = 0;

	write_str(KSM "run", "1");
	for (int i = 0; i < 600 && !ok; i++) {
		usleep(100 * 1000);
		ok = read_long(KSM "full_scans") >= start + n;
	}
	write_str(KSM "run", "0");
	return ok;
}

/*
 * Smart scan keeps an age in each rmap_item, in storage that a stable item
 * may use for its page index. Merge, COW every other page (its stable item
 * now maps a non-KSM page), let smart scan age them over several scans,
 * make them identical again and merge; then MADV_UNMERGEABLE and merge once
 * more. After each merge every page must migrate, which needs every
 * mapping found by the KSM rmap walk.
 */
static void test_smart_scan_cycles(void)
{
	const char *name = "ksm_cow_smart_scan_remerge_migrates";
	size_t n = 512;
	char *buf = map_aligned(n * PAGE_SIZE, PMD_SIZE);
	char **pages = page_list(buf, n);
	int ok;

	write_str(KSM "smart_scan", "1");
	fill_groups(buf, n);
	madvise(buf, n * PAGE_SIZE, MADV_MERGEABLE);
	ok = merge(pages, n, n);
	for (size_t pg = 0; pg < n; pg += 2)
		((uint64_t *)pages[pg])[7] ^= pg + 1;	/* COW, now unique */
	if (!full_scans(6)) {
		ktap_diag("%s: ksmd made no 6 full scans", name);
		ok = 0;
	}
	if (ksm_count(pages, n) > n / 2) {
		ktap_diag("%s: %zu of %zu pages KSM after COW of half", name,
			  ksm_count(pages, n), n);
		ok = 0;
	}
	for (size_t pg = 0; pg < n; pg += 2)
		((uint64_t *)pages[pg])[7] ^= pg + 1;	/* identical again */
	ok = merge(pages, n, n) && ok;
	ok = move_all(pages, n, other_node(pages[0]), name) && ok;
	madvise(buf, n * PAGE_SIZE, MADV_UNMERGEABLE);
	if (ksm_count(pages, n)) {
		ktap_diag("%s: %zu KSM pages left after MADV_UNMERGEABLE", name,
			  ksm_count(pages, n));
		ok = 0;
	}
	madvise(buf, n * PAGE_SIZE, MADV_MERGEABLE);
	ok = merge(pages, n, n) && ok;
	ok = move_all(pages, n, other_node(pages[0]), name) && ok;
	finish_groups(buf, pages, n, ok, name);
}

#define MERGE_EVENT TRACING "events/ksm/ksm_merge_with_ksm_page/enable"

/* Failed merges into a KSM page (error -EFAULT) in the trace since reset. */
static long failed_merges(void)
{
	return trace_lines_with("ksm_merge_with_ksm_page", "error -14");
}

/*
 * A merge that fails must leave the rmap_item's checksum alone: the page
 * index that the stable tree keeps shares its storage. Two identical pages
 * A < B, A held by a pipe (vmsplice), so that write_protect_page() refuses
 * it: each full scan, B is merged into a KSM page first and then A fails
 * and B is broken again. With the checksum kept, B tries again in every
 * scan; with it wiped by the failure, B's next scan only records a new
 * checksum, so it tries in every other scan. Without the pin, A and B
 * must merge within two scans.
 */
static void test_failed_merge_keeps_checksum(void)
{
	const char *name = "ksm_failed_merge_retried_every_scan";
	const int scans = 10;
	char *buf = map_aligned(2 * PAGE_SIZE, PMD_SIZE);
	char *pages[2] = { buf, buf + PAGE_SIZE };
	struct iovec iov = { .iov_base = buf, .iov_len = PAGE_SIZE };
	char sink[PAGE_SIZE];
	int pipefd[2], ok = 1;
	long failed, done;

	/* Content no other test has, so only A and B can merge. */
	for (size_t i = 0; i < PAGE_SIZE / 8; i++)
		((uint64_t *)buf)[i] = 0x6b736d6661696cULL ^ (i * 2654435761U);
	memcpy(buf + PAGE_SIZE, buf, PAGE_SIZE);
	if (pipe(pipefd) || vmsplice(pipefd[1], &iov, 1, 0) != PAGE_SIZE)
		die("vmsplice");
	write_str(KSM "smart_scan", "0");	/* every item, every scan */
	write_str(KSM "pages_to_scan", "20000");
	write_str(KSM "sleep_millisecs", "0");
	madvise(buf, 2 * PAGE_SIZE, MADV_MERGEABLE);
	full_scans(2);				/* checksums recorded */

	write_str(TRACING "trace", "");
	write_str(MERGE_EVENT, "1");
	done = read_long(KSM "full_scans");
	if (!full_scans(scans)) {
		ktap_diag("%s: ksmd made no %d full scans", name, scans);
		ok = 0;
	}
	write_str(MERGE_EVENT, "0");
	done = read_long(KSM "full_scans") - done;
	failed = failed_merges();
	ktap_diag("%s: %ld failed merges in %ld full scans", name, failed,
		  done);
	/* one per scan; the event switches on and off inside a scan */
	if (failed < done * 9 / 10 - 1) {
		ktap_diag("%s: a failed merge was not retried in the next scan",
			  name);
		ok = 0;
	}
	if (ksm_count(pages, 2)) {
		ktap_diag("%s: merged although A is held by a pipe", name);
		ok = 0;
	}

	if (read(pipefd[0], sink, sizeof(sink)) != PAGE_SIZE)	/* unpin A */
		die("read pipe");
	full_scans(2);
	if (ksm_count(pages, 2) != 2) {
		ktap_diag("%s: A and B not merged two scans after the unpin",
			  name);
		ok = 0;
	}
	if (memcmp(buf, buf + PAGE_SIZE, PAGE_SIZE) || memcmp(buf, sink,
							       PAGE_SIZE)) {
		ktap_diag("%s: page contents changed", name);
		ok = 0;
	}
	write_str(KSM "smart_scan", "1");
	close(pipefd[0]);
	close(pipefd[1]);
	madvise(buf, 2 * PAGE_SIZE, MADV_UNMERGEABLE);
	munmap(buf, 2 * PAGE_SIZE);
	ktap_result(ok, name);
}

/* Pairs of identical pages, each pair's content its own and this test's. */
static void fill_pairs(char *buf, size_t npages)
{
	fill_runs(buf, npages, 2, PAIR_SEED);
}

static size_t check_pairs(const char *buf, size_t npages)
{
	return check_runs(buf, npages, 2, PAIR_SEED);
}

/*
 * Exactly one full scan: ksmd scans everything in one batch
 * (pages_to_scan 20000) and then sleeps a second, in which it is stopped.
 */
static long one_full_scan(void)
{
	long start = read_long(KSM "full_scans");

	write_str(KSM "sleep_millisecs", "1000");
	write_str(KSM "run", "1");
	for (int i = 0; i < 600 && read_long(KSM "full_scans") == start; i++)
		usleep(20 * 1000);
	write_str(KSM "run", "0");
	usleep(1100 * 1000);	/* the sleep ends; ksmd sees run=0 */
	return read_long(KSM "full_scans") - start;
}

/*
 * Write every word of @pages[first], @pages[first + step], ... with the
 * value it holds: each page is COWed from its KSM page, content unchanged.
 */
static void cow_unchanged(char **pages, size_t n, size_t first, size_t step)
{
	for (size_t pg = first; pg < n; pg += step) {
		volatile uint64_t *q = (volatile uint64_t *)pages[pg];

		for (size_t w = 0; w < PAGE_SIZE / 8; w++)
			q[w] = q[w];
	}
}

/*
 * A page COWed from a KSM page without a change of content must merge
 * again in the next full scan, as in 6.12: its rmap_item keeps the checksum
 * of the content it was merged with. The item's page index shares storage
 * with that checksum, so an item that leaves the stable tree must get it
 * back; with it zeroed, the next scan only records a new checksum and the
 * page merges one scan later. Twice: with one page of each pair COWed (the
 * KSM page lives on: the stable tree takes the page back) and with both
 * (the KSM page is freed: the pair merges again through the unstable
 * tree). Every byte is verified after each merge.
 */
static void test_cow_unchanged_remerges(void)
{
	const char *name = "ksm_cow_unchanged_remerged_next_scan";
	const size_t n = 128;
	char *buf = map_aligned(n * PAGE_SIZE, PMD_SIZE);
	char **pages = page_list(buf, n);
	const char *how[] = { "one page of each pair", "both pages" };
	int ok;

	fill_pairs(buf, n);
	write_str(KSM "smart_scan", "0");	/* every item, every scan */
	madvise(buf, n * PAGE_SIZE, MADV_MERGEABLE);
	ok = merge(pages, n, n);
	for (int round = 0; round < 2; round++) {
		long scans;
		size_t merged;

		cow_unchanged(pages, n, 0, round ? 1 : 2);
		/* a KSM page mapped once does not count: none is left */
		if (ksm_count(pages, n)) {
			ktap_diag("%s: %zu pages still KSM after COW of %s",
				  name, ksm_count(pages, n), how[round]);
			ok = 0;
		}
		scans = one_full_scan();
		merged = ksm_count(pages, n);
		ktap_diag("%s: COW of %s: %zu of %zu pages merged after %ld full scan(s)",
			  name, how[round], merged, n, scans);
		if (scans != 1 || merged != n)
			ok = 0;
		if (check_pairs(buf, n)) {
			ktap_diag("%s: %zu pages wrong", name,
				  check_pairs(buf, n));
			ok = 0;
		}
		if (merged != n)
			ok = merge(pages, n, n) && ok;	/* for the next round */
	}
	write_str(KSM "sleep_millisecs", "0");
	write_str(KSM "smart_scan", "1");
	madvise(buf, n * PAGE_SIZE, MADV_UNMERGEABLE);
	finish_runs(buf, pages, n, 2, PAIR_SEED, ok, name);
}

/* ksmd's pid, from /proc/PID/comm; 0 if there is no ksmd. */
static pid_t ksmd_pid(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t pid = 0;

	while (d && !pid && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strcmp(comm, "ksmd\n"))
			pid = atoi(e->d_name);
		fclose(f);
	}
	if (d)
		closedir(d);
	return pid;
}

#define STABLE_PAIRS 32
#define STABLE_SEED 0x73746e6f6465
#define STABLE_FAIL_TIMES 100000

/*
 * A pair merged into a KSM page whose stable node cannot be allocated:
 * stable_tree_insert() returns NULL and cmp_and_merge_page() must break
 * both pages out of the KSM page again (break_cow()), each rmap_item
 * given back the checksum of the content, so that the pair merges in the
 * first full scan after the failures stop (as in 6.12; 7.3.4 zeroes the
 * checksum there and takes one scan more). failslab fails ksmd's slab
 * allocations (make-it-fail of ksmd) made inside cmp_and_merge_page(), or
 * the scan thread it is inlined into; so that the only ones left are the
 * stable nodes, every rmap_item is allocated before: each pair's second
 * page differs in one word through two scans and is made identical only
 * when the failures start. Asserted: failslab's failures used, every
 * pair merged (ksm_merge_with_ksm_page, error 0, both pages) and no page
 * left in a KSM page while they lasted, every byte afterwards, and the
 * merge one scan later.
 */
static void test_stable_node_alloc_failure(void)
{
	const char *name = "ksm_stable_node_alloc_failure_breaks_cow";
	const size_t n = 2 * STABLE_PAIRS;
	const char *fn = "cmp_and_merge_page";
	char *buf, **pages;
	long failed, merges, scans;
	size_t merged, bad;
	pid_t ksmd = ksmd_pid();
	unsigned long start, end;
	int ok = 1;

	if (!ksym_range(fn, &start, &end))
		fn = "ksm_scan_thread";
	if (!ksmd) {
		ktap_skip(name, "no ksmd in /proc (CONFIG_KSM)");
		return;
	}
	if (!failslab_usable(fn)) {
		ktap_skip(name, "no " FAILSLAB " with require-start "
			  "(CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_STACKTRACE_FILTER) "
			  "or no cmp_and_merge_page/ksm_scan_thread in /proc/kallsyms");
		return;
	}
	buf = map_aligned(n * PAGE_SIZE, PMD_SIZE);
	pages = page_list(buf, n);
	fill_runs(buf, n, 2, STABLE_SEED);
	for (size_t pg = 1; pg < n; pg += 2)
		((uint64_t *)pages[pg])[0] ^= 1;	/* unique for now */
	write_str(KSM "smart_scan", "0");	/* every item, every scan */
	write_str(KSM "pages_to_scan", "20000");
	write_str(KSM "sleep_millisecs", "0");
	madvise(buf, n * PAGE_SIZE, MADV_MERGEABLE);
	full_scans(2);			/* rmap_items allocated, checksums kept */
	if (ksm_count(pages, n)) {
		ktap_diag("%s: %zu pages merged before the pairs were identical",
			  name, ksm_count(pages, n));
		ok = 0;
	}

	for (size_t pg = 1; pg < n; pg += 2)
		((uint64_t *)pages[pg])[0] ^= 1;	/* the pairs now match */
	write_str(TRACING "trace", "");
	write_str(MERGE_EVENT, "1");
	failslab_arm(fn, STABLE_FAIL_TIMES);
	make_it_fail(ksmd, 1);
	/* the first scan records the second pages' checksums, the next merge */
	if (!full_scans(3)) {
		ktap_diag("%s: ksmd made no 3 full scans", name);
		ok = 0;
	}
	make_it_fail(ksmd, 0);
	failed = failslab_disarm(STABLE_FAIL_TIMES);
	write_str(MERGE_EVENT, "0");
	merges = trace_lines_with("ksm_merge_with_ksm_page", "error 0");
	merged = ksm_count(pages, n);
	ktap_diag("%s: %ld slab allocations failed, %ld page merges, %zu of %zu pages in a KSM page",
		  name, failed, merges, merged, n);
	if (failed < STABLE_PAIRS || merges < 2 * STABLE_PAIRS) {
		ktap_diag("%s: the pairs were not merged with their stable nodes failing",
			  name);
		ok = 0;
	}
	if (merged) {
		ktap_diag("%s: a failed stable tree insert left pages in a KSM page",
			  name);
		ok = 0;
	}
	bad = check_runs(buf, n, 2, STABLE_SEED);
	if (bad) {
		ktap_diag("%s: %zu pages wrong after the failures", name, bad);
		ok = 0;
	}

	scans = one_full_scan();
	merged = ksm_count(pages, n);
	ktap_diag("%s: %zu of %zu pages merged after %ld full scan(s) without failures",
		  name, merged, n, scans);
	if (scans != 1 || merged != n) {
		ktap_diag("%s: the pairs did not merge in the first scan (checksum lost by break_cow()?)",
			  name);
		ok = 0;
	}
	write_str(KSM "sleep_millisecs", "0");
	write_str(KSM "smart_scan", "1");
	madvise(buf, n * PAGE_SIZE, MADV_UNMERGEABLE);
	finish_runs(buf, pages, n, 2, STABLE_SEED, ok, name);
}

/* Many one-page VMAs on one anon_vma, merged, all moved, all verified. */
static void test_many_vmas(size_t n)
{
	char name[64];
	char *buf = map_aligned(n * PAGE_SIZE, PMD_SIZE);
	char **pages = page_list(buf, n);
	int ok;

	snprintf(name, sizeof(name), "ksm_%zu_vmas_move_pages", n);
	fill_groups(buf, n);
	madvise(buf, n * PAGE_SIZE, MADV_MERGEABLE);
	for (size_t pg = 1; pg < n; pg += 2)
		if (mprotect(buf + pg * PAGE_SIZE, PAGE_SIZE, PROT_READ))
			die("mprotect");
	ok = merge(pages, n, n * 95 / 100);
	ok = move_all(pages, n, other_node(pages[0]), name) && ok;
	finish_groups(buf, pages, n, ok, name);
}

/*
 * Memory failure on a KSM page (MADV_HWPOISON): collect_procs_ksm() finds
 * the processes to kill early through each rmap_item's anon_vma, at the
 * item's page index. A process that maps the page must get its SIGBUS at
 * the poisoning, not only when it touches the page later.
 */
static sigjmp_buf bus_jmp;
static volatile sig_atomic_t bus_code;
static void *volatile bus_addr;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	bus_code = si->si_code;
	bus_addr = si->si_addr;
	siglongjmp(bus_jmp, 1);
}

/* 1 if reading @p raises SIGBUS for a poisoned page (BUS_MCEERR_AR). */
static int read_is_poisoned(const char *p)
{
	bus_code = 0;
	if (sigsetjmp(bus_jmp, 1) == 0) {
		(void)*(volatile const char *)p;
		return 0;
	}
	return bus_code == BUS_MCEERR_AR;
}

/*
 * The pages of @buf other than the pair at @victim that do not hold their
 * pattern, and the pair's pages that do not raise SIGBUS when read.
 */
static size_t check_poisoned_pairs(const char *buf, size_t npages,
				   size_t victim)
{
	size_t bad = check_run_pages(buf, 0, victim, 2, PAIR_SEED) +
		     check_run_pages(buf, victim + 2, npages, 2, PAIR_SEED);

	bad += !read_is_poisoned(buf + victim * PAGE_SIZE);
	bad += !read_is_poisoned(buf + (victim + 1) * PAGE_SIZE);
	return bad;
}

static int is_pair_address(const char *buf, size_t victim, const void *a)
{
	return a == buf + victim * PAGE_SIZE ||
	       a == buf + (victim + 1) * PAGE_SIZE;
}

/*
 * The forked child: asks to be killed early, waits for the SIGBUS that
 * the parent's poisoning sends it, then checks its view of the data.
 * Exits 0 if all held.
 */
static void poisoned_child(const char *buf, size_t n, size_t victim,
			   int ready, int go, const char *name)
{
	struct timespec limit = { .tv_sec = 60 };
	siginfo_t si;
	sigset_t bus;
	size_t bad;
	char c = 'r';

	sigemptyset(&bus);
	sigaddset(&bus, SIGBUS);
	sigprocmask(SIG_BLOCK, &bus, NULL);
	if (prctl(PR_MCE_KILL, PR_MCE_KILL_SET, PR_MCE_KILL_EARLY, 0, 0) ||
	    write(ready, &c, 1) != 1)
		_exit(2);
	if (read(go, &c, 1) != 1)
		_exit(2);
	if (sigtimedwait(&bus, &si, &limit) != SIGBUS) {
		ktap_diag("%s: child: no SIGBUS at the poisoning", name);
		_exit(1);
	}
	if (si.si_code != BUS_MCEERR_AO ||
	    !is_pair_address(buf, victim, si.si_addr)) {
		ktap_diag("%s: child: SIGBUS code %d at %p, not BUS_MCEERR_AO in the pair",
			  name, si.si_code, si.si_addr);
		_exit(1);
	}
	sigprocmask(SIG_UNBLOCK, &bus, NULL);
	bad = check_poisoned_pairs(buf, n, victim);
	if (bad)
		ktap_diag("%s: child: %zu pages wrong", name, bad);
	_exit(bad ? 1 : 0);
}

/*
 * @n one-page VMAs on one anon_vma, moved by mremap() first (so a page's
 * linear index is its old address, not its new one), merged in pairs,
 * then forked: the parent poisons one KSM page. Both processes map it through VMAs on the
 * parent's anon_vma, so both must be killed early (the parent with
 * BUS_MCEERR_AR as madvise() returns, the child, which asked for early
 * kills, with BUS_MCEERR_AO), both must see SIGBUS at the pair's two
 * addresses afterwards, and every other page must keep its content in
 * both.
 */
static void test_hwpoison_many_vmas(size_t n)
{
	const char *name = "ksm_hwpoison_many_vmas_kills_early";
	char *first = map_aligned(n * PAGE_SIZE, PMD_SIZE);
	char *buf = map_aligned(n * PAGE_SIZE, PMD_SIZE);
	char **pages;
	struct sigaction sa = { .sa_sigaction = on_sigbus,
				.sa_flags = SA_SIGINFO };
	int ready[2], go[2], st, ok = 1;
	volatile int returned = 0;
	size_t victim = n, bad;
	pid_t kid;
	char c;

	fill_pairs(first, n);
	/* the two ranges do not overlap: no page's index is its new address */
	if (mremap(first, n * PAGE_SIZE, n * PAGE_SIZE,
		   MREMAP_MAYMOVE | MREMAP_FIXED, buf) != buf)
		die("mremap");
	pages = page_list(buf, n);
	madvise(buf, n * PAGE_SIZE, MADV_MERGEABLE);
	for (size_t pg = 1; pg < n; pg += 2)
		if (mprotect(buf + pg * PAGE_SIZE, PAGE_SIZE, PROT_READ))
			die("mprotect");
	merge(pages, n, n * 9 / 10);
	for (size_t pg = n / 2 & ~1UL; pg < n; pg += 2)
		if (mapcount_of(pages[pg]) >= 2) {
			victim = pg;
			break;
		}
	free(pages);
	if (victim == n) {
		ktap_diag("%s: no merged pair in the second half", name);
		ktap_result(0, name);
		return;
	}
	sigaction(SIGBUS, &sa, NULL);
	if (pipe(ready) || pipe(go))
		die("pipe");
	kid = fork();
	if (kid < 0)
		die("fork");
	if (kid == 0)
		poisoned_child(buf, n, victim, ready[1], go[0], name);
	if (read(ready[0], &c, 1) != 1 || write(go[1], "g", 1) != 1)
		die("child handshake");

	bus_code = 0;
	if (sigsetjmp(bus_jmp, 1) == 0) {
		if (madvise(buf + victim * PAGE_SIZE, PAGE_SIZE,
			    MADV_HWPOISON)) {
			if (errno == EINVAL)
				ktap_skip(name, "no CONFIG_MEMORY_FAILURE");
			else
				ktap_diag("%s: MADV_HWPOISON: %s", name,
					  strerror(errno));
			ok = 0;
		}
		returned = 1;
	}
	if (fl_skipped) {
		kill(kid, SIGKILL);
		waitpid(kid, &st, 0);
		signal(SIGBUS, SIG_DFL);
		munmap(buf, n * PAGE_SIZE);
		return;
	}
	if (returned || bus_code != BUS_MCEERR_AR ||
	    !is_pair_address(buf, victim, bus_addr)) {
		ktap_diag("%s: parent: %s (code %d at %p)", name,
			  returned ? "no SIGBUS at the poisoning" :
			  "SIGBUS not BUS_MCEERR_AR in the pair",
			  bus_code, bus_addr);
		ok = 0;
	}
	bad = check_poisoned_pairs(buf, n, victim);
	if (bad) {
		ktap_diag("%s: parent: %zu pages wrong", name, bad);
		ok = 0;
	}
	waitpid(kid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		ok = 0;
	signal(SIGBUS, SIG_DFL);
	munmap(buf, n * PAGE_SIZE);
	ktap_result(ok, name);
}

FL_FIXTURE(ksm)

/*
 * First: run after the fork test, the classic LRU's memcg reclaim did not
 * evict the KSM page in 32 passes (not investigated).
 */
FL_TEST(ksm, mremap_moved_ksm_page_swaps_and_migrates, 300)
{
	test_mremap_moved();
}
FL_TEST(ksm, merge_fork_swapout_verify, 300) { test_merge_fork_swap(); }
FL_TEST(ksm, ksm_cow_smart_scan_remerge_migrates, 300)
{
	test_smart_scan_cycles();
}
FL_TEST(ksm, ksm_failed_merge_retried_every_scan, 300)
{
	test_failed_merge_keeps_checksum();
}
FL_TEST(ksm, ksm_cow_unchanged_remerged_next_scan, 300)
{
	test_cow_unchanged_remerges();
}
FL_TEST(ksm, ksm_stable_node_alloc_failure_breaks_cow, 300)
{
	test_stable_node_alloc_failure();
}
/* FL_KSM_VMAS one-page VMAs (default 20000; 0: skip, it takes minutes) */
FL_TEST(ksm, ksm_many_vmas_move_pages, 1800)
{
	const char *vmas = getenv("FL_KSM_VMAS");
	size_t n = vmas ? strtoul(vmas, NULL, 10) : 20000;

	if (n)
		test_many_vmas(n);
	else
		ktap_skip("ksm_many_vmas_move_pages", "FL_KSM_VMAS=0");
}

/* FL_KSM_POISON_VMAS one-page VMAs (default 2048) */
FL_TEST(ksm, ksm_hwpoison_many_vmas_kills_early, 600)
{
	const char *vmas = getenv("FL_KSM_POISON_VMAS");

	test_hwpoison_many_vmas(vmas ? strtoul(vmas, NULL, 10) : 2048);
}

/* test_harness_run() exits: unmerged by fl_at_exit() */
static void unmerge_all(void)
{
	write_str(KSM "run", "2");
}

int main(int argc, char **argv)
{
	memcg_enter(MEMCG);
	folio_size(4);
	fl_at_exit(unmerge_all);
	return test_harness_run(argc, argv);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * stress: a seeded, randomized differential test of the paths the series
 * changes. One process keeps anonymous (64K mTHP, KSM-mergeable), shmem
 * and XFS file memory and a shadow of what every page must hold, and runs
 * a random mix of writes, MADV_PAGEOUT, MADV_FREE, MADV_DONTNEED, mprotect
 * splits, misaligned mremap moves, forks in which both sides write, and
 * KSM duplicates, while another process reclaims the memcg in a loop.
 * Every page is checked against the shadow every few operations and at
 * the end. A failure names the seed and the operation that exposed it:
 *
 *   stress SEED SECONDS    (the suite: FL_STRESS_SEEDS, FL_STRESS_SECONDS)
 *
 * Needs zram swap and /dev/ram0 (brd) for XFS.
 */
#include "guestlib.h"

#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>

#define MEMCG "fltest-stress"
#define XFS_DIR "/mnt/fltest-stress"
#define WORDS (PAGE_SIZE / 8)
#define VERIFY_EVERY 32

enum region_kind { R_ANON, R_SHMEM, R_FILE, NR_REGIONS };
static const char *const region_name[] = { "anon", "shmem", "xfs" };
static const size_t region_pages[] = { 512, 256, 256 };

/* What a page must hold. */
enum page_state {
	P_EXACT,	/* its content for (version, dup) */
	P_ZERO,		/* zeroes (anonymous, after MADV_DONTNEED) */
	P_ZERO_OR_EXACT,/* either (anonymous, lazy-free after MADV_FREE) */
};

struct shadow {
	uint32_t version;
	uint8_t dup;	/* content shared by all pages of this version (KSM) */
	uint8_t state;
};

struct region {
	enum region_kind kind;
	char *base;
	size_t npages;
	char *reserve;		/* PROT_NONE area the region moves within */
	size_t reserve_len;
	struct shadow *shadow;
};

static struct region regions[NR_REGIONS];
static uint64_t rng;
static uint32_t next_version = 1;
static unsigned long op_no;
static const char *op_name = "start";

static uint64_t rnd(void)
{
	/* xorshift64*: the whole run follows from the seed */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dULL;
}

static size_t rnd_below(size_t n)
{
	return n ? rnd() % n : 0;
}

static uint64_t content(const struct region *r, size_t pg,
			const struct shadow *s, size_t w)
{
	uint64_t who = s->dup ? 0 : ((uint64_t)r->kind << 40 | pg << 20);

	return 0x5eed000000000000ULL ^ who ^ (uint64_t)s->version << 8 ^ w;
}

static void write_page(struct region *r, size_t pg, int dup)
{
	struct shadow *s = &r->shadow[pg];
	uint64_t *q = (uint64_t *)(r->base + pg * PAGE_SIZE);

	s->version = next_version++;
	s->dup = dup;
	s->state = P_EXACT;
	for (size_t w = 0; w < WORDS; w++)
		q[w] = content(r, pg, s, w);
}

/* 0 if page @pg of @r holds what its shadow says, else print and 1. */
static int check_page(const struct region *r, size_t pg)
{
	const struct shadow *s = &r->shadow[pg];
	const uint64_t *q = (const uint64_t *)(r->base + pg * PAGE_SIZE);
	int zero = 1, exact = 1;

	for (size_t w = 0; w < WORDS; w++) {
		zero &= q[w] == 0;
		exact &= q[w] == content(r, pg, s, w);
	}
	if ((s->state == P_EXACT && exact) || (s->state == P_ZERO && zero) ||
	    (s->state == P_ZERO_OR_EXACT && (zero || exact)))
		return 0;
	ktap_diag("%s page %zu: state %d version %u dup %d, reads %#llx %#llx (after op %lu %s)",
		  region_name[r->kind], pg, s->state, s->version, s->dup,
		  (unsigned long long)q[0], (unsigned long long)q[WORDS - 1],
		  op_no, op_name);
	return 1;
}

static size_t check_all(void)
{
	size_t bad = 0;

	for (int k = 0; k < NR_REGIONS; k++)
		for (size_t pg = 0; pg < regions[k].npages; pg++)
			bad += check_page(&regions[k], pg);
	return bad;
}

/* A random run of 1..64 pages of @r: [*first, *first + return). */
static size_t pick_range(const struct region *r, size_t *first)
{
	size_t n = 1 + rnd_below(64);

	*first = rnd_below(r->npages);
	if (*first + n > r->npages)
		n = r->npages - *first;
	return n;
}

static void op_write(struct region *r, size_t first, size_t n)
{
	for (size_t pg = first; pg < first + n; pg++)
		write_page(r, pg, 0);
}

/* Identical content in every page of the range: KSM may merge them. */
static void op_ksm_dup(struct region *r, size_t first, size_t n)
{
	uint32_t v = next_version++;

	for (size_t pg = first; pg < first + n; pg++) {
		struct shadow *sh = &r->shadow[pg];
		uint64_t *q = (uint64_t *)(r->base + pg * PAGE_SIZE);

		sh->version = v;
		sh->dup = 1;
		sh->state = P_EXACT;
		for (size_t w = 0; w < WORDS; w++)
			q[w] = content(r, pg, sh, w);
	}
}

static void op_madvise(struct region *r, size_t first, size_t n, int advice)
{
	madvise(r->base + first * PAGE_SIZE, n * PAGE_SIZE, advice);
	if (r->kind != R_ANON)
		return;		/* shared memory keeps its data */
	for (size_t pg = first; pg < first + n; pg++) {
		if (advice == MADV_DONTNEED)
			r->shadow[pg].state = P_ZERO;
		else if (advice == MADV_FREE &&
			 r->shadow[pg].state == P_EXACT)
			r->shadow[pg].state = P_ZERO_OR_EXACT;
	}
}

/* Read-only for a moment, split off from its VMA, paged out meanwhile. */
static void op_mprotect_split(struct region *r, size_t first, size_t n)
{
	char *p = r->base + first * PAGE_SIZE;

	if (mprotect(p, n * PAGE_SIZE, PROT_READ))
		die("mprotect");
	madvise(p, n * PAGE_SIZE, MADV_PAGEOUT);
	for (size_t pg = first; pg < first + n; pg++)
		(void)*(volatile char *)(r->base + pg * PAGE_SIZE);
	if (mprotect(p, n * PAGE_SIZE, PROT_READ | PROT_WRITE))
		die("mprotect");
}

/* Move the whole region to a random page (not folio) aligned place. */
static void op_mremap(struct region *r)
{
	size_t len = r->npages * PAGE_SIZE, slots, off;
	char *to;

	slots = (r->reserve_len - len) / PAGE_SIZE;
	do {
		off = rnd_below(slots) * PAGE_SIZE;
		to = r->reserve + off;
	} while (to < r->base + len && r->base < to + len);
	if (mremap(r->base, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to) !=
	    to)
		die("mremap");
	/* keep the old place reserved, so nothing else is mapped there */
	if (mmap(r->base, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
		die("mmap reserve");
	r->base = to;
}

/*
 * fork(): the child writes some anonymous pages of its own and checks
 * everything it can see, while the parent writes others; neither may see
 * the other's anonymous writes.
 */
static int op_fork(void)
{
	struct region *r = &regions[R_ANON];
	pid_t kid;
	int st;

	kid = fork();
	if (kid == 0) {
		size_t first, n = pick_range(r, &first);

		next_version |= 0x80000000u;	/* the child's own versions */
		op_write(r, first, n);
		madvise(r->base + first * PAGE_SIZE, n * PAGE_SIZE,
			MADV_PAGEOUT);
		_exit(check_all() ? 1 : 0);
	}
	for (int i = 0; i < 4; i++) {
		size_t first, n = pick_range(r, &first);

		op_write(r, first, n);
	}
	if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) ||
	    WEXITSTATUS(st)) {
		ktap_diag("the child of fork at op %lu saw wrong data", op_no);
		return 1;
	}
	return 0;
}

static void setup_region(struct region *r, enum region_kind kind)
{
	size_t len = region_pages[kind] * PAGE_SIZE;
	int fd = -1;

	r->kind = kind;
	r->npages = region_pages[kind];
	r->shadow = calloc(r->npages, sizeof(*r->shadow));
	r->reserve_len = 4 * PMD_SIZE + len;
	r->reserve = mmap(NULL, r->reserve_len, PROT_NONE, MAP_PRIVATE |
			  MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r->reserve == MAP_FAILED || !r->shadow)
		die("reserve");
	if (kind == R_SHMEM)
		fd = memfd_create("fltest-stress", 0);
	else if (kind == R_FILE)
		fd = open(XFS_DIR "/data", O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (kind != R_ANON && (fd < 0 || ftruncate(fd, len)))
		die("shared file");
	/* start PMD-aligned inside the reservation */
	r->base = (char *)(((uintptr_t)r->reserve + PMD_SIZE - 1) &
			   ~(PMD_SIZE - 1));
	if (mmap(r->base, len, PROT_READ | PROT_WRITE,
		 MAP_FIXED | (kind == R_ANON ? MAP_PRIVATE | MAP_ANONYMOUS :
			      MAP_SHARED), fd, 0) == MAP_FAILED)
		die("mmap region");
	if (fd >= 0)
		close(fd);
	if (kind == R_ANON)
		madvise(r->base, len, MADV_MERGEABLE);
	for (size_t pg = 0; pg < r->npages; pg++)
		write_page(r, pg, 0);
}

/* memory.reclaim of the memcg in a loop until killed. */
static pid_t start_reclaimer(void)
{
	pid_t kid = fork();

	if (kid == 0) {
		for (;;) {
			memcg_reclaim(MEMCG, 256 * 1024);
			usleep(2000);
		}
	}
	return kid;
}

static int run(uint64_t seed, int seconds)
{
	time_t end = time(NULL) + seconds;
	size_t bad = 0;
	pid_t reclaimer;

	rng = seed * 0x9e3779b97f4a7c15ULL + 1;
	for (int k = 0; k < NR_REGIONS; k++)
		setup_region(&regions[k], k);
	reclaimer = start_reclaimer();
	for (op_no = 1; !bad && time(NULL) < end; op_no++) {
		struct region *r = &regions[rnd_below(NR_REGIONS)];
		size_t first, n = pick_range(r, &first);
		unsigned int which = rnd_below(100);

		if (which < 30) {
			op_name = "write";
			op_write(r, first, n);
		} else if (which < 45) {
			op_name = "pageout";
			op_madvise(r, first, n, MADV_PAGEOUT);
		} else if (which < 53) {
			op_name = "free";
			op_madvise(r, first, n, MADV_FREE);
		} else if (which < 60) {
			op_name = "dontneed";
			op_madvise(r, first, n, MADV_DONTNEED);
		} else if (which < 70) {
			op_name = "mprotect-split";
			op_mprotect_split(r, first, n);
		} else if (which < 76) {
			op_name = "mremap";
			op_mremap(r);
		} else if (which < 82) {
			op_name = "fork";
			bad += op_fork();
		} else if (which < 92) {
			op_name = "ksm-dup";
			op_ksm_dup(&regions[R_ANON], first % 448, 1 + n % 64);
		} else {
			op_name = "verify";
		}
		if (op_no % VERIFY_EVERY == 0 || which >= 92)
			bad += check_all();
	}
	kill(reclaimer, SIGKILL);
	waitpid(reclaimer, NULL, 0);
	bad += check_all();
	ktap_diag("seed %llu: %lu operations in %d s, %zu bad pages",
		  (unsigned long long)seed, op_no - 1, seconds, bad);
	if (bad)
		ktap_diag("reproduce: stress %llu %d (foliolab test --stress)",
			  (unsigned long long)seed, seconds);
	return bad ? 1 : 0;
}

/* One seed in a child, so that its maps are gone before XFS goes. */
static int run_seed(uint64_t seed, int seconds)
{
	pid_t kid;
	int st;

	kid = fork();
	if (kid == 0)
		_exit(run(seed, seconds));
	return waitpid(kid, &st, 0) == kid && WIFEXITED(st) && !WEXITSTATUS(st);
}

static uint64_t seeds[64];
static int nr_seeds, seconds = 10;

FL_FIXTURE(stress)

/* test_harness_run() exits: torn down by fl_at_exit() */
static void teardown(void)
{
	write_str("/sys/kernel/mm/ksm/run", "2");
	memcg_leave();
	umount(XFS_DIR);
}

/* Every seed runs even after one failed; each failing seed is named. */
FL_TEST(stress, seeds, 1800)
{
	for (int i = 0; i < nr_seeds; i++) {
		char what[64];

		snprintf(what, sizeof(what), "stress_seed_%llu",
			 (unsigned long long)seeds[i]);
		ktap_result(run_seed(seeds[i], seconds), what);
	}
}

/*
 * stress [SEED [SECONDS]]; without arguments the seeds in FL_STRESS_SEEDS
 * (default "1 2 3"), FL_STRESS_SECONDS (default 10) each.
 */
int main(int argc, char **argv)
{
	const char *env = getenv("FL_STRESS_SEEDS");
	const char *secs = getenv("FL_STRESS_SECONDS");
	char *end;

	if (argc > 1 && argv[1][0] != '-') {
		seeds[nr_seeds++] = strtoull(argv[1], NULL, 0);
		seconds = argc > 2 ? atoi(argv[2]) : 10;
		argc = 1;	/* the rest is ours, not the harness's */
	} else {
		for (const char *p = env && *env ? env : "1 2 3";
		     *p && nr_seeds < 64; p = end) {
			seeds[nr_seeds] = strtoull(p, &end, 0);
			if (end == p)
				break;
			nr_seeds++;
		}
		if (secs)
			seconds = atoi(secs);
	}
	mkdir(XFS_DIR, 0755);
	umount(XFS_DIR);
	if (system("mkfs.xfs -q -f /dev/ram0") ||
	    mount("/dev/ram0", XFS_DIR, "xfs", 0, NULL)) {
		printf("Bail out! no XFS on /dev/ram0 (brd)\n");
		return 1;
	}
	memcg_enter(MEMCG);
	folio_size(64);
	write_str("/sys/kernel/mm/ksm/sleep_millisecs", "20");
	write_str("/sys/kernel/mm/ksm/run", "1");
	fl_at_exit(teardown);
	return test_harness_run(argc, argv);
}

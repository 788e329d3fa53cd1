/* SPDX-License-Identifier: GPL-2.0 */
/*
 * foliolab's guest tests run on the kernel's own kselftest harness
 * (tools/testing/selftests/kselftest_harness.h of the tree under test, put
 * on the include path by the Makefile): one process per test case, a time
 * limit for each, KTAP output as from any selftest, so the tests could be
 * posted as selftests. A test body checks several things and reports each
 * with ktap_result(); FL_TEST() turns any failure into the test's "not ok"
 * and a ktap_skip() into its SKIP.
 */
#ifndef FOLIOLAB_FLTEST_H
#define FOLIOLAB_FLTEST_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kselftest_harness.h"

/* Per test: each runs in a child of the harness, so these start at zero. */
static int fl_failed, fl_skipped;
static char fl_skip_why[256];

static inline void ktap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* One check of a test: a failed check fails the test. */
static inline void ktap_result(int ok, const char *what)
{
	fl_failed += !ok;
	ktap_diag("%s: %s", what, ok ? "ok" : "FAILED");
}

/* The test cannot run here (e.g. a kernel option it needs is off). */
static inline void ktap_skip(const char *what, const char *why)
{
	fl_skipped = 1;
	snprintf(fl_skip_why, sizeof(fl_skip_why), "%s", why);
	ktap_diag("%s: skipped: %s", what, why);
}

/*
 * test_harness_run() ends with exit(): a program's teardown goes here. It
 * runs in the program's main process only, not in a test's child that
 * calls exit() (die()).
 */
static pid_t fl_main_pid;
static void (*fl_teardown_fn)(void);

static void fl_teardown(void)
{
	if (getpid() == fl_main_pid)
		fl_teardown_fn();
}

static inline void fl_at_exit(void (*fn)(void))
{
	fl_main_pid = getpid();
	fl_teardown_fn = fn;
	atexit(fl_teardown);
}

/* An empty fixture: the tests keep no state between cases. */
#define FL_FIXTURE(f)			\
	FIXTURE(f) {};			\
	FIXTURE_SETUP(f) {}		\
	FIXTURE_TEARDOWN(f) {}

/*
 * FL_TEST(fixture, name, seconds) { body } — a test case with its own
 * time limit (QEMU TCG on a debug kernel is slow: give minutes).
 */
#define FL_TEST(f, name, seconds)					\
	static void fl_body_##name(void);				\
	TEST_F_TIMEOUT(f, name, seconds)				\
	{								\
		fl_body_##name();					\
		if (fl_skipped)						\
			SKIP(return, "%s", fl_skip_why);		\
		EXPECT_EQ(0, fl_failed);				\
	}								\
	static void fl_body_##name(void)

#endif

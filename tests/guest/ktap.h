/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal KTAP output for foliolab's guest tests, in kselftest's format:
 * a plan, "ok N name" / "not ok N name" / "ok N name # SKIP why", and
 * "# " diagnostics. Every result line is flushed at once so a kernel crash
 * mid-test still leaves what was reported.
 */
#ifndef FOLIOLAB_KTAP_H
#define FOLIOLAB_KTAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int ktap_n, ktap_failed;

static inline void ktap_plan(int n)
{
	printf("KTAP version 1\n1..%d\n", n);
	fflush(stdout);
}

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

static inline void ktap_result(int ok, const char *name)
{
	printf("%s %d %s\n", ok ? "ok" : "not ok", ++ktap_n, name);
	ktap_failed += !ok;
	fflush(stdout);
}

static inline void ktap_skip(const char *name, const char *why)
{
	printf("ok %d %s # SKIP %s\n", ++ktap_n, name, why);
	fflush(stdout);
}

static inline int ktap_finish(void)
{
	return ktap_failed ? 1 : 0;
}

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A host test's stand-in for the counting window markers (FL_MARK in
 * foliolab/workloads/common/common.h), given to gcc with -include: each
 * marker a workload program executes writes "@@mark begin|end TAG PID"
 * to stderr, in one write(2), instead of being the no-op the counter
 * plugin recognises. The test then sees which windows a program opens
 * and closes, in what order, and from which process.
 */
#ifndef FL_MARK_LOG_H
#define FL_MARK_LOG_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* as common.h asks, before any libc header */
#endif

#include <stdio.h>
#include <unistd.h>

static inline void fl_mark_log(int word)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "@@mark %s %d %d\n",
			 (word & 0x80) ? "end" : "begin", word & 0x7f,
			 (int)getpid());

	if (write(2, line, n) != n)
		_exit(99);
}

#define FL_MARK(word) fl_mark_log(word)

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A host test's stand-in for the counting window markers (FL_MARK in
 * foliolab/workloads/common/common.h), given to gcc with -include: each
 * marker a workload program executes writes "@@mark begin|end TAG PID"
 * to stderr, in one write(2), instead of being the no-op the counter
 * plugin recognises. The test then sees which windows a program opens
 * and closes, in what order, and from which process.
 *
 * To see what the program's tasks do on either side of a marker, the
 * test links with -Wl,--wrap=munmap,--wrap=sched_setaffinity,--wrap=close:
 * with FL_MARK_LOG_CALLS set in the environment each such call (the
 * program's own, not libc's inside fclose or free) writes "@@call NAME
 * PID" once it returned. Two delays widen the races a marker's
 * place could lose: FL_MARK_LOG_END_DELAY_MS before an end marker is
 * logged (a task that goes on meanwhile shows before it), and
 * FL_MARK_LOG_PIN_DELAY_MS before each sched_setaffinity (a task that
 * pins itself late shows after the begin).
 */
#ifndef FL_MARK_LOG_H
#define FL_MARK_LOG_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* as common.h asks, before any libc header */
#endif

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static inline void fl_log_line(const char *line, int n)
{
	if (write(2, line, n) != n)
		_exit(99);
}

static inline void fl_log_delay(const char *env)
{
	const char *ms = getenv(env);
	struct timespec ts;

	if (!ms)
		return;
	ts.tv_sec = atol(ms) / 1000;
	ts.tv_nsec = atol(ms) % 1000 * 1000000L;
	nanosleep(&ts, NULL);
}

static inline void fl_mark_log(int word)
{
	char line[64];
	int n;

	if (word & 0x80)
		fl_log_delay("FL_MARK_LOG_END_DELAY_MS");
	n = snprintf(line, sizeof(line), "@@mark %s %d %d\n",
		     (word & 0x80) ? "end" : "begin", word & 0x7f,
		     (int)getpid());
	fl_log_line(line, n);
}

static inline void fl_call_log(const char *name)
{
	char line[96];
	int n;

	if (!getenv("FL_MARK_LOG_CALLS"))
		return;
	n = snprintf(line, sizeof(line), "@@call %s %d\n", name,
		     (int)getpid());
	fl_log_line(line, n);
}

int __real_munmap(void *addr, size_t len);
int __real_sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set);
int __real_close(int fd);

int __wrap_munmap(void *addr, size_t len)
{
	int ret = __real_munmap(addr, len);

	fl_call_log("munmap");
	return ret;
}

int __wrap_sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
	int ret;

	fl_log_delay("FL_MARK_LOG_PIN_DELAY_MS");
	ret = __real_sched_setaffinity(pid, size, set);
	fl_call_log("sched_setaffinity");
	return ret;
}

int __wrap_close(int fd)
{
	int ret = __real_close(fd);

	fl_call_log("close");
	return ret;
}

#define FL_MARK(word) fl_mark_log(word)

#endif

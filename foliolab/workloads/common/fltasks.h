/* SPDX-License-Identifier: GPL-2.0 */
/*
 * N tasks over the CPUs, as processes (fork) or as threads of one
 * process, for the general workloads (page-fault, usemem, time-unmap,
 * lru-file-readonce, ...): the axis will-it-scale calls processes and
 * threads. Task i runs fn(i, arg), pinned to CPU i modulo the CPUs
 * online when pin is set (will-it-scale puts each task on a core of its
 * own). What the tasks share goes in memory from fl_shared(), which a
 * fork keeps shared.
 */
#ifndef FOLIOLAB_FLTASKS_H
#define FOLIOLAB_FLTASKS_H

#include "common.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define FL_MAX_TASKS 64

typedef void (*fl_task_fn)(int id, void *arg);

/* Zeroed memory the tasks share, processes or threads. */
static inline void *fl_shared(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap shared");
	return p;
}

static inline void fl_pin_cpu(int cpu)
{
	cpu_set_t set;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	CPU_ZERO(&set);
	CPU_SET(cpu % (n > 0 ? n : 1), &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

struct fl_task {
	pthread_t thread;
	pid_t pid;
	int id, pin;
	fl_task_fn fn;
	void *arg;
};

static void *fl_task_thread(void *p)
{
	struct fl_task *t = p;

	if (t->pin)
		fl_pin_cpu(t->id);
	t->fn(t->id, t->arg);
	return NULL;
}

/* Start n tasks; fl_wait_tasks() waits for them. */
static inline struct fl_task *fl_start_tasks(int n, int threads, int pin,
					     fl_task_fn fn, void *arg)
{
	struct fl_task *t = calloc(n, sizeof(*t));

	if (!t)
		die("calloc");
	for (int i = 0; i < n; i++) {
		t[i] = (struct fl_task){ .id = i, .pin = pin, .fn = fn,
					 .arg = arg };
		if (threads) {
			if (pthread_create(&t[i].thread, NULL, fl_task_thread,
					   &t[i]))
				die("pthread_create");
			continue;
		}
		t[i].pid = fork();
		if (t[i].pid < 0)
			die("fork");
		if (t[i].pid == 0) {
			fl_task_thread(&t[i]);
			_exit(0);
		}
	}
	return t;
}

/* Wait for every task; the number that failed (a process's exit). */
static inline int fl_wait_tasks(struct fl_task *t, int n, int threads)
{
	int failed = 0, status;

	for (int i = 0; i < n; i++) {
		if (threads) {
			pthread_join(t[i].thread, NULL);
			continue;
		}
		if (waitpid(t[i].pid, &status, 0) < 0 ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			failed++;
	}
	free(t);
	return failed;
}

/*
 * Wait for n task processes in whichever order they end, where tasks
 * wait for each other (to be ready, to have finished): fl_wait_tasks
 * waits in order, so a task that died (die(), the OOM killer) left the
 * others waiting for it, and the parent for them, until the boot timed
 * out. At the first that failed (exited non-zero or was killed) *abort,
 * in the memory the tasks share, is set: the tasks check it wherever
 * they wait for the others, and give up. The caller must have no other
 * children (their exits would be taken here). The number that failed.
 */
static inline int fl_wait_processes(struct fl_task *t, int n,
				    _Atomic int *abort)
{
	int failed = 0, left = n, status;

	while (left > 0) {
		pid_t pid = waitpid(-1, &status, 0);

		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0) {	/* ECHILD: the rest were not seen to end */
			failed += left;
			atomic_store(abort, 1);
			break;
		}
		for (int i = 0; i < n; i++) {
			if (t[i].pid != pid)
				continue;
			left--;
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				failed++;
				atomic_store(abort, 1);
			}
		}
	}
	free(t);
	return failed;
}

/* Sleep @ms milliseconds (nanosleep: no signal ends it early here). */
static inline void fl_sleep_ms(double ms)
{
	struct timespec ts = { (time_t)(ms / 1e3),
			       (long)((ms - (time_t)(ms / 1e3) * 1e3) * 1e6) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

#endif

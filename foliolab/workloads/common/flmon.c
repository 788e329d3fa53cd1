// SPDX-License-Identifier: GPL-2.0
/*
 * flmon PREFIX: the monitors' sampler (guest/lib.sh, fl_monitor_start).
 * About once a second it reads /proc/vmstat and /proc/interrupts into
 * memory; on SIGTERM it writes them to PREFIX.vmstat and PREFIX.interrupts
 * and exits. One process with no fork or exec per read, at nice 19 and
 * pinned to the last CPU, so that the timed task keeps its CPU and the
 * window holds as little of the sampler's kernel work as can be. Each read
 * is a block: "== UPTIME" (CLOCK_BOOTTIME, as /proc/uptime), the file's
 * text, "==." (foliolab/boot/monitors.py parses them).
 */
#include "common.h"

#include <signal.h>
#include <sys/resource.h>

struct buf {
	char *data;
	size_t len, cap;
};

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static char *room(struct buf *b, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2;
		b->data = realloc(b->data, b->cap);
		if (!b->data)
			die("realloc");
	}
	return b->data + b->len;
}

/* One block: the header, the file as read, the end line. */
static void take(struct buf *b, const char *path, double uptime)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	b->len += snprintf(room(b, 32), 32, "== %.2f\n", uptime);
	if (fd < 0)
		return;		/* a block without its end: named on the host */
	while ((n = read(fd, room(b, 65536), 65536)) > 0)
		b->len += n;
	close(fd);
	if (n < 0)
		return;		/* cut short (a signal, say): no end line */
	memcpy(room(b, 4), "==.\n", 4);
	b->len += 4;
}

static void save(const struct buf *b, const char *prefix, const char *name)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s.%s", prefix, name);
	f = fopen(path, "w");
	if (!f || fwrite(b->data, 1, b->len, f) != b->len || fclose(f))
		die(path);
}

static void step_aside(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	setpriority(PRIO_PROCESS, 0, 19);
	CPU_ZERO(&set);
	CPU_SET(cpus > 0 ? cpus - 1 : 0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

int main(int argc, char **argv)
{
	struct buf vmstat = { 0 }, irqs = { 0 };
	struct timespec up, second = { 1, 0 };
	struct sigaction sa = { .sa_handler = on_term };

	if (argc != 2) {
		fprintf(stderr, "usage: flmon PREFIX\n");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);	/* no SA_RESTART: ends the sleep */
	step_aside();
	while (!stop) {
		clock_gettime(CLOCK_BOOTTIME, &up);
		take(&vmstat, "/proc/vmstat", up.tv_sec + up.tv_nsec / 1e9);
		take(&irqs, "/proc/interrupts", up.tv_sec + up.tv_nsec / 1e9);
		nanosleep(&second, NULL);
	}
	save(&vmstat, argv[1], "vmstat");
	save(&irqs, argv[1], "interrupts");
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Latency distributions, for the general workloads that time one
 * operation many times (thpchallenge's faults, stutterp's mmaps): the
 * mean, the median, the 90th and 99th percentiles and the maximum of a
 * sample's times, as "@@ metric PREFIX_{mean,p50,p90,p99,max} US".
 */
#ifndef FOLIOLAB_FLLATENCY_H
#define FOLIOLAB_FLLATENCY_H

#include "common.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The value below which @pct percent of the sorted @v[0..n-1] lie
 * (nearest rank). */
static inline double percentile(const double *v, size_t n, double pct)
{
	size_t rank = (size_t)(pct / 100 * n + 0.999999);

	return v[rank ? (rank <= n ? rank : n) - 1 : 0];
}

/* Report @n latencies @us (sorted here) under @prefix; none: nothing. */
static inline void report_latencies(const char *prefix, double *us, size_t n)
{
	static const struct {
		const char *name;
		double pct;
	} P[] = { { "p50", 50 }, { "p90", 90 }, { "p99", 99 }, { "max", 100 } };
	char key[128];
	double sum = 0;

	if (!n)
		return;
	qsort(us, n, sizeof(*us), cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += us[i];
	snprintf(key, sizeof(key), "%s_mean", prefix);
	metric(key, sum / n);
	for (size_t i = 0; i < sizeof(P) / sizeof(*P); i++) {
		snprintf(key, sizeof(key), "%s_%s", prefix, P[i].name);
		metric(key, percentile(us, n, P[i].pct));
	}
}

#endif

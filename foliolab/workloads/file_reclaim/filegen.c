// SPDX-License-Identifier: GPL-2.0
/*
 * filegen: write SIZE_MB of a per-page pattern to FILE (fast, unlike
 * /dev/urandom under TCG) and fsync it.
 *
 * usage: filegen FILE SIZE_MB
 */
#include "common.h"

int main(int argc, char **argv)
{
	size_t npages, chunk = 256;
	char *buf;
	int fd;

	if (argc < 3 || atol(argv[2]) <= 0) {
		fprintf(stderr, "usage: filegen FILE SIZE_MB\n");
		return 2;
	}
	npages = ((size_t)atol(argv[2]) << 20) / PAGE_SIZE;
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(argv[1]);
	buf = malloc(chunk * PAGE_SIZE);
	if (!buf)
		die("malloc");
	for (size_t pg = 0; pg < npages; pg += chunk) {
		size_t n = npages - pg < chunk ? npages - pg : chunk;

		for (size_t i = 0; i < n; i++) {
			uint64_t *q = (uint64_t *)(buf + i * PAGE_SIZE);

			for (size_t w = 0; w < PAGE_SIZE / 8; w++)
				q[w] = pattern(pg + i, w, 0x5eed);
		}
		if (write(fd, buf, n * PAGE_SIZE) != (ssize_t)(n * PAGE_SIZE))
			die("write");
	}
	if (fsync(fd))
		die("fsync");
	close(fd);
	return 0;
}

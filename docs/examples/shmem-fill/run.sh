#!/bin/sh
# One sample: the parameters come as FL_<NAME>, metrics go out as @@ lines.
up() { read -r t _ < /proc/uptime; echo "$t"; }  # seconds, 10 ms steps
t0=$(up)
dd if=/dev/zero of=/tmp/fill bs=1M count="$FL_SIZE_MB" 2>/dev/null || exit 1
t1=$(up)
rm /tmp/fill
t2=$(up)
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {
	printf "@@ metric fill_ms %.0f\n", (b - a) * 1000
	printf "@@ metric free_ms %.0f\n", (c - b) * 1000
}'

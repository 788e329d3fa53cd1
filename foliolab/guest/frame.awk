# Frame the job's records for a console shared with the kernel (boards and
# LAVA jobs have no results port). Each line goes out as
#   "\n@@= SEQ LEN ADLER32 TEXT"
# so that the host can find it anywhere in a console line, take exactly LEN
# bytes of TEXT and check them: firmware or kernel text that shares or
# splits the line is detected, never parsed. "@@=begin [ID]" (ID: the
# boot's name, from -v id=) opens the stream,
# "@@=end COUNT" closes it, and "@@=done" follows as a trailer for a log
# that drops the line its end pattern matched. Run by busybox awk (bytes).
BEGIN {
	for (i = 1; i < 256; i++)
		ord[sprintf("%c", i)] = i
	printf "\n@@=begin %s\n", id
}
{
	a = 1; b = 0; n = length($0)
	for (i = 1; i <= n; i++) {
		a = (a + ord[substr($0, i, 1)]) % 65521
		b = (b + a) % 65521
	}
	printf "\n@@= %d %d %04x%04x %s\n", NR, n, b, a, $0
}
END {
	printf "\n@@=end %d\n@@=done\n", NR
}

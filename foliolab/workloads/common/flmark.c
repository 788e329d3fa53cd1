// SPDX-License-Identifier: GPL-2.0
/*
 * flmark begin|end TAG: open or close a counting window from a shell
 * script (see FL_MARK in common.h). The marker carries its tag in the
 * instruction itself, so each tag has its own instruction here.
 */
#include "common.h"

#define CASE(t)	case t: if (end) FL_MARK_END(t); else FL_MARK_BEGIN(t); break

int main(int argc, char **argv)
{
	int end, tag;

	if (argc != 3 || (strcmp(argv[1], "begin") && strcmp(argv[1], "end"))) {
		fprintf(stderr, "usage: flmark begin|end TAG (0-15)\n");
		return 2;
	}
	end = !strcmp(argv[1], "end");
	tag = atoi(argv[2]);
	switch (tag) {
	CASE(0); CASE(1); CASE(2); CASE(3); CASE(4); CASE(5); CASE(6); CASE(7);
	CASE(8); CASE(9); CASE(10); CASE(11); CASE(12); CASE(13); CASE(14);
	CASE(15);
	default:
		fprintf(stderr, "flmark: tag %s is not 0-15\n", argv[2]);
		return 2;
	}
	return 0;
}

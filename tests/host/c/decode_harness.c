// SPDX-License-Identifier: GPL-2.0
/*
 * Runs the counter plugin's decoders (foliolab/plugin/decode.h) on
 * instructions given as text, one per line: "ARCH VADDR HEXBYTES", where
 * ARCH is x86_64 or arm64 and HEXBYTES the instruction's bytes in memory
 * order. Prints "CLASS MARKER FLOW TARGET KERNEL" per line, for
 * tests/host/test_counting.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"

static const char *const flow_names[] = { "none", "call", "jump", "ret" };

int main(void)
{
	char arch[16], hex[64];
	unsigned long long vaddr;

	while (scanf("%15s %llx %63s", arch, &vaddr, hex) == 3) {
		uint8_t bytes[16];
		size_t n = strlen(hex) / 2, i;
		enum guest_arch a;
		struct insn_info info;

		if (n > sizeof(bytes) || strlen(hex) % 2)
			return 2;
		for (i = 0; i < n; i++) {
			unsigned int b;

			if (sscanf(hex + 2 * i, "%2x", &b) != 1)
				return 2;
			bytes[i] = b;
		}
		if (!strcmp(arch, "x86_64"))
			a = ARCH_X86_64;
		else if (!strcmp(arch, "arm64"))
			a = ARCH_ARM64;
		else
			return 2;
		decode_insn(a, bytes, n, vaddr, &info);
		printf("%s %d %s %llx %d\n",
		       info.cls == CLS_NONE ? "none" : class_names[info.cls],
		       info.marker, flow_names[info.flow],
		       (unsigned long long)info.target,
		       kernel_address(a, vaddr));
	}
	return 0;
}

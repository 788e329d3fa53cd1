/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Instruction classes the counter plugin recognises from bytes alone
 * (QEMU's plugin API version 1 gives no registers): the guest's window
 * markers, TLB invalidations, IPI-sending stores and the control flow the
 * inclusive counts follow (calls, returns). Pure functions, so the host
 * tests can check them on hand-assembled bytes without QEMU.
 */
#ifndef FOLIOLAB_DECODE_H
#define FOLIOLAB_DECODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Instruction classes, in the order the plugin prints them. */
enum insn_class {
	CLS_NONE = -1,
	/* x86_64 */
	CLS_INVLPG,
	CLS_INVPCID,
	CLS_CR3_WRITE,
	CLS_CR4_WRITE,
	CLS_WRMSR,
	/* arm64: TLBI by form (CRm), the barrier that completes it, SGIs */
	CLS_TLBI_IS,		/* CRm 3: inner shareable, broadcast */
	CLS_TLBI_OS,		/* CRm 1: outer shareable */
	CLS_TLBI_LOCAL,		/* CRm 7: this CPU only */
	CLS_TLBI_RANGE,		/* CRm 2, 5, 6: range forms */
	CLS_TLBI_OTHER,
	CLS_DSB_ISH,
	CLS_SGI1R_WRITE,	/* msr icc_sgi1r_el1: an IPI on GICv3 */
	NR_CLASSES
};

static const char *const class_names[NR_CLASSES] = {
	"invlpg", "invpcid", "cr3_write", "cr4_write", "wrmsr",
	"tlbi_is", "tlbi_os", "tlbi_local", "tlbi_range", "tlbi_other",
	"dsb_ish", "sgi1r_write",
};

enum guest_arch { ARCH_X86_64, ARCH_ARM64 };

/*
 * Window markers: an unprivileged no-op carrying a 16-bit word whose high
 * byte is MARK_MAGIC; bit 7 says begin (0) or end (1), bits 0-6 the tag.
 * x86_64: nopl MARK_DISP_HI:word(%rax), bytes 0f 1f 80 <disp32>;
 * arm64: movz xzr, #word, lsl #48 (writes the zero register).
 */
#define MARK_MAGIC	0xf1
#define MARK_DISP_HI	0x464c
#define MARK_END	0x80
#define MARK_TAG_MASK	0x7f

/* Control flow the inclusive counts need. */
enum flow { FLOW_NONE, FLOW_CALL, FLOW_JUMP, FLOW_RET };

struct insn_info {
	int cls;		/* enum insn_class, or CLS_NONE */
	int marker;		/* the marker word, or -1 */
	enum flow flow;
	uint64_t target;	/* FLOW_CALL / FLOW_JUMP: the direct target */
};

static inline uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;		/* both guests are little-endian, as the host */
}

static inline void decode_x86(const uint8_t *p, size_t n, uint64_t vaddr,
			      struct insn_info *out)
{
	size_t i = 0;
	int opsize = 0, rex = 0;

	out->cls = CLS_NONE;
	out->marker = -1;
	out->flow = FLOW_NONE;
	out->target = 0;

	/* The marker is matched exactly, with no prefix. */
	if (n == 7 && p[0] == 0x0f && p[1] == 0x1f && p[2] == 0x80) {
		uint32_t disp = rd32(p + 3);

		if ((disp >> 16) == MARK_DISP_HI && ((disp >> 8) & 0xff) == MARK_MAGIC)
			out->marker = disp & 0xffff;
		return;
	}
	for (; i < n; i++) {
		uint8_t b = p[i];

		if (b == 0x66)
			opsize = 1;
		else if (b == 0x67 || b == 0xf0 || b == 0xf2 || b == 0xf3 ||
			 b == 0x2e || b == 0x36 || b == 0x3e || b == 0x26 ||
			 b == 0x64 || b == 0x65)
			;
		else
			break;
	}
	if (i < n && (p[i] & 0xf0) == 0x40)
		rex = p[i++];
	if (i >= n)
		return;
	switch (p[i]) {
	case 0xc3:
	case 0xc2:
		out->flow = FLOW_RET;
		return;
	case 0xe8:
	case 0xe9:
		if (i + 5 == n) {
			out->flow = p[i] == 0xe8 ? FLOW_CALL : FLOW_JUMP;
			out->target = vaddr + n + (int64_t)(int32_t)rd32(p + i + 1);
		}
		return;
	case 0x0f:
		break;
	default:
		return;
	}
	if (++i >= n)
		return;
	switch (p[i]) {
	case 0x01:		/* group 7: /7 with a memory operand is invlpg */
		if (i + 1 < n && ((p[i + 1] >> 3) & 7) == 7 &&
		    (p[i + 1] >> 6) != 3)
			out->cls = CLS_INVLPG;
		return;
	case 0x22:		/* mov %reg, %crN: N in modrm.reg (+ REX.R) */
		if (i + 1 < n && !(rex & 4)) {
			int cr = (p[i + 1] >> 3) & 7;

			if (cr == 3)
				out->cls = CLS_CR3_WRITE;
			else if (cr == 4)
				out->cls = CLS_CR4_WRITE;
		}
		return;
	case 0x30:
		out->cls = CLS_WRMSR;
		return;
	case 0x38:
		if (opsize && i + 1 < n && p[i + 1] == 0x82)
			out->cls = CLS_INVPCID;
		return;
	}
}

static inline void decode_arm64(const uint8_t *p, size_t n, uint64_t vaddr,
				struct insn_info *out)
{
	uint32_t insn;

	out->cls = CLS_NONE;
	out->marker = -1;
	out->flow = FLOW_NONE;
	out->target = 0;
	if (n != 4)
		return;
	insn = rd32(p);
	if ((insn & 0xffe0001f) == 0xd2e0001f) {	/* movz xzr, #imm, lsl #48 */
		uint32_t word = (insn >> 5) & 0xffff;

		if ((word >> 8) == MARK_MAGIC)
			out->marker = word;
		return;
	}
	if ((insn & 0xfff80000) == 0xd5080000) {	/* SYS, op0 = 1 */
		uint32_t crn = (insn >> 12) & 0xf, crm = (insn >> 8) & 0xf;

		if (crn != 8 && crn != 9)		/* 9: the nXS forms */
			return;
		if (crm == 3)
			out->cls = CLS_TLBI_IS;
		else if (crm == 1)
			out->cls = CLS_TLBI_OS;
		else if (crm == 7)
			out->cls = CLS_TLBI_LOCAL;
		else if (crm == 2 || crm == 5 || crm == 6)
			out->cls = CLS_TLBI_RANGE;
		else
			out->cls = CLS_TLBI_OTHER;
		return;
	}
	if (insn == 0xd5033b9f) {
		out->cls = CLS_DSB_ISH;
		return;
	}
	if ((insn & 0xffffffe0) == 0xd518cba0) {
		out->cls = CLS_SGI1R_WRITE;
		return;
	}
	/* ret, retaa, retab */
	if ((insn & 0xfffffc1f) == 0xd65f0000 || insn == 0xd65f0bff ||
	    insn == 0xd65f0fff) {
		out->flow = FLOW_RET;
		return;
	}
	if ((insn & 0x7c000000) == 0x14000000) {	/* b / bl imm26 */
		int64_t off = (int64_t)((int32_t)(insn << 6) >> 6) * 4;

		out->flow = (insn & 0x80000000) ? FLOW_CALL : FLOW_JUMP;
		out->target = vaddr + off;
	}
}

static inline void decode_insn(enum guest_arch arch, const uint8_t *p,
			       size_t n, uint64_t vaddr, struct insn_info *out)
{
	if (arch == ARCH_X86_64)
		decode_x86(p, n, vaddr, out);
	else
		decode_arm64(p, n, vaddr, out);
}

/* Guest kernel text: the upper half of the address space on both. */
static inline int kernel_address(enum guest_arch arch, uint64_t vaddr)
{
	if (arch == ARCH_X86_64)
		return vaddr >= 0xffff800000000000ULL;
	return vaddr >= 0xffff000000000000ULL;
}

#endif

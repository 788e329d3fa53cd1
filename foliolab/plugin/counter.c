// SPDX-License-Identifier: GPL-2.0
/*
 * foliolab's counter: a QEMU TCG plugin (API version 1, QEMU 7.2) that
 * counts what the guest kernel executes, exactly and per function, for
 * windows the guest marks around its measured operations.
 *
 * Arguments (-plugin libcounter.so,ARG=VALUE,...):
 *   symbols=FILE  "ADDR NAME" lines of kernel text symbols, sorted (the
 *                 host writes them from System.map; boot with nokaslr)
 *   out=FILE      where the windows are written
 *   root=NAME     (repeatable, at most MAX_ROOTS) count this function
 *                 inclusively: every kernel instruction the task that
 *                 entered it executes until it returns, callees included
 *   io=NAME       (repeatable) substrings of the function names whose
 *                 stores are checked for the xAPIC ICR (x86 IPIs)
 *
 * Every count is kept per vCPU and added by a callback per translated
 * block (TCG's inline adds race between vCPUs running in parallel), so
 * the numbers are exact with -accel tcg,thread=multi. Only kernel blocks
 * get callbacks; user code costs nothing but the markers.
 *
 * A root is active per vCPU, and on x86_64 it follows the task: when a
 * task is switched out inside a root, __switch_to_asm's push %rbp stores
 * to an address of the outgoing task's stack that its own pop %rbp reads
 * again when it is switched back in, on whichever vCPU. The plugin parks
 * the vCPU's active roots under the push's address and hands them back at
 * that pop, so the instructions of tasks run meanwhile are not counted
 * and the task's remaining work is. The 13 or so instructions of the
 * stack switch between the two count for no root. On arm64, or if that
 * code is not found, roots stay per vCPU and the output says so.
 *
 * Output: a line "switch_tracking on __switch_to_asm ADDR" or
 * "switch_tracking off REASON" first (a later "switch_tracking off" line
 * says the tracking found nothing to track after all), then one block
 * per closed window:
 *   window TAG SEQ
 *   kernel_insns N
 *   class NAME N
 *   root NAME INSNS ENTRIES SWITCHES   (SWITCHES: times a task was
 *                                       switched out inside the root;
 *                                       only while switches are tracked)
 *   fn NAME INSNS ENTRIES          (functions with a nonzero count)
 *   end
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

#include "decode.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_ROOTS	8
#define MAX_IO_FNS	8
#define APIC_ICR_LOW	0xfee00300ULL
#define RET_SLOTS	(1 << 16)	/* return points after calls of roots */
#define PARK_SLOTS	256		/* tasks switched out inside a root */
#define SWITCH_FN	"__switch_to_asm"
#define X86_PUSH_RBP	0x55
#define X86_POP_RBP	0x5d

struct symbol {
	uint64_t addr;
	char *name;
};

/* One vCPU's counters; written only by that vCPU's thread. */
struct vcpu_counts {
	uint64_t kernel_insns;
	uint64_t cls[NR_CLASSES + 1];	/* + the xAPIC ICR stores */
	uint64_t *fn_insns;		/* [nr_syms + 1]: last = no symbol */
	uint64_t *fn_entries;
	uint64_t root_insns[MAX_ROOTS];
	uint64_t root_entries[MAX_ROOTS];
	uint64_t root_switches[MAX_ROOTS];	/* parked while active */
	/* classes executed inside each root, its callees included */
	uint64_t root_cls[MAX_ROOTS][NR_CLASSES + 1];
	uint32_t root_active;		/* bit per root */
};
#define CLS_ICR NR_CLASSES

struct segment {
	uint32_t fn;
	uint32_t insns;
};

/* What one kernel block adds when it runs; built at translation. */
struct block {
	uint64_t vaddr;
	uint32_t insns;
	int32_t entry_fn;		/* function whose first insn starts it */
	uint32_t enters_roots;		/* roots entered at its start */
	uint32_t returns_roots;		/* roots whose ret ends it */
	uint16_t cls[NR_CLASSES];
	uint8_t has_cls;
	uint8_t nseg;
	struct segment seg[];
};

static enum guest_arch arch;
static struct symbol *syms;
static size_t nr_syms;
static struct vcpu_counts *vcpus;
static int nr_vcpus;
static FILE *out;
static const char *root_names[MAX_ROOTS];
static uint64_t root_addr[MAX_ROOTS];
static int nr_roots;
static const char *io_fns[MAX_IO_FNS];
static int nr_io_fns;
static uint64_t return_thunk;	/* x86 __x86_return_thunk: a ret */

/* vaddr -> roots returned to there; filled at translation, read at run. */
static uint64_t ret_key[RET_SLOTS];
static uint32_t ret_roots[RET_SLOTS];
static int ret_table_full;	/* a return point was dropped: say so */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Roots of switched-out tasks, keyed by the stack address of their push
 * %rbp. Few tasks sleep inside a root at once, so a small table scanned
 * under a lock does; nr_parked lets a switch skip the lock when it is
 * empty (the guest orders a task's switch-out before its switch-in on
 * another vCPU, and that order carries over to the plugin's accesses).
 */
struct parked_task {
	uint64_t stack_addr;
	uint32_t roots;
};
static struct parked_task parked[PARK_SLOTS];
static int nr_parked;
static int park_table_full;	/* a task's roots were dropped: say so */
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;

/* __switch_to_asm's range and what translation found in it. */
static uint64_t switch_start, switch_end;
static int switch_push_seen, switch_pop_seen, switch_end_seen;
static int switch_off_said;

/* Open windows: a snapshot of the summed counters per tag. */
struct snapshot {
	int open;
	uint64_t seq;
	uint64_t kernel_insns;
	uint64_t cls[NR_CLASSES + 1];
	uint64_t root_insns[MAX_ROOTS], root_entries[MAX_ROOTS];
	uint64_t root_switches[MAX_ROOTS];
	uint64_t root_cls[MAX_ROOTS][NR_CLASSES + 1];
	uint64_t *fn_insns, *fn_entries;
};
static struct snapshot windows[MARK_TAG_MASK + 1];
static uint64_t window_seq[MARK_TAG_MASK + 1];

static long find_symbol(uint64_t addr)
{
	size_t lo = 0, hi = nr_syms;

	if (!nr_syms || addr < syms[0].addr)
		return -1;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static uint32_t fn_index(uint64_t addr)
{
	long i = find_symbol(addr);

	return i < 0 ? nr_syms : (uint32_t)i;
}

static uint64_t symbol_addr(const char *name)
{
	for (size_t i = 0; i < nr_syms; i++)
		if (!strcmp(syms[i].name, name))
			return syms[i].addr;
	return 0;
}

static size_t ret_slot(uint64_t vaddr)
{
	return (vaddr * 0x9e3779b97f4a7c15ULL) >> 48;
}

static void add_return_point(uint64_t vaddr, uint32_t roots)
{
	size_t i = ret_slot(vaddr);

	/*
	 * vCPU threads translate concurrently: claim an empty slot with a
	 * compare-and-swap, then or the roots in, so that two writers never
	 * lose a key or mix up their masks.
	 */
	for (size_t probes = 0; probes < RET_SLOTS; probes++) {
		uint64_t k = __atomic_load_n(&ret_key[i], __ATOMIC_ACQUIRE);

		if (!k && __atomic_compare_exchange_n(&ret_key[i], &k, vaddr,
						      0, __ATOMIC_ACQ_REL,
						      __ATOMIC_ACQUIRE))
			k = vaddr;
		if (k == vaddr) {
			__atomic_fetch_or(&ret_roots[i], roots, __ATOMIC_RELEASE);
			return;
		}
		i = (i + 1) % RET_SLOTS;
	}
	ret_table_full = 1;
}

static uint32_t returns_here(uint64_t vaddr)
{
	size_t i = ret_slot(vaddr);

	for (size_t probes = 0; probes < RET_SLOTS; probes++) {
		uint64_t k = __atomic_load_n(&ret_key[i], __ATOMIC_ACQUIRE);

		if (k == vaddr)
			return __atomic_load_n(&ret_roots[i], __ATOMIC_ACQUIRE);
		if (!k)
			return 0;
		i = (i + 1) % RET_SLOTS;
	}
	return 0;
}

static int root_of(uint64_t target)
{
	for (int r = 0; r < nr_roots; r++)
		if (root_addr[r] && target == root_addr[r])
			return r;
	return -1;
}

/* Park ``roots`` under ``addr``; 0 forgets what a dead task left there. */
static void park(uint64_t addr, uint32_t roots)
{
	struct parked_task *free_slot = NULL;

	pthread_mutex_lock(&park_lock);
	for (int i = 0; i < PARK_SLOTS; i++) {
		struct parked_task *p = &parked[i];

		if (p->stack_addr == addr) {
			p->roots = roots;
			if (!roots) {
				p->stack_addr = 0;
				__atomic_sub_fetch(&nr_parked, 1, __ATOMIC_RELEASE);
			}
			pthread_mutex_unlock(&park_lock);
			return;
		}
		if (!p->stack_addr && !free_slot)
			free_slot = p;
	}
	if (roots && free_slot) {
		free_slot->stack_addr = addr;
		free_slot->roots = roots;
		__atomic_add_fetch(&nr_parked, 1, __ATOMIC_RELEASE);
	} else if (roots) {
		park_table_full = 1;
	}
	pthread_mutex_unlock(&park_lock);
}

/* The roots parked under ``addr``, taken out of the table. */
static uint32_t unpark(uint64_t addr)
{
	uint32_t roots = 0;

	if (!__atomic_load_n(&nr_parked, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&park_lock);
	for (int i = 0; i < PARK_SLOTS; i++) {
		if (parked[i].stack_addr == addr) {
			roots = parked[i].roots;
			parked[i].stack_addr = 0;
			__atomic_sub_fetch(&nr_parked, 1, __ATOMIC_RELEASE);
			break;
		}
	}
	pthread_mutex_unlock(&park_lock);
	return roots;
}

/*
 * The outgoing task's push %rbp: its roots leave the vCPU with it. Its
 * block was counted whole at its start; the instructions after the push
 * (``udata``) are the switch's, not the task's.
 */
static void switch_out(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
		       uint64_t vaddr, void *udata)
{
	struct vcpu_counts *c = &vcpus[vcpu_index];
	uint32_t after = (uint32_t)(uintptr_t)udata;
	uint32_t roots = c->root_active;

	/* QEMU 7.2 calls write-only callbacks for reads too. */
	if (!qemu_plugin_mem_is_store(info))
		return;
	if (!roots && !__atomic_load_n(&nr_parked, __ATOMIC_ACQUIRE))
		return;
	for (int r = 0; r < nr_roots; r++) {
		if (!(roots & (1u << r)))
			continue;
		c->root_insns[r] -= after;
		c->root_switches[r]++;
	}
	park(vaddr, roots);
	c->root_active = 0;
}

/*
 * The incoming task's pop %rbp reads where its push wrote: its roots (none
 * for a new task) come back, with the block's instructions after the pop.
 */
static void switch_in(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
		      uint64_t vaddr, void *udata)
{
	struct vcpu_counts *c = &vcpus[vcpu_index];
	uint32_t after = (uint32_t)(uintptr_t)udata;

	if (qemu_plugin_mem_is_store(info))
		return;
	c->root_active = unpark(vaddr);
	for (int r = 0; r < nr_roots; r++)
		if (c->root_active & (1u << r))
			c->root_insns[r] += after;
}

static void block_exec(unsigned int vcpu_index, void *udata)
{
	struct block *b = udata;
	struct vcpu_counts *c = &vcpus[vcpu_index];

	if (c->root_active)
		c->root_active &= ~returns_here(b->vaddr);
	c->root_active |= b->enters_roots;
	c->kernel_insns += b->insns;
	for (int i = 0; i < b->nseg; i++)
		c->fn_insns[b->seg[i].fn] += b->seg[i].insns;
	if (b->entry_fn >= 0)
		c->fn_entries[b->entry_fn]++;
	if (b->has_cls)
		for (int i = 0; i < NR_CLASSES; i++)
			c->cls[i] += b->cls[i];
	if (c->root_active) {
		for (int r = 0; r < nr_roots; r++) {
			if (b->enters_roots & (1u << r))
				c->root_entries[r]++;
			if (!(c->root_active & (1u << r)))
				continue;
			c->root_insns[r] += b->insns;
			if (b->has_cls)
				for (int i = 0; i < NR_CLASSES; i++)
					c->root_cls[r][i] += b->cls[i];
		}
		c->root_active &= ~b->returns_roots;
	}
}

static void icr_store(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
		      uint64_t vaddr, void *udata)
{
	struct qemu_plugin_hwaddr *hw;

	/* QEMU 7.2 calls write-only callbacks for reads too. */
	if (!qemu_plugin_mem_is_store(info))
		return;
	hw = qemu_plugin_get_hwaddr(info, vaddr);
	if (hw && qemu_plugin_hwaddr_is_io(hw) &&
	    qemu_plugin_hwaddr_phys_addr(hw) == APIC_ICR_LOW) {
		struct vcpu_counts *c = &vcpus[vcpu_index];

		c->cls[CLS_ICR]++;
		for (int r = 0; r < nr_roots; r++)
			if (c->root_active & (1u << r))
				c->root_cls[r][CLS_ICR]++;
	}
}

static void sum_counts(struct snapshot *s)
{
	memset(s->cls, 0, sizeof(s->cls));
	memset(s->root_insns, 0, sizeof(s->root_insns));
	memset(s->root_entries, 0, sizeof(s->root_entries));
	memset(s->root_switches, 0, sizeof(s->root_switches));
	memset(s->root_cls, 0, sizeof(s->root_cls));
	memset(s->fn_insns, 0, (nr_syms + 1) * sizeof(uint64_t));
	memset(s->fn_entries, 0, (nr_syms + 1) * sizeof(uint64_t));
	s->kernel_insns = 0;
	for (int v = 0; v < nr_vcpus; v++) {
		struct vcpu_counts *c = &vcpus[v];

		s->kernel_insns += c->kernel_insns;
		for (int i = 0; i <= NR_CLASSES; i++)
			s->cls[i] += c->cls[i];
		for (int r = 0; r < nr_roots; r++) {
			s->root_insns[r] += c->root_insns[r];
			s->root_entries[r] += c->root_entries[r];
			s->root_switches[r] += c->root_switches[r];
			for (int i = 0; i <= NR_CLASSES; i++)
				s->root_cls[r][i] += c->root_cls[r][i];
		}
		for (size_t f = 0; f <= nr_syms; f++) {
			s->fn_insns[f] += c->fn_insns[f];
			s->fn_entries[f] += c->fn_entries[f];
		}
	}
}

/*
 * Once a switch has run through __switch_to_asm's tail, its push and pop
 * were translated before: if either was not found, nothing was tracked.
 * Also says once that a task's roots did not fit the parked table.
 * Called under the lock.
 */
static void say_if_switches_untracked(void)
{
	static int full_said;

	if (park_table_full && !full_said) {
		fprintf(out, "# parked-roots table full: a switched-out task's "
			"roots were dropped\n");
		full_said = 1;
	}
	if (switch_off_said ||
	    !__atomic_load_n(&switch_end_seen, __ATOMIC_ACQUIRE) ||
	    (switch_push_seen && switch_pop_seen))
		return;
	fprintf(out, "switch_tracking off no push %%rbp (55) and pop %%rbp "
		"(5d) in " SWITCH_FN "\n");
	switch_off_said = 1;
}

static void write_window(int tag, struct snapshot *begin)
{
	struct snapshot now = { 0 };

	now.fn_insns = calloc(nr_syms + 1, sizeof(uint64_t));
	now.fn_entries = calloc(nr_syms + 1, sizeof(uint64_t));
	if (!now.fn_insns || !now.fn_entries)
		abort();
	sum_counts(&now);
	say_if_switches_untracked();
	fprintf(out, "window %d %" PRIu64 "\n", tag, begin->seq);
	fprintf(out, "kernel_insns %" PRIu64 "\n",
		now.kernel_insns - begin->kernel_insns);
	for (int i = 0; i < NR_CLASSES; i++)
		fprintf(out, "class %s %" PRIu64 "\n", class_names[i],
			now.cls[i] - begin->cls[i]);
	fprintf(out, "class apic_icr_write %" PRIu64 "\n",
		now.cls[CLS_ICR] - begin->cls[CLS_ICR]);
	for (int r = 0; r < nr_roots; r++) {
		fprintf(out, "root %s %" PRIu64 " %" PRIu64, root_names[r],
			now.root_insns[r] - begin->root_insns[r],
			now.root_entries[r] - begin->root_entries[r]);
		if (switch_start && !switch_off_said)
			fprintf(out, " %" PRIu64, now.root_switches[r] -
				begin->root_switches[r]);
		fprintf(out, "\n");
		for (int i = 0; i <= NR_CLASSES; i++) {
			uint64_t n = now.root_cls[r][i] - begin->root_cls[r][i];

			if (n)
				fprintf(out, "rootclass %s %s %" PRIu64 "\n",
					root_names[r], i < NR_CLASSES ?
					class_names[i] : "apic_icr_write", n);
		}
	}
	for (size_t f = 0; f <= nr_syms; f++) {
		uint64_t n = now.fn_insns[f] - begin->fn_insns[f];
		uint64_t e = now.fn_entries[f] - begin->fn_entries[f];

		if (n || e)
			fprintf(out, "fn %s %" PRIu64 " %" PRIu64 "\n",
				f < nr_syms ? syms[f].name : "[unknown]", n, e);
	}
	fprintf(out, "end\n");
	fflush(out);
	free(now.fn_insns);
	free(now.fn_entries);
}

static void marker_exec(unsigned int vcpu_index, void *udata)
{
	int word = (int)(uintptr_t)udata;
	int tag = word & MARK_TAG_MASK;
	struct snapshot *s = &windows[tag];

	pthread_mutex_lock(&lock);
	if (!(word & MARK_END)) {
		if (!s->fn_insns) {
			s->fn_insns = calloc(nr_syms + 1, sizeof(uint64_t));
			s->fn_entries = calloc(nr_syms + 1, sizeof(uint64_t));
			if (!s->fn_insns || !s->fn_entries)
				abort();
		}
		sum_counts(s);
		s->seq = window_seq[tag]++;
		s->open = 1;
	} else if (s->open) {
		write_window(tag, s);
		s->open = 0;
	} else {
		fprintf(out, "# end of window %d that was not begun\n", tag);
	}
	pthread_mutex_unlock(&lock);
}

static int io_function(uint32_t fn)
{
	if (fn >= nr_syms)
		return 0;
	for (int i = 0; i < nr_io_fns; i++)
		if (strstr(syms[fn].name, io_fns[i]))
			return 1;
	return 0;
}

/*
 * Instruments __switch_to_asm's push %rbp and pop %rbp, found by their
 * bytes; ``after``: the block's instructions after this one.
 */
static void track_switch(struct qemu_plugin_insn *insn,
			 const struct insn_info *info, size_t after)
{
	const uint8_t *data = qemu_plugin_insn_data(insn);
	uint64_t iva = qemu_plugin_insn_vaddr(insn);
	size_t size = qemu_plugin_insn_size(insn);
	void *udata = (void *)(uintptr_t)after;

	if (size == 1 && data[0] == X86_PUSH_RBP) {
		qemu_plugin_register_vcpu_mem_cb(insn, switch_out,
						 QEMU_PLUGIN_CB_NO_REGS,
						 QEMU_PLUGIN_MEM_W, udata);
		__atomic_store_n(&switch_push_seen, 1, __ATOMIC_RELEASE);
	} else if (size == 1 && data[0] == X86_POP_RBP) {
		/*
		 * QEMU 7.2 never calls a read-only callback (and calls
		 * write-only ones for reads too): ask for both.
		 */
		qemu_plugin_register_vcpu_mem_cb(insn, switch_in,
						 QEMU_PLUGIN_CB_NO_REGS,
						 QEMU_PLUGIN_MEM_RW, udata);
		__atomic_store_n(&switch_pop_seen, 1, __ATOMIC_RELEASE);
	}
	if (iva + size >= switch_end ||
	    (info->flow == FLOW_JUMP &&
	     (info->target < switch_start || info->target >= switch_end)))
		__atomic_store_n(&switch_end_seen, 1, __ATOMIC_RELEASE);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	struct insn_info info;
	struct block *b;

	if (!kernel_address(arch, vaddr)) {
		/* User code: only the markers matter. */
		for (size_t i = 0; i < n; i++) {
			struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);

			decode_insn(arch, qemu_plugin_insn_data(insn),
				    qemu_plugin_insn_size(insn),
				    qemu_plugin_insn_vaddr(insn), &info);
			if (info.marker >= 0)
				qemu_plugin_register_vcpu_insn_exec_cb(
					insn, marker_exec, QEMU_PLUGIN_CB_NO_REGS,
					(void *)(uintptr_t)info.marker);
		}
		return;
	}
	b = calloc(1, sizeof(*b) + n * sizeof(struct segment));
	if (!b)
		abort();
	b->vaddr = vaddr;
	b->insns = n;
	b->entry_fn = -1;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t iva = qemu_plugin_insn_vaddr(insn);
		size_t size = qemu_plugin_insn_size(insn);
		uint32_t fn = fn_index(iva);
		int r;

		decode_insn(arch, qemu_plugin_insn_data(insn), size, iva, &info);
		if (b->nseg && b->seg[b->nseg - 1].fn == fn) {
			b->seg[b->nseg - 1].insns++;
		} else {
			b->seg[b->nseg].fn = fn;
			b->seg[b->nseg++].insns = 1;
		}
		if (i == 0 && fn < nr_syms && syms[fn].addr == iva) {
			b->entry_fn = fn;
			r = root_of(iva);
			if (r >= 0)
				b->enters_roots |= 1u << r;
		}
		if (info.cls >= 0) {
			b->cls[info.cls]++;
			b->has_cls = 1;
		}
		if (info.flow == FLOW_CALL && root_of(info.target) >= 0)
			add_return_point(iva + size, 1u << root_of(info.target));
		if (info.flow == FLOW_JUMP && return_thunk &&
		    info.target == return_thunk)
			info.flow = FLOW_RET;
		if (info.flow == FLOW_RET && fn < nr_syms)
			for (r = 0; r < nr_roots; r++)
				if (root_addr[r] == syms[fn].addr)
					b->returns_roots |= 1u << r;
		if (nr_roots && switch_start && iva >= switch_start &&
		    iva < switch_end)
			track_switch(insn, &info, n - i - 1);
		if (arch == ARCH_X86_64 && nr_io_fns && io_function(fn))
			qemu_plugin_register_vcpu_mem_cb(insn, icr_store,
							 QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_W, NULL);
	}
	qemu_plugin_register_vcpu_tb_exec_cb(tb, block_exec,
					     QEMU_PLUGIN_CB_NO_REGS, b);
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	pthread_mutex_lock(&lock);
	for (int tag = 0; tag <= MARK_TAG_MASK; tag++)
		if (windows[tag].open)
			fprintf(out, "# window %d still open at exit\n", tag);
	say_if_switches_untracked();
	if (ret_table_full)
		fprintf(out, "# return-point table full: root counts may run "
			"past a return\n");
	fflush(out);
	pthread_mutex_unlock(&lock);
}

static int load_symbols(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512], name[480];
	size_t cap = 0;
	uint64_t addr;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 " %479s", &addr, name) != 2)
			continue;
		if (nr_syms && addr < syms[nr_syms - 1].addr) {
			fclose(f);
			return -2;
		}
		if (nr_syms == cap) {
			cap = cap ? 2 * cap : 65536;
			syms = realloc(syms, cap * sizeof(*syms));
			if (!syms)
				abort();
		}
		syms[nr_syms].addr = addr;
		syms[nr_syms++].name = strdup(name);
	}
	fclose(f);
	return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *symbols = NULL, *out_path = NULL;

	if (info->version.cur < 1 || info->version.min > QEMU_PLUGIN_VERSION) {
		fprintf(stderr, "foliolab counter: QEMU's plugin API is %d-%d, "
			"this plugin is written for version %d\n",
			info->version.min, info->version.cur,
			QEMU_PLUGIN_VERSION);
		return -1;
	}
	if (!info->system_emulation) {
		fprintf(stderr, "foliolab counter: system emulation only\n");
		return -1;
	}
	if (!strcmp(info->target_name, "x86_64")) {
		arch = ARCH_X86_64;
	} else if (!strcmp(info->target_name, "aarch64")) {
		arch = ARCH_ARM64;
	} else {
		fprintf(stderr, "foliolab counter: unsupported target %s\n",
			info->target_name);
		return -1;
	}
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		const char *val = eq ? eq + 1 : "";

		if (!strncmp(argv[i], "symbols=", 8)) {
			symbols = val;
		} else if (!strncmp(argv[i], "out=", 4)) {
			out_path = val;
		} else if (!strncmp(argv[i], "root=", 5) && nr_roots < MAX_ROOTS) {
			root_names[nr_roots++] = val;
		} else if (!strncmp(argv[i], "io=", 3) && nr_io_fns < MAX_IO_FNS) {
			io_fns[nr_io_fns++] = val;
		} else {
			fprintf(stderr, "foliolab counter: bad argument %s\n",
				argv[i]);
			return -1;
		}
	}
	if (!symbols || !out_path) {
		fprintf(stderr, "foliolab counter: symbols= and out= are "
			"required\n");
		return -1;
	}
	if (load_symbols(symbols) || !nr_syms) {
		fprintf(stderr, "foliolab counter: cannot read sorted symbols "
			"from %s\n", symbols);
		return -1;
	}
	for (int r = 0; r < nr_roots; r++)
		root_addr[r] = symbol_addr(root_names[r]);
	if (arch == ARCH_X86_64) {
		return_thunk = symbol_addr("__x86_return_thunk");
		switch_start = symbol_addr(SWITCH_FN);
	}
	if (switch_start) {
		long i = find_symbol(switch_start);

		switch_end = (size_t)i + 1 < nr_syms ? syms[i + 1].addr
						     : switch_start + 4096;
	}
	out = fopen(out_path, "w");
	if (!out) {
		perror(out_path);
		return -1;
	}
	nr_vcpus = info->system.max_vcpus;
	vcpus = calloc(nr_vcpus, sizeof(*vcpus));
	if (!vcpus)
		return -1;
	for (int v = 0; v < nr_vcpus; v++) {
		vcpus[v].fn_insns = calloc(nr_syms + 1, sizeof(uint64_t));
		vcpus[v].fn_entries = calloc(nr_syms + 1, sizeof(uint64_t));
		if (!vcpus[v].fn_insns || !vcpus[v].fn_entries)
			return -1;
	}
	fprintf(out, "# foliolab counter target=%s vcpus=%d symbols=%zu "
		"mode=per-vcpu-callback\n", info->target_name, nr_vcpus, nr_syms);
	if (switch_start)
		fprintf(out, "switch_tracking on " SWITCH_FN " %" PRIx64 "\n",
			switch_start);
	else if (arch == ARCH_X86_64)
		fprintf(out, "switch_tracking off no symbol " SWITCH_FN "\n");
	else
		fprintf(out, "switch_tracking off arm64: roots are per vCPU\n");
	for (int r = 0; r < nr_roots; r++)
		if (!root_addr[r])
			fprintf(out, "# root %s: no such symbol\n", root_names[r]);
	fflush(out);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin that counts the instructions a guest executes, by the
 * address of the translation block they start in, and writes the counts
 * each time the guest runs a marker program (bench/profile/marker.S).
 *
 *   qemu-system-x86_64 ... -plugin insn_count_plugin.so,marker=0xADDR,out=PREFIX
 *
 * Each run of the marker writes PREFIX.N (N = 1, 2, ...): one line per
 * kernel address "ADDR INSNS" with the instructions counted since boot in
 * blocks starting there, and one line "user INSNS" for every block below the
 * kernel's half of the address space.  bench/profile/profile.py turns the
 * difference between two snapshots into instructions per symbol
 * (bench/path-cost.sh with PATH_PROFILE).  A block is charged in full when it
 * starts, and a block that starts in one function and runs on past its end
 * is charged to the first: good to a few instructions per function.
 *
 * Written against QEMU's plugin API version 1 (QEMU 4.2 to 8.0; Debian 12's
 * 7.2): the few declarations it needs are below, so that it builds without
 * QEMU's headers, which Debian does not package.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* QEMU's plugin API, version 1 (include/qemu/qemu-plugin.h) */
#define PLUGIN_EXPORT __attribute__((visibility("default")))
typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct qemu_info_t qemu_info_t;
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index,
					    void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id,
					       struct qemu_plugin_tb *tb);
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
					  qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags,
					  void *userdata);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
					      enum qemu_plugin_op op,
					      void *ptr, uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_outs(const char *string);

PLUGIN_EXPORT int qemu_plugin_version = 1;

/* x86-64: the kernel's half of the address space */
#define KERNEL_START 0xffff800000000000ULL

/*
 * One counter per block start address.  Translated code adds to the
 * counter's address directly, so counters never move: they come from
 * chunks that are never freed, and the hash table holds pointers.
 */
struct counter {
	uint64_t vaddr;
	uint64_t insns;
};

#define CHUNK 4096
static struct counter *chunk;
static size_t chunk_used = CHUNK;

static struct counter **table;
static size_t table_size, table_used;
static struct counter user = { 0, 0 };
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t marker;
static const char *out_prefix;
static unsigned int snapshots;

static size_t slot_of(uint64_t vaddr, size_t size)
{
	return (size_t)((vaddr * 0x9e3779b97f4a7c15ULL) >> 20) & (size - 1);
}

static int table_grow(void)
{
	size_t size = table_size ? table_size * 2 : 1 << 16, i, s;
	struct counter **t = calloc(size, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (i = 0; i < table_size; i++) {
		if (!table[i])
			continue;
		for (s = slot_of(table[i]->vaddr, size); t[s]; s = (s + 1) & (size - 1))
			;
		t[s] = table[i];
	}
	free(table);
	table = t;
	table_size = size;
	return 0;
}

/* The counter of @vaddr, made if new; NULL if out of memory. */
static struct counter *counter_of(uint64_t vaddr)
{
	size_t s;

	if (table_used * 2 >= table_size && table_grow())
		return NULL;
	for (s = slot_of(vaddr, table_size); table[s]; s = (s + 1) & (table_size - 1))
		if (table[s]->vaddr == vaddr)
			return table[s];
	if (chunk_used == CHUNK) {
		chunk = calloc(CHUNK, sizeof(*chunk));
		if (!chunk)
			return NULL;
		chunk_used = 0;
	}
	table[s] = &chunk[chunk_used++];
	table[s]->vaddr = vaddr;
	table_used++;
	return table[s];
}

/* The marker ran: write every counter to the next snapshot file. */
static void snapshot(unsigned int vcpu_index, void *userdata)
{
	char path[4096], msg[4200];
	size_t i;
	FILE *f;

	(void)vcpu_index;
	(void)userdata;
	pthread_mutex_lock(&lock);
	snprintf(path, sizeof(path), "%s.%u", out_prefix, ++snapshots);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "user %" PRIu64 "\n", user.insns);
		for (i = 0; i < table_size; i++)
			if (table[i] && table[i]->insns)
				fprintf(f, "%" PRIx64 " %" PRIu64 "\n",
					table[i]->vaddr, table[i]->insns);
	}
	if (!f || fclose(f)) {
		snprintf(msg, sizeof(msg), "insn_count_plugin: cannot write %s\n", path);
		qemu_plugin_outs(msg);
	}
	pthread_mutex_unlock(&lock);
}

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	struct counter *c = &user;

	(void)id;
	if (vaddr == marker)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, snapshot,
						     QEMU_PLUGIN_CB_NO_REGS, NULL);
	if (vaddr >= KERNEL_START) {
		pthread_mutex_lock(&lock);
		c = counter_of(vaddr);
		pthread_mutex_unlock(&lock);
		if (!c) {
			qemu_plugin_outs("insn_count_plugin: out of memory\n");
			return;
		}
	}
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &c->insns,
						 qemu_plugin_tb_n_insns(tb));
}

PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
				      const qemu_info_t *info, int argc,
				      char **argv)
{
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "marker=", 7))
			marker = strtoull(argv[i] + 7, NULL, 0);
		else if (!strncmp(argv[i], "out=", 4))
			out_prefix = argv[i] + 4;
	}
	if (!marker || !out_prefix) {
		fprintf(stderr, "insn_count_plugin: needs marker=ADDR and out=PREFIX\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	return 0;
}

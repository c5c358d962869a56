/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The marker program of bench/profile: it only exits.  insn_count_plugin.c
 * writes a snapshot of its counts whenever the guest executes the first
 * block of this program, which bench/profile/run links at a fixed address
 * (MARKER_ADDR there) that nothing else in the guest uses.
 */
	.text
	.globl	_start
_start:
	mov	$60, %eax	/* exit(0) */
	xor	%edi, %edi
	syscall

/*
 * elf_code.h: machine code of an ELF module, for adapters that put a uprobe
 * where no symbol names the place: the bytes at a link-time address, and the
 * two x86-64 shapes they look for (a call through a register, a direct
 * call). Each finder accepts only the instruction forms listed at it and
 * says -ENOEXEC for anything else, so an unexpected build is an error the
 * user sees, never a probe at a wrong address.
 */
#ifndef VMTRACE_ELF_CODE_H
#define VMTRACE_ELF_CODE_H

#include <stddef.h>
#include <stdint.h>

/* Read len bytes at the link-time address addr of the ELF file at path
 * (from the PT_LOAD segment holding them); *file_offset is where they are in
 * the file, the offset a uprobe takes. 0, -ENOENT when no segment holds
 * them, or -errno. */
int vt_elf_code_at(const char *path, uint64_t addr, uint8_t *buf, size_t len,
		   uint64_t *file_offset);

/* The link-time address of the module's first byte: the p_vaddr of the
 * PT_LOAD segment at file offset 0 (0 for a shared object, the load
 * address for a fixed executable). 0 or -ENOENT/-errno. */
int vt_elf_first_vaddr(const char *path, uint64_t *vaddr);

/* In code (len bytes at link-time address addr), a function compared with
 * what a call returned: call rel32, lea disp32(%rip),%reg, cmp %rax,%reg.
 * The lea's target (the function's address). */
int vt_x86_lea_after_call(const uint8_t *code, size_t len, uint64_t addr, uint64_t *target);

/* Where a function (code, its first len bytes at link-time address addr)
 * first runs an instruction the kernel's uprobes emulate (push, jmp, jcc,
 * call rel32) rather than single-step out of line: one trap instead of two.
 * Reached from the entry through straight-line instructions of the forms
 * sub/add $imm8,%rsp, mov between registers, mov from memory, test; *at_addr
 * is its address and arg_reg[i] the register (x86 number: 0 %rax .. 7 %rdi,
 * 8..15 %r8..%r15) then holding argument i (0 %rdi, 1 %rsi, 2 %rdx at
 * entry), -1 when overwritten. -ENOEXEC for any other instruction. */
#define VT_X86_ARGS 3
int vt_x86_first_emulated(const uint8_t *code, size_t len, uint64_t addr, uint64_t *at_addr,
			  int8_t arg_reg[VT_X86_ARGS]);

/* code (link-time address addr) tests a global (mov disp32(%rip),%r32 and
 * test, or cmpl $imm8,disp32(%rip)) and branches (jcc): the target of the
 * direct call (e8 rel32) on the branch, reached through at most 4
 * instructions of the forms sub $imm8,%rsp, push %reg, mov %reg,off8(%rsp)
 * and mov %reg,%reg. */
int vt_x86_call_after_jcc(const uint8_t *code, size_t len, uint64_t addr, uint64_t *target);

/* The start of the function holding code[at] (a USDT site): the nearest
 * place before it, within the buffer, where pushes of registers are
 * followed by `mov field(%rdi),%r64` (the function reads a field of its
 * first argument first). Its address, or -ENOEXEC. */
int vt_x86_func_reading_arg(const uint8_t *code, size_t at, uint64_t addr, uint8_t field,
			    uint64_t *start);

#endif /* VMTRACE_ELF_CODE_H */

/*
 * elf_code.c: bytes of an ELF module at a link-time address, and the x86-64
 * shapes runtime adapters look for in them (elf_code.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "elf_code.h"

int vt_elf_code_at(const char *path, uint64_t addr, uint8_t *buf, size_t len,
		   uint64_t *file_offset)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = -ENOENT;
	size_t nph = 0;
	Elf *elf;

	if (fd < 0)
		return -errno;
	if (elf_version(EV_CURRENT) == EV_NONE || !(elf = elf_begin(fd, ELF_C_READ, NULL))) {
		close(fd);
		return -ENOEXEC;
	}
	if (elf_getphdrnum(elf, &nph))
		err = -ENOEXEC;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (addr < ph.p_vaddr || addr + len > ph.p_vaddr + ph.p_filesz)
			continue;
		*file_offset = addr - ph.p_vaddr + ph.p_offset;
		err = pread(fd, buf, len, (off_t)*file_offset) == (ssize_t)len ? 0 : -EIO;
		break;
	}
	elf_end(elf);
	close(fd);
	return err;
}

/* mov %r64,%r64: REX.W (48, 49, 4c, 4d) 89 or 8b with a register ModRM */
static size_t mov_reg_reg(const uint8_t *c, size_t left)
{
	if (left >= 3 && (c[0] & 0xfa) == 0x48 && (c[1] == 0x89 || c[1] == 0x8b) && c[2] >= 0xc0)
		return 3;
	return 0;
}

int vt_x86_call_reg_after_jmp(const uint8_t *code, size_t len, uint64_t addr, size_t at,
			      uint64_t *after)
{
	int64_t rel, to;

	if (at + 6 > len || code[at] != 0x90)
		return -ENOEXEC;
	if (code[at + 1] == 0xeb) {
		rel = (int8_t)code[at + 2];
		at += 3;
	} else if (code[at + 1] == 0xe9) {
		int32_t r;

		memcpy(&r, code + at + 2, 4);
		rel = r;
		at += 6;
	} else {
		return -ENOEXEC;
	}
	to = (int64_t)at + rel;
	if (to < 0 || (size_t)to >= len)
		return -ENOEXEC;
	at = (size_t)to;
	for (int n = 0; n < 4; n++) {
		size_t m = mov_reg_reg(code + at, len - at);

		if (!m)
			break;
		at += m;
	}
	/* call *%reg: ff d0+r, or 41 ff d0+r for r8..r15 */
	if (at + 3 <= len && code[at] == 0x41 && code[at + 1] == 0xff && (code[at + 2] & 0xf8) == 0xd0)
		at += 3;
	else if (at + 2 <= len && code[at] == 0xff && (code[at + 1] & 0xf8) == 0xd0)
		at += 2;
	else
		return -ENOEXEC;
	*after = addr + at;
	return 0;
}

int vt_x86_call_after_jcc(const uint8_t *code, size_t len, uint64_t addr, uint64_t *target)
{
	size_t at = 0;
	int32_t rel;

	/* a test of a global: mov disp32(%rip),%r32 and test %r32,%r32, or
	 * cmpl $imm8,disp32(%rip); then jcc rel8 (70..7f) or rel32 (0f 80..8f) */
	if (len >= 8 && code[0] == 0x8b && (code[1] & 0xc7) == 0x05 && code[6] == 0x85 &&
	    code[7] >= 0xc0)
		at = 8;
	else if (len >= 7 && code[0] == 0x83 && code[1] == 0x3d)
		at = 7;
	else
		return -ENOEXEC;
	if (at + 2 <= len && (code[at] & 0xf0) == 0x70) {
		at = at + 2 + (size_t)(int8_t)code[at + 1];
	} else if (at + 6 <= len && code[at] == 0x0f && (code[at + 1] & 0xf0) == 0x80) {
		memcpy(&rel, code + at + 2, 4);
		at = at + 6 + (size_t)(int64_t)rel;
	} else {
		return -ENOEXEC;
	}
	for (int n = 0; n <= 4 && at < len; n++) {
		const uint8_t *c = code + at;
		size_t left = len - at, m;

		if (left >= 5 && c[0] == 0xe8) {
			memcpy(&rel, c + 1, 4);
			*target = addr + at + 5 + (uint64_t)(int64_t)rel;
			return 0;
		}
		if (left >= 4 && c[0] == 0x48 && c[1] == 0x83 && c[2] == 0xec)
			m = 4;                                   /* sub $imm8,%rsp */
		else if ((c[0] & 0xf8) == 0x50)
			m = 1;                                   /* push %reg */
		else if (left >= 2 && c[0] == 0x41 && (c[1] & 0xf8) == 0x50)
			m = 2;                                   /* push %r8..%r15 */
		else if (left >= 5 && (c[0] & 0xfa) == 0x48 && c[1] == 0x89 && (c[2] & 0xc7) == 0x44 &&
			 c[3] == 0x24)
			m = 5;                                   /* mov %reg,off8(%rsp) */
		else
			m = mov_reg_reg(c, left);
		if (!m)
			break;
		at += m;
	}
	return -ENOEXEC;
}

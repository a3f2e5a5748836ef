/*
 * elf_code.c: bytes of an ELF module at a link-time address, and the x86-64
 * shapes runtime adapters look for in them (elf_code.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "process/elf_code.h"
#include "process/target_fs.h"

/* fn(phdr, ctx) for each PT_LOAD of the ELF file at fd, until fn returns
 * non-zero (that value is returned), or -ENOENT. */
static int each_load(int fd, int (*fn)(const GElf_Phdr *ph, int fd, void *ctx), void *ctx)
{
	size_t nph = 0;
	int err = -ENOENT;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE || !(elf = elf_begin(fd, ELF_C_READ, NULL)))
		return -ENOEXEC;
	if (elf_getphdrnum(elf, &nph))
		err = -ENOEXEC;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		int r;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		r = fn(&ph, fd, ctx);
		if (r) {
			err = r > 0 ? 0 : r;
			break;
		}
	}
	elf_end(elf);
	return err;
}

struct code_at {
	uint64_t addr, *file_offset;
	uint8_t *buf;
	size_t len;
};

static int read_code(const GElf_Phdr *ph, int fd, void *ctx)
{
	struct code_at *c = ctx;

	if (c->addr < ph->p_vaddr || c->addr + c->len > ph->p_vaddr + ph->p_filesz)
		return 0;
	*c->file_offset = c->addr - ph->p_vaddr + ph->p_offset;
	return pread(fd, c->buf, c->len, (off_t)*c->file_offset) == (ssize_t)c->len ? 1 : -EIO;
}

static int first_vaddr(const GElf_Phdr *ph, int fd, void *ctx)
{
	(void)fd;
	if (ph->p_offset != 0)
		return 0;
	*(uint64_t *)ctx = ph->p_vaddr;
	return 1;
}

static int with_file(const char *path, int (*fn)(const GElf_Phdr *, int, void *), void *ctx)
{
	int fd = vt_open_regular(path), err;

	if (fd < 0)
		return fd;
	err = each_load(fd, fn, ctx);
	close(fd);
	return err;
}

int vt_elf_code_at(const char *path, uint64_t addr, uint8_t *buf, size_t len,
		   uint64_t *file_offset)
{
	struct code_at c = { addr, file_offset, buf, len };

	return with_file(path, read_code, &c);
}

int vt_elf_first_vaddr(const char *path, uint64_t *vaddr)
{
	return with_file(path, first_vaddr, vaddr);
}

/* mov %r64,%r64: REX.W (48, 49, 4c, 4d) 89 or 8b with a register ModRM */
static size_t mov_reg_reg(const uint8_t *c, size_t left)
{
	if (left >= 3 && (c[0] & 0xfa) == 0x48 && (c[1] == 0x89 || c[1] == 0x8b) && c[2] >= 0xc0)
		return 3;
	return 0;
}

int vt_x86_lea_after_call(const uint8_t *code, size_t len, uint64_t addr, uint64_t *target)
{
	for (size_t at = 0; at + 15 <= len; at++) {
		const uint8_t *c = code + at;
		int32_t rel;

		/* call rel32; lea disp32(%rip),%r64 (REX.W 8d, ModRM mod=00 rm=101);
		 * cmp %rax,that register (REX.W 39, ModRM mod=11 reg=rax) */
		if (c[0] != 0xe8 || (c[5] & 0xfb) != 0x48 || c[6] != 0x8d || (c[7] & 0xc7) != 0x05)
			continue;
		if ((c[12] & 0xfe) != 0x48 || c[13] != 0x39 || (c[14] & 0xf8) != 0xc0 ||
		    (c[14] & 7) != ((c[7] >> 3) & 7) || ((c[12] & 1) != ((c[5] >> 2) & 1)))
			continue;
		memcpy(&rel, c + 8, 4);
		*target = addr + at + 12 + (uint64_t)(int64_t)rel;
		return 0;
	}
	return -ENOEXEC;
}

int vt_x86_first_emulated(const uint8_t *code, size_t len, uint64_t addr, uint64_t *at_addr,
			  int8_t arg_reg[VT_X86_ARGS])
{
	/* holds[r]: which argument (1..3: %rdi, %rsi, %rdx at entry) register r holds, 0 none */
	uint8_t holds[16] = { [7] = 1, [6] = 2, [2] = 3 };
	size_t at = 0;

	for (int n = 0; n < 16 && at < len; n++) {
		const uint8_t *c = code + at;
		size_t left = len - at, m = 0;
		int dst = -1;

		/* emulated by the kernel's uprobes: push, jmp, jcc, call rel32 */
		if ((c[0] & 0xf8) == 0x50 || (left >= 2 && c[0] == 0x41 && (c[1] & 0xf8) == 0x50) ||
		    (c[0] & 0xf0) == 0x70 || c[0] == 0xeb || c[0] == 0xe9 || c[0] == 0xe8 ||
		    (left >= 2 && c[0] == 0x0f && (c[1] & 0xf0) == 0x80)) {
			for (int a = 0; a < VT_X86_ARGS; a++) {
				arg_reg[a] = -1;
				for (int r = 0; r < 16; r++)
					if (holds[r] == a + 1)
						arg_reg[a] = (int8_t)r;
			}
			*at_addr = addr + at;
			return 0;
		}
		if (left < 3 || (c[0] & 0xf0) != 0x40 || !(c[0] & 8))
			return -ENOEXEC;         /* only REX.W forms below */
		uint8_t rex = c[0], op = c[1], modrm = c[2], mod = modrm >> 6;
		int reg = ((modrm >> 3) & 7) | ((rex & 4) << 1), rm = (modrm & 7) | ((rex & 1) << 3);

		if (op == 0x83 && (modrm == 0xec || modrm == 0xc4) && left >= 4) {
			m = 4;                   /* sub/add $imm8,%rsp */
		} else if ((op == 0x89 || op == 0x8b) && mod == 3) {
			int from = op == 0x89 ? reg : rm, to = op == 0x89 ? rm : reg;

			holds[to] = holds[from]; /* mov %r64,%r64 */
			m = 3;
		} else if (op == 0x8b && mod == 0 && (modrm & 7) == 5 && left >= 7) {
			m = 7;                   /* mov disp32(%rip),%r64 */
			dst = reg;
		} else if (op == 0x8b && mod == 0 && (modrm & 7) != 4 && (modrm & 7) != 5) {
			m = 3;                   /* mov (%r64),%r64 */
			dst = reg;
		} else if (op == 0x8b && mod == 1 && (modrm & 7) != 4 && left >= 4) {
			m = 4;                   /* mov disp8(%r64),%r64 */
			dst = reg;
		} else if (op == 0x85 && mod == 3) {
			m = 3;                   /* test %r64,%r64 */
		} else {
			return -ENOEXEC;
		}
		if (dst >= 0)
			holds[dst] = 0;
		at += m;
	}
	return -ENOEXEC;
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

/* At p: pushes, then mov field(%rdi),%r64 before at? */
static bool pushes_then_read(const uint8_t *code, size_t p, size_t at, uint8_t field)
{
	size_t q = p;

	/* push %reg (50+r) or push %r8..%r15 (41 50+r), at least one */
	while (q < at) {
		if ((code[q] & 0xf8) == 0x50)
			q += 1;
		else if (q + 1 < at && code[q] == 0x41 && (code[q + 1] & 0xf8) == 0x50)
			q += 2;
		else
			break;
	}
	/* mov disp8(%rdi),%r64: REX.W 8b, ModRM mod=01 rm=111, disp8 */
	return q > p && q + 4 <= at && (code[q] & 0xfb) == 0x48 && code[q + 1] == 0x8b &&
	       (code[q + 2] & 0xc7) == 0x47 && code[q + 3] == field;
}

int vt_x86_func_reading_arg(const uint8_t *code, size_t at, uint64_t addr, uint8_t field,
			    uint64_t *start)
{
	size_t found = SIZE_MAX;

	/* the nearest match, then back over the rest of its pushes */
	for (size_t p = at; p-- > 0;) {
		if (pushes_then_read(code, p, at, field))
			found = p;
		else if (found != SIZE_MAX && p + 2 < found)
			break;
	}
	if (found == SIZE_MAX)
		return -ENOEXEC;
	*start = addr + found;
	return 0;
}

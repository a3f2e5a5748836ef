/*
 * ruby_sites.c: print the places vmtrace's Ruby adapter probes in a libruby
 * (ruby_code.h), one line each: function, file offset, the register holding
 * the class ("-": none), the one holding the flags ("-": none), and the
 * type when the flags do not give it (hex, "-": from the flags), and
 * whether a plain object's ivar buffer is counted (1/0), and whether the
 * kernel emulates the probed instruction (1: one trap) or single-steps it
 * (0: two).
 *
 * Usage: bench_ruby_sites [--entry] /path/to/libruby.so
 *   --entry  each function's first instruction instead (bpftrace 0.17
 *            refuses a uprobe inside a symbol when it cannot disassemble)
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "runtimes/ruby/ruby_code.h"
#include "runtimes/ruby/ruby_maps.h"

static const char *const reg_names[16] = {
	"ax", "cx", "dx", "bx", "sp", "bp", "si", "di",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

static const char *reg_name(unsigned r)
{
	return r < 16 ? reg_names[r] : "-";
}

int main(int argc, char **argv)
{
	struct vt_rb_alloc_site s[VT_RB_ALLOC_FUNCS];
	char why[256];

	bool entry = argc == 3 && strcmp(argv[1], "--entry") == 0;

	if (argc != 2 + entry) {
		fprintf(stderr, "usage: bench_ruby_sites [--entry] LIBRUBY\n");
		return 2;
	}
	if (vt_rb_find_alloc_sites(argv[argc - 1], entry, s, why, sizeof(why))) {
		fprintf(stderr, "bench_ruby_sites: %s\n", why);
		return 1;
	}
	for (int i = 0; i < VT_RB_ALLOC_FUNCS; i++) {
		unsigned type = s[i].cookie & 0xff;
		char t[8];

		snprintf(t, sizeof(t), type == VT_RB_CK_TYPE_FROM_FLAGS ? "-" : "0x%x", type);
		printf("%s 0x%llx %s %s %s %d %d\n", s[i].func, (unsigned long long)s[i].file_offset,
		       reg_name((s[i].cookie >> 8) & 0xff), reg_name((s[i].cookie >> 16) & 0xff), t,
		       (s[i].cookie & VT_RB_CK_IVARS) ? 1 : 0, s[i].emulated);
	}
	return 0;
}

/*
 * libFuzzer target for the ELF note parser: any bytes as a .note.stapsdt
 * section. The parser must return 0 or an error, never read out of bounds
 * (ASan), overflow (UBSan) or leak, and every probe it accepts must be whole.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "process/usdt_notes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vt_usdt_list l = { 0 };
	int err = vt_usdt_parse_notes(data, size, "/fuzz", &l);

	if (err != 0 && l.n > 0 && err != -22 /* EINVAL keeps the notes before */)
		abort();
	for (size_t i = 0; i < l.n; i++) {
		const struct vt_usdt_probe *p = &l.v[i];
		/* strings came from inside the input, and names are never empty */
		if (!*p->provider || !*p->name || p->nargs < 0 ||
		    strlen(p->provider) + strlen(p->name) + strlen(p->args) + 27 > size ||
		    strcmp(p->path, "/fuzz") != 0)
			abort();
	}
	vt_usdt_list_free(&l);
	return 0;
}

/*
 * report_registry.c: the one table of renderers, built from
 * VT_REPORT_FORMATS (report_opts.h), the diff renderers' from
 * VT_DIFF_FORMATS, and the dispatch through them. The
 * renderers know nothing of this file.
 */
#include <errno.h>
#include <string.h>

#include "report/report_registry.h"

static const struct {
	const char *name;
	vt_render_fn *render;
} renderers[] = {
#define VT_RENDERER_ENTRY_(up, name) [VT_FORMAT_##up] = { #name, vt_report_##name },
	VT_REPORT_FORMATS(VT_RENDERER_ENTRY_)
#undef VT_RENDERER_ENTRY_
};

/* the diff renderers, by the report format of the same name */
static vt_diff_render_fn *const diff_renderers[VT_FORMAT__COUNT] = {
#define VT_DIFF_ENTRY_(up, name) [VT_FORMAT_##up] = vt_diff_report_##name,
	VT_DIFF_FORMATS(VT_DIFF_ENTRY_)
#undef VT_DIFF_ENTRY_
};

int vt_parse_format(const char *s, enum vt_format *out)
{
	for (int i = 0; s && i < VT_FORMAT__COUNT; i++) {
		if (!strcmp(s, renderers[i].name)) {
			*out = (enum vt_format)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *vt_format_name(enum vt_format f)
{
	return (unsigned)f < VT_FORMAT__COUNT ? renderers[f].name : "?";
}

const char *vt_format_list(void)
{
#define VT_FORMAT_NAME_(up, name) ", " #name
	/* skip the first ", " */
	static const char list[] = VT_REPORT_FORMATS(VT_FORMAT_NAME_);
#undef VT_FORMAT_NAME_
	return list + 2;
}

int vt_report_print(FILE *out, const struct vt_profile *p, const struct vt_report_opts *opts)
{
	int err;

	if ((unsigned)opts->format >= VT_FORMAT__COUNT)
		return -EINVAL;
	err = renderers[opts->format].render(out, p, opts);
	if (!err && (fflush(out) || ferror(out)))
		err = errno ? -errno : -EIO;
	return err;
}

int vt_diff_print(FILE *out, const struct vt_diff *d, const struct vt_diff_names *names,
		  const struct vt_report_opts *opts)
{
	int err;

	if ((unsigned)opts->format >= VT_FORMAT__COUNT || !diff_renderers[opts->format])
		return -ENOTSUP;
	err = diff_renderers[opts->format](out, d, names, opts);
	if (!err && (fflush(out) || ferror(out)))
		err = errno ? -errno : -EIO;
	return err;
}

bool vt_diff_has_format(enum vt_format f)
{
	return (unsigned)f < VT_FORMAT__COUNT && diff_renderers[f];
}

const char *vt_diff_format_list(void)
{
#define VT_DIFF_NAME_(up, name) ", " #name
	static const char list[] = VT_DIFF_FORMATS(VT_DIFF_NAME_);
#undef VT_DIFF_NAME_
	return list + 2;
}

/*
 * php_layout_rows.h: the Zend engine's layout, one row per PHP extension
 * API version (data only: php_layout.c reads it, and
 * tests/runtimes/php/php_layout_check.c compiles it against each version's
 * headers and compares). A new version adds a row here.
 */
#ifndef VMTRACE_PHP_LAYOUT_ROWS_H
#define VMTRACE_PHP_LAYOUT_ROWS_H

#include "runtimes/php/php_maps.h"

/* PHP 8.2 (Debian 12) and 8.4 (Debian 13) lay these out alike. */
static const struct vt_php_layout zend_8_2 = {
	.ce_name = 8, .ce_flags = 28, .ce_props = 32, .zstr_val = 24, .object_size = 56, .zval_size = 16,
	.acc_use_guards = 1u << 11, .eg_current_execute_data = 488, .ex_func = 24, .ex_prev = 48,
	.fn_type = 0, .fn_name = 8, .fn_scope = 16, .user_function = 2,
};

/* One row per extension API version; a new version adds a row, checked
 * by php_layout_check.c against its headers. */
static const struct vt_php_row {
	int api;
	const char *version;
	const struct vt_php_layout *l;
} rows[] = {
	{ 20220829, "8.2", &zend_8_2 },
	{ 20240924, "8.4", &zend_8_2 },
};

#define VT_PHP_ROWS (sizeof(rows) / sizeof(rows[0]))

#endif

/*
 * php_layout_check.c: the row of consumer/src/runtimes/php/php_layout_rows.h
 * for the PHP whose headers this is compiled against, compared with what
 * those headers say (php_versions_test.py builds it with that PHP's
 * php-config, on the host and in each root). Prints each field; exit 0
 * when all agree, 1 when one differs, 2 when the version has no row.
 */
#include <stddef.h>
#include <stdio.h>

#include "php.h"
#include "zend_globals.h"

#include "runtimes/php/php_layout_rows.h"

#define CHECK(field, want)                                                                          \
	do {                                                                                        \
		unsigned long w = (unsigned long)(want);                                            \
		printf("%-24s row %-6u headers %-6lu %s\n", #field, (unsigned)l->field, w,          \
		       l->field == w ? "ok" : "DIFFERS");                                           \
		bad |= l->field != w;                                                               \
	} while (0)

int main(void)
{
	const struct vt_php_layout *l = NULL;
	int bad = 0;

	for (size_t i = 0; i < VT_PHP_ROWS; i++)
		if (rows[i].api == ZEND_MODULE_API_NO)
			l = rows[i].l;
	if (!l) {
		printf("no row for PHP API %d (%s)\n", ZEND_MODULE_API_NO, PHP_VERSION);
		return 2;
	}
	printf("PHP %s, API %d\n", PHP_VERSION, ZEND_MODULE_API_NO);
	CHECK(ce_name, offsetof(zend_class_entry, name));
	CHECK(ce_flags, offsetof(zend_class_entry, ce_flags));
	CHECK(ce_props, offsetof(zend_class_entry, default_properties_count));
	CHECK(zstr_val, offsetof(zend_string, val));
	CHECK(object_size, sizeof(zend_object));
	CHECK(zval_size, sizeof(zval));
	CHECK(acc_use_guards, ZEND_ACC_USE_GUARDS);
	CHECK(eg_current_execute_data, offsetof(zend_executor_globals, current_execute_data));
	CHECK(ex_func, offsetof(zend_execute_data, func));
	CHECK(ex_prev, offsetof(zend_execute_data, prev_execute_data));
	CHECK(fn_type, offsetof(zend_function, common.type));
	CHECK(fn_name, offsetof(zend_function, common.function_name));
	CHECK(fn_scope, offsetof(zend_function, common.scope));
	CHECK(user_function, ZEND_USER_FUNCTION);
	return bad;
}

/*
 * vmtrace_php.c: PHP's function probes for a PHP built without DTrace
 * (Debian's 8.4 has none): php:function__entry and php:function__return,
 * with the arguments PHP's own probes give (function, file, line, class,
 * "::" or ""), fired around every named user function through the Zend
 * observer API. vmtrace's php adapter counts calls per function from them,
 * as it does on a PHP with its own probes; objects it counts from outside.
 *
 * Loaded as an extension (extension=vmtrace in php.ini, or `php -d
 * extension=vmtrace`, which `vmtrace record --` gives a php it starts when
 * the extension is installed for it). The observer runs on every user call;
 * each probe fires only while a tracer holds its semaphore, so untraced the
 * cost is the observer's call and one load.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include "php.h"
#include "zend_observer.h"

/* the USDT semaphores the notes name: raised by the kernel while a uprobe
 * is attached to the probe */
__extension__ unsigned short php_function__entry_semaphore __attribute__((unused))
	__attribute__((section(".probes")));
__extension__ unsigned short php_function__return_semaphore __attribute__((unused))
	__attribute__((section(".probes")));

static void where(const zend_function *f, const char **fn, const char **file, int *line,
		  const char **klass, const char **scope)
{
	*fn = ZSTR_VAL(f->common.function_name);
	*file = f->op_array.filename ? ZSTR_VAL(f->op_array.filename) : "";
	*line = (int)f->op_array.line_start;
	*klass = f->common.scope ? ZSTR_VAL(f->common.scope->name) : "";
	*scope = f->common.scope ? "::" : "";
}

static void on_begin(zend_execute_data *ex)
{
	const char *fn, *file, *klass, *scope;
	int line;

	if (!php_function__entry_semaphore)
		return;
	where(ex->func, &fn, &file, &line, &klass, &scope);
	STAP_PROBE5(php, function__entry, fn, file, line, klass, scope);
}

static void on_end(zend_execute_data *ex, zval *retval)
{
	const char *fn, *file, *klass, *scope;
	int line;

	(void)retval;
	if (!php_function__return_semaphore)
		return;
	where(ex->func, &fn, &file, &line, &klass, &scope);
	STAP_PROBE5(php, function__return, fn, file, line, klass, scope);
}

/* Called once per function, at its first call: handlers for named user
 * functions, as PHP's own probes fire for them alone. */
static zend_observer_fcall_handlers observe(zend_execute_data *ex)
{
	const zend_function *f = ex->func;

	if (f->type != ZEND_USER_FUNCTION || !f->common.function_name)
		return (zend_observer_fcall_handlers){ NULL, NULL };
	return (zend_observer_fcall_handlers){ on_begin, on_end };
}

static PHP_MINIT_FUNCTION(vmtrace)
{
	(void)type, (void)module_number;
	zend_observer_fcall_register(observe);
	return SUCCESS;
}

zend_module_entry vmtrace_module_entry = {
	STANDARD_MODULE_HEADER,
	"vmtrace",
	NULL,
	PHP_MINIT(vmtrace),
	NULL,
	NULL,
	NULL,
	NULL,
	"0.4",
	STANDARD_MODULE_PROPERTIES,
};

ZEND_GET_MODULE(vmtrace)

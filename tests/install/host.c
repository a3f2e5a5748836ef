/* A minimal host runtime: one allocation site of each form, run once. */
#include <stdio.h>
#include <vmtrace/vmtrace.h>

int main(void)
{
	static struct vmtrace_key_cache site_key, free_key;
	static char widget[48];

	vmtrace_alloc("Widget", "Factory#build", 48, "host.c:11");
	vmtrace_alloc_cached(&site_key, "Widget", "Factory#build", 48, "host.c:12", widget);
	vmtrace_free_cached(&free_key, "Widget", 48, widget);
	printf("enabled=%d\n", VMTRACE_ENABLED(OBJECT_ALLOC) ? 1 : 0);
	return 0;
}

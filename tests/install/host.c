/* A minimal host runtime: one allocation site, run once. */
#include <stdio.h>
#include <vmtrace/vmtrace.h>

int main(void)
{
	vmtrace_alloc("Widget", "Factory#build", 48, "host.c:7");
	printf("enabled=%d\n", VMTRACE_ENABLED(OBJECT_ALLOC) ? 1 : 0);
	return 0;
}

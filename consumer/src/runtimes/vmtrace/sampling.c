/*
 * sampling.c: set and read the allocation sampling period of a running
 * process (docs/sampling.md explains the design).
 *
 * Where the variable is. vmtrace_sample_period is an exported symbol of the
 * ELF module that holds the vmtrace probes (libvmtrace.so, or the host
 * executable when it links libvmtrace statically), found in the process by
 * vt_proc_symbol_address (process/proc_info.h: .bss past the file's end
 * included). The module file is read through /proc/PID/map_files (or the
 * process's own root), so deleted and namespaced modules work. Writes go
 * through /proc/PID/mem, which needs ptrace rights, as attaching uprobes
 * does.
 */
#include <errno.h>
#include <string.h>

#include "process/proc_info.h"
#include "runtimes/vmtrace/sampling.h"

#define PERIOD_SYMBOL "vmtrace_sample_period"
#define ARMED_SEMAPHORE_SYMBOL "vmtrace_sample__armed_semaphore"

/* The module holding the vmtrace provider's probes. */
static const char *vmtrace_module(const struct vt_usdt_list *probes)
{
	const char *any = NULL;

	for (size_t i = 0; probes && i < probes->n; i++) {
		if (strcmp(probes->v[i].provider, "vmtrace") != 0)
			continue;
		if (strcmp(probes->v[i].name, "sample__armed") == 0)
			return probes->v[i].path;
		if (!any)
			any = probes->v[i].path;
	}
	return any;
}

static int locate(pid_t pid, const struct vt_usdt_list *probes, const char *symbol, uint64_t *addr)
{
	const char *module = vmtrace_module(probes);

	if (pid <= 0)
		return -ESRCH;
	if (!module)
		return -ENOENT;
	return vt_proc_symbol_address(pid, module, symbol, addr);
}

int vt_provider_write_u64_at(pid_t pid, const struct vt_usdt_list *probes, const char *symbol,
			     uint64_t offset, uint64_t value)
{
	uint64_t addr;
	int err = locate(pid, probes, symbol, &addr);

	return err ? err : vt_proc_mem_write(pid, addr + offset, &value, sizeof(value));
}

int vt_provider_write_u64(pid_t pid, const struct vt_usdt_list *probes, const char *symbol,
			  uint64_t value)
{
	return vt_provider_write_u64_at(pid, probes, symbol, 0, value);
}

int vt_sample_set_period(pid_t pid, const struct vt_usdt_list *probes, uint64_t period)
{
	uint64_t addr;
	int err = locate(pid, probes, PERIOD_SYMBOL, &addr);

	if (err)
		return err;
	/* callers write before attaching sample__armed: until then the
	 * provider ignores the variable, so it never sees a half-written one */
	return vt_proc_mem_write(pid, addr, &period, sizeof(period));
}

int vt_sample_get_period(pid_t pid, const struct vt_usdt_list *probes, uint64_t *period)
{
	uint64_t addr;
	int err = locate(pid, probes, PERIOD_SYMBOL, &addr);

	if (err)
		return err;
	return vt_proc_mem_read(pid, addr, period, sizeof(*period));
}

int vt_sample_armed_count(pid_t pid, const struct vt_usdt_list *probes, uint16_t *count)
{
	uint64_t addr;
	int err = locate(pid, probes, ARMED_SEMAPHORE_SYMBOL, &addr);

	if (err)
		return err;
	return vt_proc_mem_read(pid, addr, count, sizeof(*count));
}

int vt_provider_read(pid_t pid, const struct vt_usdt_list *probes, const char *symbol, void *buf,
		     size_t len)
{
	uint64_t addr;
	int err = locate(pid, probes, symbol, &addr);

	return err ? err : vt_proc_mem_read(pid, addr, buf, len);
}

int vt_provider_locate(pid_t pid, const struct vt_usdt_list *probes, const char *symbol, uint64_t *addr)
{
	return locate(pid, probes, symbol, addr);
}

int vt_provider_read_at(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	return vt_proc_mem_read(pid, addr, buf, len);
}

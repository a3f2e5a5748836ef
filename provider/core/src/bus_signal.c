/*
 * bus_signal.c: routing signals onto the bus. The handler does two
 * async-signal-safe things, fire signal__received and publish one
 * VMTRACE_EV_SIGNAL event stamped with the receive time; the dispatcher runs
 * the subscribers and then fires signal__handled with the latency (bus_dispatch.c).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "vmtrace/bus.h"
#include "primitives.h"

static pthread_mutex_t route_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction previous[NSIG];
static unsigned char routed[NSIG];

static void route_handler(int signo, siginfo_t *info, void *ucontext)
{
	int saved_errno = errno;
	struct vmtrace_event ev = {
		.kind = VMTRACE_EV_SIGNAL,
		.time_ns = vmtrace__now_ns(),
		.u.signal.signo = signo,
	};

	(void)info;
	(void)ucontext;
	vmtrace__fire_signal_received(signo);
	ev.producer = vmtrace__gettid();
	vmtrace_bus_publish(&ev);
	errno = saved_errno;
}

int vmtrace_signal_route(int signo)
{
	struct sigaction sa;
	int err = 0;

	if (signo <= 0 || signo >= NSIG || signo == SIGKILL || signo == SIGSTOP)
		return -EINVAL;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = route_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	pthread_mutex_lock(&route_lock);
	if (!routed[signo]) {
		if (sigaction(signo, &sa, &previous[signo]) == 0)
			routed[signo] = 1;
		else
			err = -errno;
	}
	pthread_mutex_unlock(&route_lock);
	return err;
}

int vmtrace_signal_unroute(int signo)
{
	int err = 0;

	if (signo <= 0 || signo >= NSIG)
		return -EINVAL;
	pthread_mutex_lock(&route_lock);
	if (!routed[signo])
		err = -ENOENT;
	else if (sigaction(signo, &previous[signo], NULL) != 0)
		err = -errno;
	else
		routed[signo] = 0;
	pthread_mutex_unlock(&route_lock);
	return err;
}

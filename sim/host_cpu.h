#pragma once
// The host's cores a run may use: those this process may run on (its CPU affinity),
// less those other runnable tasks keep busy right now. A partitioned run that takes a
// thread per core on a machine whose cores are taken waits, every window, for the
// thread the OS has descheduled (issue 43), so when the user gives no thread count a
// run takes the cores that are free.

#include <string_view>

namespace t3sim {

// The CPUs this process may run on (sched_getaffinity; hardware_concurrency where that
// fails), at least 1.
unsigned host_cores();

// host_cores() less the tasks other than the caller that are runnable now
// (/proc/stat's procs_running, which counts the caller's running thread), at least 1.
// A snapshot: load that starts later is not seen (the windows' work pool absorbs it).
unsigned host_cores_free();

// procs_running from the text of /proc/stat (0 if absent); exposed for tests.
unsigned procs_running_in(std::string_view proc_stat);

}  // namespace t3sim

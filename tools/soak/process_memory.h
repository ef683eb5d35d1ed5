// The server's memory, as the kernel sees it: which processes make up the
// server (given, or found from the port it listens on; for an MPI job every
// rank), and their resident set size, read from /proc/<pid>/status.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::soak {

// The VmRSS line of a /proc/<pid>/status text, in kB; nullopt when there is
// none (a kernel thread, or a process that is exiting).
std::optional<long> parse_vm_rss_kb(std::string_view status_text);

// VmRSS of a live process, in kB; nullopt when it is gone or unreadable.
std::optional<long> read_rss_kb(int pid);

// The process's name (/proc/<pid>/comm), "" when it is gone.
std::string process_name(int pid);

// The inode of the socket listening on TCP `port` (any address, IPv4 or
// IPv6), from the text of /proc/net/tcp or /proc/net/tcp6; nullopt when no
// line there listens on it.
std::optional<unsigned long> listening_inode(std::string_view proc_net_tcp, int port);

// The server's processes: the one holding the socket that listens on
// `port`, and, when its parent is an MPI launcher (mpirun, mpiexec, orterun,
// prterun), every other child of that launcher running the same executable
// (the other ranks). Error (not_found) naming the port when no process
// listens on it; reading other users' processes needs their permission.
std::vector<int> find_server_processes(int port);

}  // namespace tandem::soak

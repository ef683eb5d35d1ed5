// How many connections the process's open-file limit leaves room for.
//
// Every connection holds one file descriptor. Past RLIMIT_NOFILE, accept()
// fails with EMFILE and the server cannot even answer GET /health, so
// server.max_connections must stay below what the limit leaves once the
// descriptors already open (models, logs, MPI) and a spare are counted.
#pragma once

namespace tandem::http {

// Descriptors kept free for everything but connections: files opened while
// models load after the server listens, MPI, the refusals' own sockets.
inline constexpr int kSpareDescriptors = 64;

// RLIMIT_NOFILE's soft limit minus the descriptors open now minus the spare;
// at least 1. A very large number when the limit is infinite.
int connections_within_fd_limit();

}  // namespace tandem::http

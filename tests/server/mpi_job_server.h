// MpiJobServer: a deployment served by `mpirun -np N tandem serve` as a child
// process (coordinator on rank 0, the draft on rank 1, the target split over
// the remaining ranks), for running the in-process server tests against an
// MPI job: TestServer uses it when TANDEM_TEST_MPI_RANKS is set.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace tandem::test_support {

// Ranks of an MPI job for the server tests; 0 when they run in process.
inline int mpi_test_ranks() {
  const char* ranks = std::getenv("TANDEM_TEST_MPI_RANKS");
  return ranks ? std::atoi(ranks) : 0;
}

class MpiJobServer {
 public:
  // yaml: a deployment without placement; ranks >= 3 with a draft (2 without).
  MpiJobServer(const std::string& yaml, bool draft, int ranks) {
    static int count = 0;
    const std::string stem = (std::filesystem::temp_directory_path() /
                              ("tandem-mpi-job-" + std::to_string(getpid()) + "-" +
                               std::to_string(count++)))
                                 .string();
    config_ = stem + ".yaml";
    log_ = stem + ".log";
    std::ofstream(config_) << yaml << placement(draft, ranks);
    pid_ = fork();
    if (pid_ == 0) {
      if (!std::freopen(log_.c_str(), "w", stderr) || !std::freopen("/dev/null", "w", stdout))
        _exit(127);
      const std::string binary = std::string(TANDEM_BINARY_DIR) + "/tandem";
      const std::string np = std::to_string(ranks);
      execlp("mpirun", "mpirun", "-np", np.c_str(), binary.c_str(), "serve", "--config",
             config_.c_str(), "--port", "0", static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    port_ = wait_until_ready();
  }
  MpiJobServer(const MpiJobServer&) = delete;
  MpiJobServer& operator=(const MpiJobServer&) = delete;

  ~MpiJobServer() {
    const int status = shutdown();
    std::filesystem::remove(config_);
    if (status == 0) std::filesystem::remove(log_);  // kept for a failed job
  }

  int port() const { return port_; }

  // SIGTERM to rank 0 (the graceful shutdown) and the job's exit status;
  // every rank must stop and mpirun exit 0.
  int shutdown() {
    if (pid_ <= 0) return exit_status_;
    if (const pid_t rank0 = rank_pid(0); rank0 > 0) kill(rank0, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_status_;
  }

  // What the job's ranks have written to stderr so far.
  std::string log_text() const {
    std::ifstream in(log_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  static std::string placement(bool draft, int ranks) {
    std::string targets;
    for (int r = draft ? 2 : 1; r < ranks; ++r) targets += (targets.empty() ? "" : ", ") + std::to_string(r);
    return "placement:\n  cpu_threads: 1\n" + std::string(draft ? "  draft_rank: 1\n" : "") +
           "  target_ranks: [" + targets + "]\n";
  }


  int wait_until_ready() const {
    const std::string marker = "listening on http://127.0.0.1:";
    for (int i = 0; i < 600; ++i) {
      const std::string text = log_text();
      const size_t at = text.find(marker);
      if (at != std::string::npos && text.find("tandem: ready") != std::string::npos)
        return std::stoi(text.substr(at + marker.size()));
      if (waitpid(pid_, nullptr, WNOHANG) == pid_)
        throw std::runtime_error("the MPI job ended before it was ready:\n" + text);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    throw std::runtime_error("the MPI job was not ready within 60 s:\n" + log_text());
  }

  // The child of mpirun whose environment names it rank `rank`.
  pid_t rank_pid(int rank) const {
    const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      const std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream stat(entry.path() / "stat");
      std::string pid, comm, state;
      pid_t parent = 0;
      stat >> pid >> comm >> state >> parent;
      if (parent != pid_) continue;
      std::ifstream environ(entry.path() / "environ");
      for (std::string variable; std::getline(environ, variable, '\0');)
        if (variable == wanted) return static_cast<pid_t>(std::stoi(name));
    }
    return -1;
  }

  std::string config_, log_;
  pid_t pid_ = -1;
  int port_ = 0;
  int exit_status_ = -1;
};

}  // namespace tandem::test_support

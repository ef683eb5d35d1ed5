#include "tools/soak/process_memory.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace tandem::soak {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// Every process id under /proc.
std::vector<int> all_pids() {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    int pid = 0;
    const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (error == std::errc() && end == name.data() + name.size()) pids.push_back(pid);
  }
  return pids;
}

bool holds_socket(int pid, unsigned long inode) {
  const std::string wanted = "socket:[" + std::to_string(inode) + "]";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code link_error;
    if (fs::read_symlink(entry.path(), link_error).string() == wanted) return true;
  }
  return false;
}

// The parent's pid from /proc/<pid>/stat; the name there may hold spaces
// and parentheses, so fields are counted from the last ')'.
int parent_of(int pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  const auto fields = words(std::string_view(stat).substr(close + 1));
  if (fields.size() < 2) return 0;
  int parent = 0;
  std::from_chars(fields[1].data(), fields[1].data() + fields[1].size(), parent);
  return parent;
}

std::string executable_of(int pid) {
  std::error_code ec;
  return fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
}

}  // namespace

std::optional<long> parse_vm_rss_kb(std::string_view status_text) {
  size_t at = 0;
  while (at < status_text.size()) {
    const size_t newline = status_text.find('\n', at);
    const std::string_view line =
        status_text.substr(at, newline == std::string_view::npos ? std::string_view::npos : newline - at);
    at = newline == std::string_view::npos ? status_text.size() : newline + 1;
    if (line.rfind("VmRSS:", 0) != 0) continue;
    const auto fields = words(line.substr(6));
    if (fields.empty()) return std::nullopt;
    long kb = 0;
    const auto [end, error] = std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(), kb);
    if (error != std::errc() || end != fields[0].data() + fields[0].size()) return std::nullopt;
    return kb;
  }
  return std::nullopt;
}

std::optional<long> read_rss_kb(int pid) {
  return parse_vm_rss_kb(read_text("/proc/" + std::to_string(pid) + "/status"));
}

std::string process_name(int pid) {
  std::string name = read_text("/proc/" + std::to_string(pid) + "/comm");
  while (!name.empty() && name.back() == '\n') name.pop_back();
  return name;
}

std::optional<unsigned long> listening_inode(std::string_view proc_net_tcp, int port) {
  // Lines: "sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...",
  // local_address as HEXADDR:HEXPORT, st 0A for LISTEN.
  size_t at = 0;
  bool header = true;
  while (at < proc_net_tcp.size()) {
    const size_t newline = proc_net_tcp.find('\n', at);
    const std::string_view line = proc_net_tcp.substr(
        at, newline == std::string_view::npos ? std::string_view::npos : newline - at);
    at = newline == std::string_view::npos ? proc_net_tcp.size() : newline + 1;
    if (header) {
      header = false;
      continue;
    }
    const auto fields = words(line);
    if (fields.size() < 10 || fields[3] != "0A") continue;
    const size_t colon = fields[1].rfind(':');
    if (colon == std::string_view::npos) continue;
    int local_port = 0;
    const std::string_view hex = fields[1].substr(colon + 1);
    std::from_chars(hex.data(), hex.data() + hex.size(), local_port, 16);
    if (local_port != port) continue;
    unsigned long inode = 0;
    std::from_chars(fields[9].data(), fields[9].data() + fields[9].size(), inode);
    return inode;
  }
  return std::nullopt;
}

std::vector<int> find_server_processes(int port) {
  std::optional<unsigned long> inode = listening_inode(read_text("/proc/net/tcp"), port);
  if (!inode) inode = listening_inode(read_text("/proc/net/tcp6"), port);
  require(inode.has_value(), ErrorKind::not_found, [&] {
    return "no process listens on port " + std::to_string(port) + " here; give the server's pids with --pid";
  });
  const std::vector<int> pids = all_pids();
  int owner = 0;
  for (int pid : pids) {
    if (holds_socket(pid, *inode)) {
      owner = pid;
      break;
    }
  }
  require(owner != 0, ErrorKind::not_found, [&] {
    return "cannot see which process listens on port " + std::to_string(port) +
           " (another user's? run as that user or give --pid)";
  });
  std::vector<int> server{owner};
  const int launcher = parent_of(owner);
  const std::string launcher_name = process_name(launcher);
  if (launcher_name != "mpirun" && launcher_name != "mpiexec" && launcher_name != "orterun" &&
      launcher_name != "prterun")
    return server;
  const std::string executable = executable_of(owner);
  for (int pid : pids)
    if (pid != owner && parent_of(pid) == launcher && executable_of(pid) == executable)
      server.push_back(pid);
  return server;
}

}  // namespace tandem::soak

// log_line: one "tandem: ..." line of a process's log, written in one piece.
//
// The ranks of an MPI job share mpirun's stderr; a line written piecewise
// (std::cerr is unit-buffered: every << is its own write) interleaves with
// other ranks' lines, and scripts that read the log lose lines.
#pragma once

#include <ostream>
#include <sstream>
#include <string>

namespace tandem {

inline void log_line(std::ostream& out, const std::string& line) {
  const std::string whole = "tandem: " + line + "\n";
  out.write(whole.data(), static_cast<std::streamsize>(whole.size()));
  out.flush();
}

// The same, formatting its parts as << would: log_line(out, "ready in ", s, " s").
template <typename... Parts>
void log_line(std::ostream& out, const Parts&... parts) {
  std::ostringstream line;
  (line << ... << parts);
  log_line(out, line.str());
}

}  // namespace tandem

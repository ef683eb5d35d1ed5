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

// `line` and its newline in one write, with no prefix: for lines a machine
// reads whole (a JSON request log line is one JSON object).
inline void write_whole_line(std::ostream& out, const std::string& line) {
  const std::string whole = line + "\n";
  out.write(whole.data(), static_cast<std::streamsize>(whole.size()));
  out.flush();
}

inline void log_line(std::ostream& out, const std::string& line) {
  write_whole_line(out, "tandem: " + line);
}

// The same, formatting its parts as << would: log_line(out, "ready in ", s, " s").
template <typename... Parts>
void log_line(std::ostream& out, const Parts&... parts) {
  std::ostringstream line;
  (line << ... << parts);
  log_line(out, line.str());
}

}  // namespace tandem

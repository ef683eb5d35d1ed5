// LockedLog: the log a test server writes to. The server's HTTP threads and
// engine thread write to it at once (each line in one write, see
// common/log_line.h), and a test reads it meanwhile, so every access goes
// through one lock.
#pragma once

#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>

namespace tandem::test_support {

class LockedLogBuffer : public std::streambuf {
 public:
  std::string text() const {
    std::lock_guard lock(mutex_);
    return text_;
  }

 protected:
  // No put area: every write arrives here whole.
  std::streamsize xsputn(const char* data, std::streamsize size) override {
    std::lock_guard lock(mutex_);
    text_.append(data, static_cast<size_t>(size));
    return size;
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    std::lock_guard lock(mutex_);
    text_ += traits_type::to_char_type(c);
    return c;
  }

 private:
  mutable std::mutex mutex_;
  std::string text_;
};

class LockedLog : public std::ostream {
 public:
  LockedLog() : std::ostream(nullptr) { rdbuf(&buffer_); }
  std::string text() const { return buffer_.text(); }

 private:
  LockedLogBuffer buffer_;
};

}  // namespace tandem::test_support

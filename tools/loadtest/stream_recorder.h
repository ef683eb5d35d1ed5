// StreamRecorder: turns the body of a streamed OpenAI completion or chat
// completion (server-sent events, `data: {...}` ... `data: [DONE]`) into the
// timings and text of a RequestRecord, as the bytes arrive.
//
// It knows nothing of sockets: the client feeds it body bytes with the time
// they arrived, so it is tested with made-up streams and made-up clocks.
// Definitions follow vLLM's `bench serve`: the first event whose text is
// non-empty sets TTFT, each later one adds an ITL gap. The text is
// choices[0].text in a completions stream and choices[0].delta.content in a
// chat stream (whose role-only first chunk therefore is not a token).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "tools/loadtest/request_record.h"

namespace tandem::loadtest {

// The message of an OpenAI error object ({"error": {"message": ...}}) or of
// vLLM's flat one ({"object": "error", "message": ...}); empty when `body`
// is neither. Used for error events and for non-200 bodies alike.
std::string error_message_in(const nlohmann::json& body);

class StreamRecorder {
 public:
  // Body bytes that arrived `elapsed` seconds after the request was sent.
  // Events may be split anywhere across calls; both \n and \r\n line ends work.
  void feed(std::string_view bytes, double elapsed);
  // The body ended: an event left without its closing blank line still counts.
  void end_of_body(double elapsed);

  bool saw_done() const { return done_at_ >= 0; }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }  // from an error event
  int text_events() const { return text_events_; }

  // Copies what was seen into `record`: ttft, itl, text, token counts (from
  // the usage chunk; the number of text events without one), and latency:
  // when [DONE] came, else `end_elapsed`. Leaves ok, status and error alone.
  void fill(RequestRecord& record, double end_elapsed) const;

 private:
  void take_line(std::string_view line, double elapsed);
  void take_event(double elapsed);  // the data lines gathered so far form one event

  std::string pending_;  // bytes of an unfinished line
  std::string data_;     // data lines of the event being read, joined by \n
  bool has_data_ = false;
  double done_at_ = -1;
  double first_text_at_ = -1;
  double last_text_at_ = -1;
  RequestRecord seen_;   // ttft, itl, text, tokens
  bool has_usage_ = false;
  int text_events_ = 0;
  std::string error_;
};

}  // namespace tandem::loadtest

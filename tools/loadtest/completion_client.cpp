#include "tools/loadtest/completion_client.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tools/loadtest/stream_recorder.h"

namespace tandem::loadtest {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using nlohmann::json;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

Error bad_url(const std::string& url, const std::string& why) {
  return Error(ErrorKind::invalid_argument,
               "cannot use the URL '" + url + "': " + why +
                   " (expected http://host[:port][/path], e.g. http://127.0.0.1:8080/v1/completions)");
}

// What a non-200 response says went wrong: the message of its error
// object, else the start of the body.
std::string error_message(int status, const std::string& body) {
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (std::string message = error_message_in(parsed); !message.empty()) return message;
  if (body.empty()) return "HTTP " + std::to_string(status) + " with an empty body";
  return body.substr(0, 500);
}

}  // namespace

Endpoint parse_url(const std::string& url, const std::string& default_path) {
  if (url.rfind("https://", 0) == 0)
    throw Error(ErrorKind::unsupported, "cannot use the URL '" + url +
                                            "': https is not supported; use http:// (e.g. "
                                            "through a local TLS-terminating proxy)");
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) throw bad_url(url, "it does not start with http://");
  Endpoint endpoint;
  endpoint.path = default_path;
  const std::string rest = url.substr(scheme.size());
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos && rest.substr(slash) != "/") endpoint.path = rest.substr(slash);

  std::string port_text;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == std::string::npos) throw bad_url(url, "the IPv6 host has no closing ']'");
    endpoint.host = authority.substr(1, close - 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') throw bad_url(url, "junk after the IPv6 host");
    if (!after.empty()) port_text = after.substr(1);
    if (after == ":") throw bad_url(url, "the port is empty");
  } else {
    const size_t colon = authority.find(':');
    endpoint.host = authority.substr(0, colon);
    if (colon != std::string::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) throw bad_url(url, "the port is empty");
    }
  }
  if (endpoint.host.empty()) throw bad_url(url, "the host is empty");
  if (!port_text.empty()) {
    int port = 0;
    const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 1 || port > 65535)
      throw bad_url(url, "the port '" + port_text + "' is not a number from 1 to 65535");
    endpoint.port = port;
  }
  return endpoint;
}

std::string host_header(const Endpoint& endpoint) {
  const bool ipv6 = endpoint.host.find(':') != std::string::npos;
  return (ipv6 ? "[" + endpoint.host + "]" : endpoint.host) + ":" + std::to_string(endpoint.port);
}

std::string streaming_body(const std::string& body) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return body;
  parsed["stream"] = true;
  parsed["stream_options"] = {{"include_usage", true}};
  return parsed.dump();
}

asio::ip::tcp::resolver::results_type resolve(asio::io_context& context, const Endpoint& endpoint) {
  asio::ip::tcp::resolver resolver(context);
  boost::system::error_code ec;
  auto addresses = resolver.resolve(endpoint.host, std::to_string(endpoint.port), ec);
  require(!ec, ErrorKind::invalid_argument, [&] {
    return "cannot resolve the host '" + endpoint.host + "': " + ec.message() + "; check the URL";
  });
  return addresses;
}

CompletionCall::CompletionCall(asio::any_io_executor executor, const Endpoint& endpoint,
                               asio::ip::tcp::resolver::results_type addresses,
                               Clock::duration timeout)
    : endpoint_(endpoint), addresses_(std::move(addresses)), timeout_(timeout), stream_(executor) {}

void CompletionCall::cancel(const std::string& why) {
  if (cancelled_) return;
  cancelled_ = why;
  stream_.close();  // the pending operation ends with operation_aborted
}

std::string CompletionCall::describe(const boost::system::error_code& ec, const char* operation) const {
  if (cancelled_) return *cancelled_;
  if (ec == beast::error::timeout)
    return "no complete response within the request timeout (" +
           std::to_string(seconds(timeout_)) + " s)";
  return std::string(operation) + ": " + ec.message();
}

asio::awaitable<RequestRecord> CompletionCall::run(const std::string& body,
                                                   Clock::time_point run_start) {
  const Clock::time_point sent = Clock::now();
  RequestRecord record;
  try {
    record = co_await exchange(body, sent);
  } catch (const std::exception& error) {  // a bug, or out of memory: still one record
    record.ok = false;
    record.error = std::string("client error: ") + error.what();
    record.latency = seconds(Clock::now() - sent);
  }
  record.start = seconds(sent - run_start);
  beast::error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  stream_.close();
  co_return record;
}

asio::awaitable<RequestRecord> CompletionCall::exchange(const std::string& body,
                                                        Clock::time_point sent) {
  RequestRecord record;
  auto elapsed = [&] { return seconds(Clock::now() - sent); };
  auto fail = [&](std::string error) {
    record.ok = false;
    record.error = std::move(error);
    record.latency = elapsed();
    return record;
  };
  if (cancelled_) co_return fail(*cancelled_);
  beast::error_code ec;
  auto on_error = asio::redirect_error(asio::use_awaitable, ec);
  // One deadline for the whole request: tcp_stream applies it to every
  // operation started before it passes.
  stream_.expires_at(sent + timeout_);

  co_await stream_.async_connect(addresses_, on_error);
  if (ec || cancelled_) co_return fail(describe(ec, "connect"));

  bhttp::request<bhttp::string_body> request(bhttp::verb::post, endpoint_.path, 11);
  request.set(bhttp::field::host, host_header(endpoint_));
  request.set(bhttp::field::user_agent, "tandem-loadtest");
  request.set(bhttp::field::content_type, "application/json");
  request.set(bhttp::field::accept, "text/event-stream");
  if (!endpoint_.api_key.empty())
    request.set(bhttp::field::authorization, "Bearer " + endpoint_.api_key);
  request.keep_alive(false);
  request.body() = body;
  request.prepare_payload();
  co_await bhttp::async_write(stream_, request, on_error);
  if (ec || cancelled_) co_return fail(describe(ec, "send"));

  bhttp::response_parser<bhttp::buffer_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  co_await bhttp::async_read_header(stream_, buffer_, parser, on_error);
  if (ec || cancelled_) co_return fail(describe(ec, "read the response header"));
  record.status = static_cast<int>(parser.get().result_int());

  // The body, as it arrives: events for a 200, an error object otherwise.
  StreamRecorder recorder;
  std::string error_body;
  while (!parser.is_done()) {
    parser.get().body().data = chunk_.data();
    parser.get().body().size = chunk_.size();
    co_await bhttp::async_read_some(stream_, buffer_, parser, on_error);
    if (ec == bhttp::error::need_buffer) ec = {};  // the chunk buffer filled up: read on
    const size_t got = chunk_.size() - parser.get().body().size;
    const std::string_view bytes(chunk_.data(), got);
    if (record.status == 200) {
      recorder.feed(bytes, elapsed());
    } else if (error_body.size() < 65536) {
      error_body.append(bytes);
    }
    if (ec || cancelled_) {
      recorder.fill(record, elapsed());
      co_return fail(describe(ec, "read the response body"));
    }
  }
  if (record.status != 200) co_return fail(error_message(record.status, error_body));
  recorder.end_of_body(elapsed());
  recorder.fill(record, elapsed());
  record.ok = !recorder.failed();
  record.error = recorder.error();
  co_return record;
}

RequestRecord complete_once(const Endpoint& endpoint, const std::string& body,
                            Clock::duration timeout) {
  asio::io_context context;
  CompletionCall call(context.get_executor(), endpoint, resolve(context, endpoint), timeout);
  RequestRecord record;
  const Clock::time_point start = Clock::now();
  asio::co_spawn(
      context, [&]() -> asio::awaitable<void> { record = co_await call.run(body, start); },
      [](std::exception_ptr error) {
        if (error) std::rethrow_exception(error);
      });
  context.run();
  return record;
}

}  // namespace tandem::loadtest

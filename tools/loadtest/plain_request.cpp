#include "tools/loadtest/plain_request.h"

#include "tools/loadtest/completion_client.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

namespace tandem::loadtest {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

// Large enough for any /metrics page; a response over it is a failure, not
// an unbounded allocation.
constexpr std::uint64_t kBodyLimit = 16u << 20;

}  // namespace

asio::awaitable<PlainResponse> async_plain_request(asio::any_io_executor executor,
                                                   Endpoint endpoint, PlainRequest request,
                                                   Clock::duration timeout) {
  const Clock::time_point start = Clock::now();
  PlainResponse response;
  auto fail = [&](const char* operation, const beast::error_code& ec) {
    response.status = 0;
    response.error = ec == beast::error::timeout
                         ? std::string(operation) + ": no answer within the timeout"
                         : std::string(operation) + ": " + ec.message();
    response.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return response;
  };
  beast::tcp_stream stream(executor);
  beast::error_code ec;
  auto on_error = asio::redirect_error(asio::use_awaitable, ec);
  stream.expires_at(start + timeout);  // one deadline for every step

  asio::ip::tcp::resolver resolver(executor);
  auto addresses = co_await resolver.async_resolve(endpoint.host, std::to_string(endpoint.port), on_error);
  if (ec) co_return fail("resolve", ec);
  co_await stream.async_connect(addresses, on_error);
  if (ec) co_return fail("connect", ec);

  bhttp::request<bhttp::string_body> message(bhttp::string_to_verb(request.method), request.path, 11);
  message.set(bhttp::field::host, host_header(endpoint));
  message.set(bhttp::field::user_agent, "tandem-tools");
  if (!endpoint.api_key.empty()) message.set(bhttp::field::authorization, "Bearer " + endpoint.api_key);
  if (!request.body.empty()) {
    message.set(bhttp::field::content_type, "application/json");
    message.body() = request.body;
  }
  message.keep_alive(false);
  message.prepare_payload();
  co_await bhttp::async_write(stream, message, on_error);
  if (ec) co_return fail("send", ec);

  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(kBodyLimit);
  co_await bhttp::async_read(stream, buffer, parser, on_error);
  if (ec) co_return fail("read the response", ec);
  response.status = static_cast<int>(parser.get().result_int());
  response.body = std::move(parser.get().body());
  response.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  beast::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  co_return response;
}

PlainResponse plain_request(const Endpoint& endpoint, const PlainRequest& request,
                            Clock::duration timeout) {
  asio::io_context context;
  PlainResponse response;
  asio::co_spawn(
      context,
      [&]() -> asio::awaitable<void> {
        response = co_await async_plain_request(context.get_executor(), endpoint, request, timeout);
      },
      [](std::exception_ptr error) {
        if (error) std::rethrow_exception(error);
      });
  context.run();
  return response;
}

}  // namespace tandem::loadtest

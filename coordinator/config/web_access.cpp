#include "coordinator/config/web_access.h"

#include <boost/asio/ip/address.hpp>
#include <algorithm>

namespace tandem::web {
namespace {

// host[:port] split, the host in lower case.
struct Authority {
  std::string host;  // a name, an IPv4 address, or an IPv6 address in brackets
  bool has_port = false;
  std::string port;  // digits; may be empty after a ':' (RFC 3986 allows it)
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
// RFC 3986's unreserved characters; no host name needs percent-encoding.
bool is_name_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::optional<Authority> split_authority(std::string_view text) {
  Authority authority;
  std::string_view rest;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close == 1) return std::nullopt;
    for (const char c : text.substr(1, close - 1))
      if (!is_hex(c) && c != ':' && c != '.') return std::nullopt;
    authority.host = lower(text.substr(0, close + 1));
    rest = text.substr(close + 1);
  } else {
    const std::size_t colon = text.find(':');
    const std::string_view host = text.substr(0, colon);
    if (host.empty() || !std::all_of(host.begin(), host.end(), is_name_char)) return std::nullopt;
    authority.host = lower(host);
    if (colon != std::string_view::npos) rest = text.substr(colon);
  }
  if (!rest.empty()) {
    const std::string_view port = rest.substr(1);
    if (rest.front() != ':' || port.size() > 5 || !std::all_of(port.begin(), port.end(), is_digit))
      return std::nullopt;
    authority.has_port = true;
    authority.port = std::string(port);
  }
  return authority;
}

// "scheme://host[:port]" split; the scheme in lower case.
struct Origin {
  std::string scheme;
  Authority authority;
};

std::optional<Origin> split_origin(std::string_view text) {
  const std::size_t separator = text.find("://");
  if (separator == std::string_view::npos || separator == 0) return std::nullopt;
  Origin origin;
  origin.scheme = lower(text.substr(0, separator));
  for (const char c : origin.scheme)
    if (!is_name_char(c) && c != '+') return std::nullopt;
  const auto authority = split_authority(text.substr(separator + 3));
  if (!authority) return std::nullopt;
  origin.authority = *authority;
  return origin;
}

std::string_view default_port(std::string_view scheme) {
  if (scheme == "http") return "80";
  if (scheme == "https") return "443";
  return "";
}

}  // namespace

std::optional<std::string> host_of(std::string_view host_header) {
  const auto authority = split_authority(host_header);
  if (!authority) return std::nullopt;
  return authority->host;
}

std::optional<std::string> allowed_host_entry(std::string_view entry, std::string& problem) {
  if (entry == kAnyEntry) return std::string(kAnyEntry);
  if (entry.find('/') != std::string_view::npos) {
    problem = "expected a host name or address without a scheme or path (e.g. example.com), got \"" +
              std::string(entry) + "\"";
    return std::nullopt;
  }
  // An IPv6 address may be written bare; Host headers bracket it.
  std::string written(entry);
  if (std::count(written.begin(), written.end(), ':') >= 2 && written.front() != '[')
    written = "[" + written + "]";
  const auto authority = split_authority(written);
  if (!authority) {
    problem = "expected a host name, an IP address or \"*\", got \"" + std::string(entry) + "\"";
    return std::nullopt;
  }
  if (authority->has_port) {
    problem = "write \"" + authority->host + "\" without a port: the port is not compared, got \"" +
              std::string(entry) + "\"";
    return std::nullopt;
  }
  return authority->host;
}

bool is_wildcard_address(std::string_view bind_address) {
  boost::system::error_code error;
  const auto address = boost::asio::ip::make_address(std::string(bind_address), error);
  return !error && address.is_unspecified();
}

std::vector<std::string> default_allowed_hosts(std::string_view bind_address) {
  std::vector<std::string> hosts;
  std::string problem;
  if (!is_wildcard_address(bind_address))
    if (auto host = allowed_host_entry(bind_address, problem)) hosts.push_back(*host);
  for (const char* loopback : {"localhost", "127.0.0.1", "[::1]"})
    if (std::find(hosts.begin(), hosts.end(), loopback) == hosts.end()) hosts.push_back(loopback);
  return hosts;
}

std::optional<std::string> wildcard_note(std::string_view bind_address,
                                         const std::optional<std::vector<std::string>>& allowed_hosts) {
  if (!is_wildcard_address(bind_address)) return std::nullopt;
  const auto hosts = allowed_hosts.value_or(default_allowed_hosts(bind_address));
  if (std::find(hosts.begin(), hosts.end(), kAnyEntry) != hosts.end()) return std::nullopt;
  std::string names;
  for (const std::string& host : hosts) names += (names.empty() ? "" : ", ") + host;
  return "listening on every interface, answering requests whose Host header names " + names +
         (allowed_hosts ? " (server.allowed_hosts)"
                        : ": remote clients need the names they use listed in server.allowed_hosts");
}

bool host_allowed(std::string_view host_header, const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), kAnyEntry) != allowed.end()) return true;
  const auto host = host_of(host_header);
  return host && std::find(allowed.begin(), allowed.end(), *host) != allowed.end();
}

std::optional<std::string> normalized_origin(std::string_view origin) {
  const auto parts = split_origin(origin);
  if (!parts) return std::nullopt;
  std::string text = parts->scheme + "://" + parts->authority.host;
  if (parts->authority.has_port && !parts->authority.port.empty() &&
      parts->authority.port != default_port(parts->scheme))
    text += ":" + parts->authority.port;
  return text;
}

bool same_origin(std::string_view origin, std::string_view host_header) {
  const auto parts = split_origin(origin);
  const auto host = split_authority(host_header);
  if (!parts || !host || parts->authority.host != host->host) return false;
  // A port left out is the scheme's default, on either side.
  const std::string_view fallback = default_port(parts->scheme);
  const std::string_view origin_port = parts->authority.port.empty() ? fallback : parts->authority.port;
  const std::string_view host_port = host->port.empty() ? fallback : host->port;
  return origin_port == host_port;
}

bool origin_listed(std::string_view origin, const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), kAnyEntry) != allowed.end()) return true;
  const auto normalized = normalized_origin(origin);
  return normalized && std::find(allowed.begin(), allowed.end(), *normalized) != allowed.end();
}

}  // namespace tandem::web

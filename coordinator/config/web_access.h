// Who may reach the server, and from where: the forms that entries of
// server.allowed_hosts and server.cors_origins take, and the matching of a
// request's Host and Origin headers against them.
//
// Hosts compare without their port, in lower case, an IPv6 address in
// brackets ("[::1]"); origins compare as scheme://host[:port] in lower case,
// without the scheme's default port. The loader checks entries with these
// functions (so that a bad one names its key and line) and the routes' gate
// (coordinator/server/request_gate.*) matches headers with them. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::web {

// An entry of either list that matches anything.
inline constexpr std::string_view kAnyEntry = "*";

// The host of a Host header ("Example.com:8080" -> "example.com", "[::1]:80"
// -> "[::1]"); nullopt when it is not host[:port].
std::optional<std::string> host_of(std::string_view host_header);

// An entry of server.allowed_hosts as the gate compares it: "*", a name or
// an IPv4 address in lower case, an IPv6 address in brackets (written bare
// or bracketed). nullopt, with `problem` set, for anything else (a port, a
// scheme, a path).
std::optional<std::string> allowed_host_entry(std::string_view entry, std::string& problem);

// The list a deployment that names none gets: the bind address (unless it is
// a wildcard) and the loopback names, localhost, 127.0.0.1, [::1].
std::vector<std::string> default_allowed_hosts(std::string_view bind_address);

// 0.0.0.0 or ::, which listen on every interface.
bool is_wildcard_address(std::string_view bind_address);

// The line `serve` logs at start when it listens on every interface and
// answers only some Host names (`allowed_hosts` as configured; nullopt: the
// default): which names, and where to list the ones remote clients use.
// nullopt when bound to one address, or when any host is allowed.
std::optional<std::string> wildcard_note(std::string_view bind_address,
                                         const std::optional<std::vector<std::string>>& allowed_hosts);

// Whether a Host header names an entry of `allowed` (entries as above).
bool host_allowed(std::string_view host_header, const std::vector<std::string>& allowed);

// An origin as compared: "HTTP://LocalHost:80" -> "http://localhost";
// nullopt when it is not scheme://host[:port] ("null", a path, a query).
std::optional<std::string> normalized_origin(std::string_view origin);

// Whether `origin` is the server's own as the request reached it: the
// scheme's host and port are the Host header's.
bool same_origin(std::string_view origin, std::string_view host_header);

// Whether `origin` is listed in `allowed` (normalized entries, or "*").
bool origin_listed(std::string_view origin, const std::vector<std::string>& allowed);

}  // namespace tandem::web

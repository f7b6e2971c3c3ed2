// Package net is the warden.net capability: HTTP requests to the hosts a
// tool is granted, and nowhere else.
//
// # Grants
//
// tools.grants.<tool>.net (Capabilities.Net) lists entries of the form
// [scheme://]host[:port][ private], documented with ValidateGrant:
//
//	api.github.com               https://api.github.com on port 443
//	http://example.com:8080      http only, port 8080 only
//	*.example.com                any subdomain of example.com, https, 443
//	*                            any public host, https, 443
//	http://127.0.0.1:8080        this loopback address and port, explicitly
//	http://localhost:3000        loopback addresses only, port 3000
//	https://registry.internal private
//	                             this name even when it resolves to a
//	                             private address
//
// A request is allowed when its URL's scheme, host and port match an entry.
// Every redirect is checked again against the same entries before it is
// followed, and at most Config.MaxRedirects are followed.
//
// # SSRF guard
//
// Connections to addresses that are not ordinary public unicast (loopback,
// RFC 1918 private, carrier-grade NAT, link-local and cloud metadata,
// unspecified, multicast, reserved, documentation, IPv6 unique-local and
// link-local, and the IPv6 forms that embed such an IPv4 address:
// IPv4-mapped, NAT64, 6to4, Teredo) are refused unless an entry names them
// explicitly: an IP-literal entry allows that address when the URL names
// it, "localhost" allows loopback, and "private" on a DNS name allows any
// address that name resolves to. The check runs at dial time on the
// address actually being connected to (the dialer's Control hook), so a
// name that passes the allow-list and then resolves, or re-resolves, to a
// private address (DNS rebinding) is refused before any packet is sent.
// Environment proxies are ignored, and connections are never shared
// between calls.
//
// # Operation
//
//	request {"op":"request","method":"POST","url":"https://api.example.com/v1/x",
//	         "headers":{"Content-Type":"application/json"},"body":"{...}",
//	         "timeoutMs":5000}
//	        → {"status":200,"statusText":"OK","url":"https://api.example.com/v1/x",
//	           "headers":{"Content-Type":["application/json"]},"body":"...",
//	           "truncated":false}
//
// method defaults to GET (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS).
// The request body is "body" (text) or "bodyBase64" (bytes), not both. The
// reply carries "body" when the response is valid UTF-8, else "bodyBase64";
// "url" is the final URL after redirects. A body over Config.MaxResponseBytes
// (4 MiB by default) is cut there and "truncated" is true. Headers that the
// transport owns (Host, Content-Length, Transfer-Encoding, Connection, ...)
// are refused. The request is bounded by the smallest of timeoutMs,
// Config.Timeout (30 s by default) and the call's own deadline.
//
// An HTTP error status is a reply, not an error. Errors: denied (no grant,
// host, scheme or port not granted, a redirect to one, or a non-public
// address; the message names the host and the config key, with an entry
// that would grant it), invalid_arguments (bad request), timeout, cancelled,
// failed (DNS, connection, TLS, too many redirects).
package net

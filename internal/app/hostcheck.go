package app

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// hostNames are the names a server of the exporter is served under. A
// request whose Host is another name is refused on every path: a web page
// on a name its author controls can make that name resolve to 127.0.0.1
// (DNS rebinding), and the browser then lets the page read the answers as
// its own. What such a page cannot choose is the Host its browser sends,
// which is always the page's own name.
//
// Always served, without configuration:
//   - IP literals, any address: rebinding needs a name, so a scrape by IP
//     (127.0.0.1:PORT, a pod IP, the machine's LAN address) is no vector;
//   - localhost and its subdomains, which browsers resolve to loopback
//     themselves and no public DNS can delegate;
//   - the host of a listen address written as a name;
//   - the machine's host name, as the system gives it.
//
// Any other name (a DNS name Prometheus or a user reaches the exporter by)
// is added with --web.external-name.
type hostNames struct {
	set map[string]struct{}
}

// newHostNames builds the names served by every server: the machine's
// host name ("" for none) and the external names, each checked.
func newHostNames(hostname string, external []string) (hostNames, error) {
	n := hostNames{set: map[string]struct{}{}}
	if h, ok := hostOf(hostname); ok && validName(h) {
		n.set[h] = struct{}{}
	}
	for _, e := range external {
		h, ok := hostOf(e)
		if !ok || !validName(h) {
			return n, fmt.Errorf("--web.external-name %q: not a host name (want a DNS name such as exporter.example.com, without scheme or path)", e)
		}
		n.set[h] = struct{}{}
	}
	return n, nil
}

// with returns the names plus the hosts of the listen addresses that are
// names (an address by IP, or without host, adds none).
func (n hostNames) with(listen []string) hostNames {
	out := hostNames{set: make(map[string]struct{}, len(n.set)+len(listen))}
	for h := range n.set {
		out.set[h] = struct{}{}
	}
	for _, a := range listen {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			continue // vsock:// and the like: no name to serve under
		}
		if h, ok := hostOf(host); ok && validName(h) {
			out.set[h] = struct{}{}
		}
	}
	return out
}

// allows reports whether a request with this Host header may be answered.
func (n hostNames) allows(hostport string) bool {
	if hostport == "" {
		return true // HTTP/1.0 without Host: browsers always send one
	}
	host, ok := hostOf(hostport)
	if !ok {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	_, ok = n.set[host]
	return ok
}

// hostOf is the host of a Host header value, as compared: port and
// IPv6 brackets removed, lower case, without the trailing dot of a fully
// qualified name ("LocalHost.:9974" is "localhost"). ok is false for a
// value that is no host.
func hostOf(hostport string) (host string, ok bool) {
	if rest, found := strings.CutPrefix(hostport, "["); found {
		end := strings.IndexByte(rest, ']')
		if end < 0 || !portSuffix(rest[end+1:]) {
			return "", false
		}
		a, err := netip.ParseAddr(rest[:end])
		if err != nil || !a.Is6() {
			return "", false // only IPv6 literals are bracketed
		}
		return strings.ToLower(rest[:end]), true
	}
	host = hostport
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 {
		if strings.IndexByte(hostport, ':') != i {
			// An unbracketed IPv6 literal: not valid in a Host header,
			// but not a name either.
			if _, err := netip.ParseAddr(hostport); err != nil {
				return "", false
			}
			return strings.ToLower(hostport), true
		}
		if !portSuffix(hostport[i:]) {
			return "", false
		}
		host = hostport[:i]
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host, host != ""
}

// portSuffix reports whether s is empty or a colon and decimal digits.
func portSuffix(s string) bool {
	if s == "" {
		return true
	}
	if s[0] != ':' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// validName reports whether h (lower case) is written as a DNS name or an
// IP literal: letters, digits, '-', '_' and dots between labels.
func validName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// refuseOtherHosts answers 403 to a request whose Host is not one of the
// names the server is served under (see hostNames), whatever its path.
func refuseOtherHosts(names hostNames, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !names.allows(r.Host) {
			http.Error(w, "Forbidden: the exporter is not served under the name this request was sent to "+
				"(if it is one of the exporter's names, add it with --web.external-name; see docs/security.md).", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// contentSecurityPolicy lets the exporter's pages (the landing page: HTML
// and inline CSS, an inline SVG chart, no script) render, and nothing
// else: no script, no fetch, no frame around them, no form elsewhere.
const contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// pageHeaders sets, on every answer of the main server, the headers that
// keep a browser from reading one as another type (nosniff), running
// anything in it, or framing it on another site.
func pageHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		next.ServeHTTP(w, r)
	})
}

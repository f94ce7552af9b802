// Package gitremote turns a git remote URL, as a workspace's
// `git remote get-url origin` gives it, into the `repository` label value:
// `host/path`, with no scheme, credentials, port, query or fragment, so
// that every spelling of one remote gives one value and no secret that a
// URL may carry reaches a label.
//
// It is pure and total: any string in, a value or a reason out, never the
// raw string. docs/repositories.md describes the rules.
package gitremote

import (
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxBytes bounds a normalised value: a remote whose host/path is longer
// is refused (ReasonTooLong) rather than cut, so two long remotes never
// share a cut value. It is the store's cap on a label value
// (labelvalue.MaxBytes), so the store never cuts a repository either.
const MaxBytes = 128

// MaxInputBytes bounds what is looked at: a longer remote is refused
// without being scanned.
const MaxInputBytes = 4096

// Reason says why a remote gives no value. It is the `reason` label of the
// counter of refused remotes, so the set is closed.
type Reason string

const (
	// ReasonNone: the remote was normalised, or there was none.
	ReasonNone Reason = ""
	// ReasonLocal: a path on a file system (`/srv/git/web`, `../web`,
	// `C:\src\web`, `file:///srv/git/web`): no host to name.
	ReasonLocal Reason = "local"
	// ReasonInvalid: not a remote this package can read without guessing
	// (a character no label should carry, a port that is not a number, no
	// path, credentials and a path, query or fragment that cannot be told
	// apart: an "@" after the host).
	ReasonInvalid Reason = "invalid"
	// ReasonTooLong: the input is over MaxInputBytes or the value over
	// MaxBytes.
	ReasonTooLong Reason = "too_long"
)

// Reasons lists every Reason but ReasonNone, for counters that start at 0.
var Reasons = []Reason{ReasonLocal, ReasonInvalid, ReasonTooLong}

// ipv6Suffix names an IPv6 host without a colon, in the form Windows uses
// for UNC paths: 2001:db8::1 → 2001-db8--1.ipv6-literal.net.
const ipv6Suffix = ".ipv6-literal.net"

// Normalize returns the remote as `host/path`, or "" and the reason it has
// none. An empty remote (a workspace that is not a git repository, or one
// without an origin) is "" with ReasonNone.
//
// The forms read are those git reads: `scheme://[userinfo@]host[:port]/path`
// with any scheme but `file`, `[userinfo@]host:path` (scp-like), a remote
// helper's `transport::address`, and the normalised form itself
// (`host/path`), so Normalize(Normalize(x)) == Normalize(x).
func Normalize(raw string) (string, Reason) {
	if len(raw) > MaxInputBytes {
		return "", ReasonTooLong
	}
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", ReasonNone
	}
	if !utf8.ValidString(s) || strings.IndexFunc(s, badRune) >= 0 {
		return "", ReasonInvalid
	}
	// A remote helper's transport::address: the address is the remote.
	if i := strings.Index(s, "::"); i > 0 && isScheme(s[:i]) {
		if s = s[i+2:]; s == "" {
			return "", ReasonInvalid
		}
	}
	var host, path string
	var reason Reason
	if i := strings.Index(s, "://"); i > 0 && isScheme(s[:i]) {
		if strings.EqualFold(s[:i], "file") {
			return "", ReasonLocal
		}
		host, path, reason = splitURL(s[i+3:])
	} else {
		host, path, reason = splitSCP(s)
	}
	if reason != ReasonNone {
		return "", reason
	}
	return join(host, path)
}

// badRune reports a rune that no remote this package reads contains, once
// its ends are trimmed: whitespace, control and other invisible
// characters, and U+FFFD, which stands for bytes that were not text.
func badRune(r rune) bool {
	return unicode.IsSpace(r) || !unicode.IsPrint(r) || r == utf8.RuneError
}

// isScheme reports whether s is a URL scheme (RFC 3986: a letter, then
// letters, digits, "+", "-", ".").
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// splitURL splits what follows "scheme://" into host and path.
//
// The authority (credentials, host, port) ends at the first "/", "?" or
// "#", as git reads it: an "@" after that is not the end of credentials,
// so `https://host/a@x/y` never names host `x`. Within the authority,
// credentials end at the last "@": a password may hold "@" unescaped (the
// Amp CLI, which strips `user:password@` before upload, leaves what follows
// the first "@" of such a password).
//
// An "@" after the authority is refused rather than guessed: either the
// path, query or fragment holds it, or a password holds an unescaped "/",
// "?" or "#" and what follows the host's end is the rest of the password.
// The second guess would put that rest in the value.
func splitURL(rest string) (host, path string, _ Reason) {
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if strings.IndexByte(rest[end:], '@') >= 0 {
		return "", "", ReasonInvalid
	}
	if q := strings.IndexAny(rest[end:], "?#"); q >= 0 {
		rest = rest[:end+q]
	}
	authority, path := rest[:end], strings.TrimPrefix(rest[end:], "/")
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		authority = authority[at+1:]
	}
	host, ok := hostPort(authority)
	if !ok {
		return "", "", ReasonInvalid
	}
	return host, path, ReasonNone
}

// hostPort returns the host of host[:port] or [ipv6][:port].
func hostPort(a string) (string, bool) {
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 || !isPort(a[end+1:], true) {
			return "", false
		}
		return ipv6(a[1:end])
	}
	host, port, hasPort := strings.Cut(a, ":")
	if hasPort && !isPort(port, false) {
		return "", false
	}
	return host, true
}

// isPort reports whether s is empty or a port: digits, after a colon when
// colon is set (what follows "]").
func isPort(s string, colon bool) bool {
	if colon {
		if s == "" {
			return true
		}
		if s[0] != ':' {
			return false
		}
		s = s[1:]
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ipv6 returns an IPv6 address as a host name without colons, its zone
// (a local interface name) dropped, one spelling per address.
func ipv6(s string) (string, bool) {
	addr, err := netip.ParseAddr(s)
	if err != nil || !addr.Is6() {
		return "", false
	}
	addr = addr.WithZone("")
	if addr.Is4In6() {
		return addr.Unmap().String(), true
	}
	return strings.ReplaceAll(addr.String(), ":", "-") + ipv6Suffix, true
}

// splitSCP splits a remote without a scheme: scp-like `[user@]host:path`
// when a ":" comes before any "/" (git's own rule), a local path
// otherwise, or the normalised `host/path` form.
func splitSCP(s string) (host, path string, _ Reason) {
	if local(s) {
		return "", "", ReasonLocal
	}
	// Where the host ends: at the first ":" outside brackets
	// (`[git@host:22]:path`, `git@[::1]:path`).
	hostEnd := -1
	if b := strings.IndexByte(s, '['); b >= 0 && (b == 0 || s[b-1] == '@') {
		if e := strings.IndexByte(s[b:], ']'); e >= 0 {
			if c := b + e + 1; c < len(s) && s[c] == ':' {
				hostEnd = c
			}
		}
	}
	if hostEnd < 0 {
		hostEnd = strings.IndexByte(s, ':')
	}
	slash := strings.IndexByte(s, '/')
	if hostEnd < 0 || (slash >= 0 && slash < hostEnd) {
		// No ":" before the first "/": git reads a local path. The
		// normalised form (`host/path`, not starting like a path) is read
		// back as itself.
		if strings.ContainsAny(s, "@?#:") || slash <= 0 {
			if slash < 0 && !strings.ContainsAny(s, "@?#:") {
				return "", "", ReasonLocal // a bare directory name
			}
			return "", "", ReasonInvalid
		}
		return s[:slash], s[slash+1:], ReasonNone
	}
	hostPart, path := s[:hostEnd], s[hostEnd+1:]
	// A ":" in the credentials ends the host early (`user:pass@host:path`
	// reads as host "user"): the rest of them lands in the path, with the
	// "@" that ended them. Refuse that before cutting a query off the
	// path, which could otherwise cut the password in two.
	if strings.IndexByte(path, '@') >= 0 {
		return "", "", ReasonInvalid
	}
	if q := strings.IndexAny(path, "?#"); q >= 0 {
		path = path[:q]
	}
	if b := strings.IndexByte(hostPart, '['); b >= 0 && (b == 0 || hostPart[b-1] == '@') && strings.HasSuffix(hostPart, "]") {
		inner := hostPart[b+1 : len(hostPart)-1]
		if i := strings.LastIndexByte(inner, '@'); i >= 0 {
			inner = inner[i+1:]
		}
		if h, ok := ipv6(inner); ok {
			return h, path, ReasonNone
		}
		h, ok := hostPort(inner)
		if !ok {
			return "", "", ReasonInvalid
		}
		return h, path, ReasonNone
	}
	if i := strings.LastIndexByte(hostPart, '@'); i >= 0 {
		hostPart = hostPart[i+1:]
	}
	return hostPart, path, ReasonNone
}

// local reports a remote that is a file-system path: absolute, relative
// to ".", "..", or "~", a Windows path (drive letter, UNC).
func local(s string) bool {
	switch s[0] {
	case '/', '\\', '.', '~':
		return true
	}
	return len(s) >= 2 && s[1] == ':' && (len(s) == 2 || s[2] == '\\' || s[2] == '/') &&
		('a' <= s[0] && s[0] <= 'z' || 'A' <= s[0] && s[0] <= 'Z')
}

// join checks the host and the path and makes the value: the host in lower
// case without a trailing dot, the path as written without empty segments
// and without a trailing ".git" or "/".
func join(host, path string) (string, Reason) {
	host = strings.TrimRight(strings.ToLower(host), ".")
	if !validHost(host) {
		return "", ReasonInvalid
	}
	var b strings.Builder
	b.Grow(len(host) + 1 + len(path))
	b.WriteString(host)
	segs := 0
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "" {
			continue
		}
		b.WriteByte('/')
		b.WriteString(seg)
		segs++
	}
	v := b.String()
	for {
		t := strings.TrimSuffix(strings.TrimRight(v, "/"), ".git")
		if t == v {
			break
		}
		v = t
	}
	if segs == 0 || len(v) <= len(host)+1 || strings.ContainsAny(v[len(host):], "@:?#\\") {
		return "", ReasonInvalid
	}
	if len(v) > MaxBytes {
		return "", ReasonTooLong
	}
	return v, ReasonNone
}

// validHost reports a host name: letters and digits of any script, ".",
// "-", "_", not starting with "." (which would read back as a path).
func validHost(h string) bool {
	if h == "" || h[0] == '.' {
		return false
	}
	for _, r := range h {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

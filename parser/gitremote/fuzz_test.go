package gitremote

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// secret stands for a password or token: the fuzzer builds remotes that
// carry it in their credentials, query or fragment.
const secret = "tok3nS3CR3T"

// minLeak is the shortest part of the secret that counts as leaked.
const minLeak = 4

// withSecret builds a remote of the given form around the fuzzer's parts,
// with the secret where a URL keeps credentials or a query.
func withSecret(form uint8, user, host, path string) string {
	switch form % 12 {
	case 0:
		return "https://" + user + ":" + secret + "@" + host + "/" + path
	case 1:
		return "https://" + secret + "@" + host + "/" + path
	case 2:
		return "https://" + host + "/" + path + "?token=" + secret
	case 3:
		return "https://" + host + "/" + path + "#" + secret
	case 4:
		// A password holding "@": the CLI leaves what follows it.
		return "https://" + user + ":" + secret[:5] + "@" + secret[5:] + "@" + host + "/" + path
	case 5:
		// A password holding "/".
		return "https://" + user + ":" + secret[:5] + "/" + secret[5:] + "@" + host + "/" + path
	case 6:
		return secret + "@" + host + ":" + path
	case 7:
		return user + ":" + secret + "@" + host + ":" + path
	case 8:
		return "ssh://" + user + ":" + secret + "@" + host + ":2222/" + path + "?x=" + secret
	case 9:
		return "git+https://" + user + secret + "@" + host + "/" + path
	case 10:
		return host + ":" + path + "?token=" + secret
	default:
		return "persistent-https::https://" + user + ":" + secret + "@" + host + "/" + path
	}
}

// checkValue checks what holds for any input, and returns the value.
func checkValue(t *testing.T, in string) string {
	t.Helper()
	out, reason := Normalize(in)
	if out == "" {
		if reason != ReasonNone && !slices.Contains(Reasons, reason) {
			t.Fatalf("Normalize(%q): unknown reason %q", in, reason)
		}
		return out
	}
	if reason != ReasonNone {
		t.Fatalf("Normalize(%q) = %q with reason %q", in, out, reason)
	}
	if len(out) > MaxBytes {
		t.Fatalf("Normalize(%q) = %q: %d bytes, over %d", in, out, len(out), MaxBytes)
	}
	if !utf8.ValidString(out) {
		t.Fatalf("Normalize(%q) = %q: invalid UTF-8", in, out)
	}
	if i := strings.IndexFunc(out, func(r rune) bool {
		return strings.ContainsRune("@:?#\\", r) || unicode.IsSpace(r) || !unicode.IsPrint(r)
	}); i >= 0 {
		t.Fatalf("Normalize(%q) = %q: holds %q", in, out, out[i:])
	}
	host, path, ok := strings.Cut(out, "/")
	if !ok || host == "" || path == "" || strings.HasSuffix(out, ".git") || strings.HasSuffix(out, "/") {
		t.Fatalf("Normalize(%q) = %q: not host/path", in, out)
	}
	if host != strings.ToLower(host) {
		t.Fatalf("Normalize(%q) = %q: host not in lower case", in, out)
	}
	if again, r := Normalize(out); again != out || r != ReasonNone {
		t.Fatalf("Normalize(%q) = %q, but Normalize(%q) = %q, %q", in, out, out, again, r)
	}
	return out
}

// checkHost checks that a URL's host is the one before its first "/",
// whatever the path holds: a value, if any, names that host.
func checkHost(t *testing.T, host, path string) {
	t.Helper()
	if host == "" || strings.ContainsAny(host, "@/?#:[]\\") {
		return // not a plain host: where it ends is not the question here
	}
	in := "https://" + host + "/" + path
	out := checkValue(t, in)
	if want := strings.TrimRight(strings.ToLower(host), ".") + "/"; out != "" && !strings.HasPrefix(out, want) {
		t.Fatalf("Normalize(%q) = %q: host is not %q", in, out, strings.TrimSuffix(want, "/"))
	}
}

func FuzzNormalize(f *testing.F) {
	seeds := []string{
		"https://github.com/acme/web.git",
		"git@github.com:acme/web.git",
		"ssh://git@github.com:22/acme/web",
		"git+https://u@github.com/acme/web",
		"https://x-access-token:TOKEN@github.com/acme/web",
		"https://user:p@ss@github.com/acme/web?token=x#y",
		"https://user:pa/ss@github.com/acme/web",
		"ssh://git@[2001:db8::1]:2222/acme/web",
		"[git@gitserver:2222]:acme/web",
		"file:///srv/git/web",
		`C:\src\web`,
		"gitlab.example.com/platform/infra/tools",
		// An "@" in the path, which must not end credentials.
		"https://host.example/a@x/y",
		"ssh://git@host.example:22/a@x/y.git",
		"https://bitbucket.example/scm/~jo@example.com/web.git",
		"https://pa/ss@github.com/acme/web",
		"git@host.example:a@x/y",
		"https://host.example/" + strings.Repeat("a", MaxBytes) + "@x/y",
	}
	for i, s := range seeds {
		f.Add(s, uint8(i), "git", "GitHub.com", "acme/web.git")
	}
	f.Add("", uint8(4), "u?", "h?x", "p@q")
	f.Add("", uint8(7), "a:b", "[::1]", "x/y#z")
	f.Add("", uint8(0), "git", "host.example", "a@x/y")
	f.Add("", uint8(1), "git", "host.example", "a@github.com/acme/web")
	f.Add("", uint8(6), "git", "host.example", "scm/~jo@example.com/web")
	f.Fuzz(func(t *testing.T, raw string, form uint8, user, host, path string) {
		checkValue(t, raw)
		checkHost(t, host, path)

		in := withSecret(form, user, host, path)
		out := strings.ToLower(checkValue(t, in))
		// The fuzzer's own host and path may hold a part of the secret:
		// such a part in the value is theirs.
		own := strings.ToLower(host) + "\x00" + strings.ToLower(path)
		low := strings.ToLower(secret)
		for i := 0; i+minLeak <= len(low); i++ {
			for j := i + minLeak; j <= len(low); j++ {
				if part := low[i:j]; strings.Contains(out, part) && !strings.Contains(own, part) {
					t.Fatalf("Normalize(%q) = %q: leaks %q of the secret", in, out, part)
				}
			}
		}
	})
}

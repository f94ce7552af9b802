package gitremote

import (
	"strings"
	"testing"

	"github.com/amp-exporter/amp-exporter/internal/labelvalue"
)

func TestNormalize(t *testing.T) {
	const web = "github.com/acme/web"
	tests := []struct {
		in     string
		want   string
		reason Reason
	}{
		// One remote, every spelling.
		{"https://github.com/acme/web.git", web, ReasonNone},
		{"https://github.com/acme/web", web, ReasonNone},
		{"https://github.com/acme/web/", web, ReasonNone},
		{"https://github.com/acme/web.git/", web, ReasonNone},
		{"http://github.com/acme/web", web, ReasonNone},
		{"git@github.com:acme/web.git", web, ReasonNone},
		{"git@github.com:acme/web", web, ReasonNone},
		{"git@github.com:/acme/web.git", web, ReasonNone},
		{"github.com:acme/web", web, ReasonNone},
		{"ssh://git@github.com/acme/web", web, ReasonNone},
		{"ssh://git@github.com:22/acme/web.git", web, ReasonNone},
		{"git+ssh://git@github.com/acme/web.git", web, ReasonNone},
		{"ssh+git://git@github.com/acme/web", web, ReasonNone},
		{"git://github.com/acme/web.git", web, ReasonNone},
		{"git+https://u@github.com/acme/web", web, ReasonNone},
		{"https://x-access-token:ghs_TOKEN123@github.com/acme/web", web, ReasonNone},
		{"https://ghp_TOKEN123@github.com/acme/web.git", web, ReasonNone},
		{"https://oauth2:glpat-TOKEN@github.com/acme/web", web, ReasonNone},
		{"HTTPS://GitHub.COM/acme/web", web, ReasonNone},
		{"https://GITHUB.com./acme/web", web, ReasonNone},
		{"https://github.com:443/acme/web", web, ReasonNone},
		{"https://github.com:/acme/web", web, ReasonNone},
		{"https://github.com//acme//web", web, ReasonNone},
		{"https://github.com/acme/web.git.git", web, ReasonNone},
		{"  https://github.com/acme/web\n", web, ReasonNone},
		{"persistent-https::https://github.com/acme/web", web, ReasonNone},
		// The normalised form reads back as itself.
		{web, web, ReasonNone},
		// Query strings and fragments.
		{"https://github.com/acme/web?token=SECRET", web, ReasonNone},
		{"https://github.com/acme/web.git?token=SECRET#frag", web, ReasonNone},
		{"https://github.com/acme/web#SECRET", web, ReasonNone},
		{"https://u:p@github.com/acme/web?token=SECRET", web, ReasonNone},
		{"git@github.com:acme/web.git?token=SECRET", web, ReasonNone},
		// What the Amp CLI leaves of a password holding "@".
		{"https://ss@github.com/acme/web", web, ReasonNone},
		{"https://user:p@ss@github.com/acme/web", web, ReasonNone},
		{"https://user:pa:ss@github.com/acme/web", web, ReasonNone},
		{"git@pa@github.com:acme/web", web, ReasonNone},
		{"ssh://git@pa@github.com:22/acme/web", web, ReasonNone},
		// Path as written: case kept, nested groups kept.
		{"https://gitlab.example.com/platform/infra/tools.git", "gitlab.example.com/platform/infra/tools", ReasonNone},
		{"git@gitlab.example.com:platform/infra/tools.git", "gitlab.example.com/platform/infra/tools", ReasonNone},
		{"ssh://git@GitLab.Example.com:2222/platform/infra/tools/", "gitlab.example.com/platform/infra/tools", ReasonNone},
		{"https://github.com/Acme/Web", "github.com/Acme/Web", ReasonNone},
		{"https://dev.azure.com/org/proj/_git/repo", "dev.azure.com/org/proj/_git/repo", ReasonNone},
		{"https://org@dev.azure.com/org/proj/_git/repo", "dev.azure.com/org/proj/_git/repo", ReasonNone},
		{"git@ssh.dev.azure.com:v3/org/proj/repo", "ssh.dev.azure.com/v3/org/proj/repo", ReasonNone},
		{"git@host:~user/repo.git", "host/~user/repo", ReasonNone},
		{"ssh://gitserver/srv/repo", "gitserver/srv/repo", ReasonNone},
		{"https://git.example.com/a%20b/web", "git.example.com/a%20b/web", ReasonNone},
		{"https://gït.example/acme/web", "gït.example/acme/web", ReasonNone},
		// IPv6 and IPv4 hosts.
		{"ssh://git@[2001:DB8::1]:2222/acme/web.git", "2001-db8--1.ipv6-literal.net/acme/web", ReasonNone},
		{"https://[2001:db8:0:0:0:0:0:1]/acme/web", "2001-db8--1.ipv6-literal.net/acme/web", ReasonNone},
		{"https://[fe80::1%25eth0]/acme/web", "fe80--1.ipv6-literal.net/acme/web", ReasonNone},
		{"git@[2001:db8::1]:acme/web", "2001-db8--1.ipv6-literal.net/acme/web", ReasonNone},
		{"[git@gitserver:2222]:acme/web", "gitserver/acme/web", ReasonNone},
		{"https://[::ffff:10.0.0.5]/acme/web", "10.0.0.5/acme/web", ReasonNone},
		{"http://10.0.0.5:8080/acme/web", "10.0.0.5/acme/web", ReasonNone},
		{"2001-db8--1.ipv6-literal.net/acme/web", "2001-db8--1.ipv6-literal.net/acme/web", ReasonNone},
		// No remote.
		{"", "", ReasonNone},
		{"   ", "", ReasonNone},
		// Local remotes.
		{"/srv/git/web.git", "", ReasonLocal},
		{"./web", "", ReasonLocal},
		{"../web", "", ReasonLocal},
		{"~/src/web", "", ReasonLocal},
		{"web", "", ReasonLocal},
		{"file:///srv/git/web.git", "", ReasonLocal},
		{"FILE://host/srv/git/web.git", "", ReasonLocal},
		{`C:\src\web`, "", ReasonLocal},
		{"C:/src/web", "", ReasonLocal},
		{`\\server\share\web`, "", ReasonLocal},
		// Refused: never a guess that could hold a secret.
		{"https://user:pa?ss@github.com/acme/web", "", ReasonInvalid},
		{"https://ghp_ab#cd@github.com/acme/web", "", ReasonInvalid},
		{"https://github.com/acme/web?email=a@b.example", "", ReasonInvalid},
		{"user:pass@github.com:acme/web", "", ReasonInvalid},
		{"user:pa?ss@github.com:acme/web", "", ReasonInvalid},
		{"user:pass@github.com/acme/web", "", ReasonInvalid},
		{"git@github.com/acme/web", "", ReasonInvalid},
		{"https://user:token/github.com/acme/web", "", ReasonInvalid},
		{"https://github.com:port/acme/web", "", ReasonInvalid},
		{"https://github.com", "", ReasonInvalid},
		{"https://github.com/", "", ReasonInvalid},
		{"https://github.com/.git", "", ReasonInvalid},
		{"git@github.com:", "", ReasonInvalid},
		{"https://github.com/acme/we b", "", ReasonInvalid},
		{"https://github.com/acme/web\x00", "", ReasonInvalid},
		{"https://github.com/acme/w\u200beb", "", ReasonInvalid},
		{"https://github.com/acme/w\xffeb", "", ReasonInvalid},
		{"https://github.com/acme/w\ufffdeb", "", ReasonInvalid},
		{"https://github.com/acme/web:x", "", ReasonInvalid},
		{`https://github.com/acme\web`, "", ReasonInvalid},
		{"https://gith%75b.com/acme/web", "", ReasonInvalid},
		{"https://[2001:db8::1/acme/web", "", ReasonInvalid},
		{"https://[10.0.0.5]/acme/web", "", ReasonInvalid},
		{"https://.github.com/acme/web", "", ReasonInvalid},
		{"https:///acme/web", "", ReasonInvalid},
		{"https://github.com/acme/web@v2", "", ReasonInvalid},
		// An "@" after the host's "/": git reads it as part of the path,
		// so it never names the host. Whether the path holds it or a
		// password holds an unescaped "/" cannot be told, so the remote
		// gives no value rather than a guess.
		{"https://host.example/a@x/y", "", ReasonInvalid},
		{"https://host.example/a@x.example/y/z", "", ReasonInvalid},
		{"ssh://git@host.example/a@x/y", "", ReasonInvalid},
		{"ssh://git@host.example:22/a@x/y.git", "", ReasonInvalid},
		{"https://u:p@host.example/a@x/y", "", ReasonInvalid},
		{"https://bitbucket.example/scm/~jo@example.com/web.git", "", ReasonInvalid},
		{"git+https://host.example/a/b@github.com/acme/web", "", ReasonInvalid},
		{"persistent-https::https://host.example/a@x/y", "", ReasonInvalid},
		{"https://host.example?a@x/y", "", ReasonInvalid},
		{"https://host.example#a@x/y", "", ReasonInvalid},
		{"git@host.example:a@x/y", "", ReasonInvalid},
		{"host.example/a@x/y", "", ReasonInvalid},
		// A password holding an unescaped "/" ends the host where git
		// ends it: no value, and no part of the password in one.
		{"https://user:pa/ss@github.com/acme/web", "", ReasonInvalid},
		{"https://user:pa/s@s/x@github.com/acme/web", "", ReasonInvalid},
		{"https://pa/ss@github.com/acme/web", "", ReasonInvalid},
		{"ssh://tok/en@github.com/acme/web", "", ReasonInvalid},
		{"A::", "", ReasonInvalid},
		{"persistent-https::", "", ReasonInvalid},
		// Too long.
		{"https://github.com/acme/" + strings.Repeat("w", MaxBytes), "", ReasonTooLong},
		{"https://github.com/" + strings.Repeat("a", MaxInputBytes), "", ReasonTooLong},
	}
	for _, tt := range tests {
		got, reason := Normalize(tt.in)
		if got != tt.want || reason != tt.reason {
			t.Errorf("Normalize(%q) = %q, %q; want %q, %q", tt.in, got, reason, tt.want, tt.reason)
		}
	}
}

// The longest value kept is exactly MaxBytes: the cap is a bound, not an
// off-by-one.
func TestNormalizeMaxBytes(t *testing.T) {
	host := "github.com/"
	exact := host + strings.Repeat("w", MaxBytes-len(host))
	if got, r := Normalize("https://" + exact + ".git"); got != exact || r != ReasonNone {
		t.Errorf("%d bytes: got %q, %q", len(exact), got, r)
	}
	if got, r := Normalize("https://" + exact + "w"); got != "" || r != ReasonTooLong {
		t.Errorf("%d bytes: got %q, %q", len(exact)+1, got, r)
	}
}

// The store cuts a label value at labelvalue.MaxBytes: a repository must
// never be cut there, where two long ones would become one.
func TestMaxBytesWithinLabelCap(t *testing.T) {
	if MaxBytes > labelvalue.MaxBytes {
		t.Fatalf("MaxBytes %d is over the label cap %d", MaxBytes, labelvalue.MaxBytes)
	}
}

func BenchmarkNormalize(b *testing.B) {
	for _, in := range []string{"https://github.com/acme/web", "git@gitlab.example.com:platform/infra/tools.git", "https://x-access-token:ghs_0123456789abcdef@GitHub.com:443/acme/web.git?x=1"} {
		b.Run(strings.SplitN(in, ":", 2)[0], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v, _ := Normalize(in); v == "" {
					b.Fatal(in)
				}
			}
		})
	}
}

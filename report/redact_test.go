package report

import (
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// secret is the password every form below carries; what the user typed
// may be printed only without it (nor its percent-encoded form).
const secret = "Pa55word"

// urlForms are the ways a user may type an exporter's address with a
// password in it; %s is the exporter's host:port, %p its port.
var urlForms = []string{
	"http://me:" + secret + "@%s",
	"https://me:" + secret + "@%s",
	"HTTP://me:" + secret + "@%s/",
	"http://me:" + secret + "@%s/api/ledger?x=1#top",
	"me:" + secret + "@%s",
	"me:" + secret + "@%s/api/ledger",
	"//me:" + secret + "@%s",
	"http:me:" + secret + "@%s",
	"http:/me:" + secret + "@%s",
	"http:///me:" + secret + "@%s",
	"http://me:" + secret + "@[::1]:%p",
	"me:" + secret + "@[::1]:%p",
	"http://me:p%%40" + secret + "@%s",
	"http://me:p%%zz" + secret + "@%s",
	"http://me:" + secret + "@%s:bad",
	"http://me:" + secret + "@localhost:bad",
	"http://me:p@" + secret + "@%s",
	"http://me:p/" + secret + "@%s",
	"http://me:12/" + secret + "@%s",
	"http://me:p#" + secret + "@%s",
	"http://" + secret + "@%s",
	"http://me:" + secret,
	" http://me:" + secret + "@%s",
	"http://me:" + secret + "@%s\n",
	"ftp://me:" + secret + "@%s",
	"me:" + secret + "@@@::://",
	secret,
}

// TestFetchLedgerNeverPrintsThePassword: whatever form the URL takes,
// whatever goes wrong (no such exporter, a refusal that echoes the basic
// auth it was sent, a URL that does not parse), the error never holds the
// password.
func TestFetchLedgerNeverPrintsThePassword(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A hostile or careless exporter that tells back what it was sent.
		h := r.Header.Get("Authorization")
		raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(h, "Basic "))
		http.Error(w, "no, "+string(raw)+" "+h+" "+r.URL.String(), http.StatusForbidden)
	}))
	defer echo.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedHost := closed.Listener.Addr().String()
	closed.Close()
	for _, host := range []string{echo.Listener.Addr().String(), closedHost} {
		_, port, _ := net.SplitHostPort(host)
		for _, form := range urlForms {
			raw := strings.ReplaceAll(strings.ReplaceAll(form, "%s", host), "%p", port)
			raw = strings.ReplaceAll(raw, "%%", "%")
			_, _, err := FetchLedger(context.Background(), echo.Client(), raw)
			if err == nil {
				t.Errorf("%q: no error", raw)
				continue
			}
			msg := err.Error()
			if strings.Contains(msg, secret) || strings.Contains(msg, base64.StdEncoding.EncodeToString([]byte("me:" + secret))[:8]) {
				t.Errorf("%q: the password is in the error: %s", raw, msg)
			}
		}
	}
}

// FuzzExporterURL: an address made of anything around user:password@
// never has the password in what parsing it prints (the error, or the
// exporter as errors name it).
func FuzzExporterURL(f *testing.F) {
	for _, form := range urlForms {
		if prefix, suffix, ok := strings.Cut(form, "me:"+secret+"@"); ok {
			f.Add(prefix, secret, strings.ReplaceAll(suffix, "%s", "localhost:9974"))
		}
	}
	f.Add("http://", "p@ss/wo?rd#", "h:1")
	f.Add("", "12/Pa55word", "[::1]:9974/x")
	f.Fuzz(func(t *testing.T, prefix, pass, suffix string) {
		if len(pass) < 6 || strings.Contains(prefix+suffix, pass) || strings.Contains(notExporterURL, pass) {
			return // the password is not told apart from the rest
		}
		raw := prefix + "me:" + pass + "@" + suffix
		x, err := parseExporterURL(raw)
		said := x.shown
		if err != nil {
			said = err.Error()
		}
		if strings.Contains(said, pass) {
			t.Errorf("%q: the password is in %q", raw, said)
		}
	})
}

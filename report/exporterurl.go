package report

import (
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
)

// exporterURL is the address `report --exporter` was given, parsed once,
// and what of it may be printed. A user types that address in many forms
// (with or without a scheme, user:password@ or a token as the user, IPv6,
// percent-encoded or not, mistyped): url.URL.Redacted hides a password
// only where the URL parses with a host, so messages never print what was
// typed, only shown, made from the parsed parts that cannot hold a
// credential.
type exporterURL struct {
	// ledger is the ledger's URL, the user and password in it.
	ledger *url.URL
	// shown is scheme://host/path: no user, password, query or fragment.
	shown string
	// secrets are the user, the password and their basic-auth form: an
	// exporter's message that repeats one is scrubbed of it.
	secrets []string
}

// notExporterURL says what an exporter's address looks like; the address
// itself is not repeated (it may hold a password).
const notExporterURL = "--exporter is not an exporter's URL (want http://host:port or https://host:port; in a password, write @ / ? # as %40 %2F %3F %23"

// parseExporterURL parses --exporter's address: the exporter's own (its
// ledger is at LedgerPath under it) or the ledger's URL itself.
func parseExporterURL(raw string) (exporterURL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return exporterURL{}, notExporterURLError(raw)
	}
	// An @ past the host (http://me:12/pass@host) means a password was
	// cut at a /, ? or #: part of it would be taken for the host or the
	// path, printed and asked for.
	if strings.Contains(u.Path, "@") || strings.Contains(u.RawQuery, "@") || strings.Contains(u.Fragment, "@") {
		return exporterURL{}, errors.New(notExporterURL + ")")
	}
	x := exporterURL{ledger: u}
	if u.User != nil {
		name := u.User.Username()
		pass, ok := u.User.Password()
		x.secrets = append(x.secrets, base64.StdEncoding.EncodeToString([]byte(name+":"+pass)))
		if !ok {
			pass = name // a token given as the user
		}
		if pass != "" {
			x.secrets = append(x.secrets, pass, url.QueryEscape(pass), url.PathEscape(pass))
		}
	}
	if !strings.HasSuffix(u.Path, LedgerPath) {
		u.Path = strings.TrimSuffix(u.Path, "/") + LedgerPath
		u.RawPath = ""
	}
	u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
	shown := url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(u.Path, LedgerPath)}
	x.shown = x.scrub(shown.String())
	return x, nil
}

// notExporterURLError is the error for an address that is not an http(s)
// URL with a host. One typed without its scheme (localhost:9974,
// me:pass@host:9974) is named as what it likely meant, shown as any
// exporter's address is.
func notExporterURLError(raw string) error {
	if !strings.Contains(raw, "://") {
		if x, err := parseExporterURL("http://" + strings.TrimPrefix(raw, "//")); err == nil && x.ledger.Port() != "" {
			return errors.New(notExporterURL + "; did you mean " + x.shown + "?)")
		}
	}
	return errors.New(notExporterURL + ")")
}

// scrub takes the URL's password (or a token given as its user) out of s,
// in the forms a request carries it.
func (x exporterURL) scrub(s string) string {
	for _, secret := range x.secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "xxxxx")
		}
	}
	return s
}

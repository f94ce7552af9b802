package ampserver

import "net/http"

// reply is what classify needs to know of an answer.
type reply struct {
	status int
	// code is the envelope's error code, "" when there is none.
	code string
	// envelope: the body decoded as an {ok, ...} envelope with its ok;
	// ok is that ok.
	envelope, ok bool
	// resultErr: the envelope is {ok: true}, its result of another shape.
	resultErr bool
}

// classify says what an answer is: nil for a result to use, else the
// sentinel the call fails with, and why when neither the code nor the
// envelope's message says it (the caller words an ErrBadDocument from the
// decoder's error). The envelope's code decides, on any status (2xx
// included); the status only where there is no code the exporter knows.
func classify(r reply) (kind error, why string) {
	switch r.code {
	case "auth-required", "permission-denied":
		return ErrAuth, ""
	case "thread-not-found":
		return ErrThreadNotFound, ""
	case "rate-limit-exceeded":
		return ErrRateLimited, ""
	case "internal-error":
		return ErrTransient, ""
	case "invalid-argument":
		return ErrInvalidArgument, ""
	}
	switch {
	case r.status == http.StatusUnauthorized || r.status == http.StatusForbidden:
		return ErrAuth, ""
	case r.status == http.StatusTooManyRequests:
		return ErrRateLimited, ""
	case r.status >= 300 && r.status <= 399:
		// A redirect is not followed (it would carry the key).
		return ErrBadResponse, ""
	case r.status < 200 || r.status > 299:
		// No usable code: back off and try again.
		return ErrTransient, ""
	case !r.envelope:
		return ErrBadResponse, "not an {ok, result} envelope"
	case !r.ok:
		if r.code == "" {
			return ErrBadResponse, "ok is false without an error"
		}
		return ErrBadResponse, ""
	case r.resultErr:
		return ErrBadDocument, ""
	}
	return nil, ""
}

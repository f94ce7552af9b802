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

// verdict is what an answer is: kind is nil for a result to use, else the
// sentinel the call fails with; why says why when neither the code nor
// the envelope's message does (the caller words an ErrBadDocument from the
// decoder's error).
type verdict struct {
	kind error
	why  string
}

// classify says what an answer is. The envelope's code decides, on any
// status (2xx included); the status only where there is no code the
// exporter knows.
func classify(r reply) verdict {
	switch r.code {
	case "auth-required", "permission-denied":
		return verdict{ErrAuth, ""}
	case "thread-not-found":
		return verdict{ErrThreadNotFound, ""}
	case "rate-limit-exceeded":
		return verdict{ErrRateLimited, ""}
	case "internal-error":
		return verdict{ErrTransient, ""}
	case "invalid-argument":
		return verdict{ErrInvalidArgument, ""}
	}
	switch {
	case r.status == http.StatusUnauthorized || r.status == http.StatusForbidden:
		return verdict{ErrAuth, ""}
	case r.status == http.StatusTooManyRequests:
		return verdict{ErrRateLimited, ""}
	case r.status >= 300 && r.status <= 399:
		// A redirect is not followed (it would carry the key).
		return verdict{ErrBadResponse, ""}
	case r.status < 200 || r.status > 299:
		// No usable code: back off and try again.
		return verdict{ErrTransient, ""}
	case !r.envelope:
		return verdict{ErrBadResponse, "not an {ok, result} envelope"}
	case !r.ok:
		if r.code == "" {
			return verdict{ErrBadResponse, "ok is false without an error"}
		}
		return verdict{ErrBadResponse, ""}
	case r.resultErr:
		return verdict{ErrBadDocument, ""}
	}
	return verdict{nil, ""}
}

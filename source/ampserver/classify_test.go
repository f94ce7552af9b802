package ampserver

import "testing"

// TestClassify: what each answer is, by the envelope's code first (on any
// status) and by the status where there is no code the exporter knows.
func TestClassify(t *testing.T) {
	ok := reply{status: 200, envelope: true, ok: true}
	with := func(r reply, f func(*reply)) reply { f(&r); return r }
	for _, tc := range []struct {
		name string
		r    reply
		kind error
		why  string
	}{
		{"a result", ok, nil, ""},
		{"auth-required on 200", with(ok, func(r *reply) { r.code, r.ok = "auth-required", false }), ErrAuth, ""},
		{"permission-denied on 500", reply{status: 500, code: "permission-denied"}, ErrAuth, ""},
		{"thread-not-found on 404", reply{status: 404, code: "thread-not-found", envelope: true}, ErrThreadNotFound, ""},
		{"rate-limit-exceeded on 200", reply{status: 200, code: "rate-limit-exceeded", envelope: true}, ErrRateLimited, ""},
		{"internal-error on 400", reply{status: 400, code: "internal-error", envelope: true}, ErrTransient, ""},
		{"invalid-argument on 200", reply{status: 200, code: "invalid-argument", envelope: true}, ErrInvalidArgument, ""},
		{"the code wins over the status", reply{status: 401, code: "thread-not-found", envelope: true}, ErrThreadNotFound, ""},
		{"401 without a code", reply{status: 401}, ErrAuth, ""},
		{"403 with an unknown code", reply{status: 403, code: "new-code", envelope: true}, ErrAuth, ""},
		{"429", reply{status: 429}, ErrRateLimited, ""},
		{"a redirect", reply{status: 302}, ErrBadResponse, ""},
		{"500 without a code", reply{status: 500}, ErrTransient, ""},
		{"503 with an unknown code", reply{status: 503, code: "x", envelope: true}, ErrTransient, ""},
		{"100", reply{status: 100}, ErrTransient, ""},
		{"200, not an envelope", reply{status: 200}, ErrBadResponse, "not an {ok, result} envelope"},
		{"200, ok false without an error", reply{status: 200, envelope: true}, ErrBadResponse, "ok is false without an error"},
		{"200, ok false with an unknown code", reply{status: 200, envelope: true, code: "later"}, ErrBadResponse, ""},
		{"200, a result of another shape", with(ok, func(r *reply) { r.resultErr = true }), ErrBadDocument, ""},
		{"204, a result", with(ok, func(r *reply) { r.status = 204 }), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, why := classify(tc.r)
			if kind != tc.kind || why != tc.why {
				t.Fatalf("classify(%+v) = %v, %q; want %v, %q", tc.r, kind, why, tc.kind, tc.why)
			}
		})
	}
}

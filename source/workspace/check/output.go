package check

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/amp-exporter/amp-exporter/source/workspace/api"
)

// hasItems tells whether the answer had an item a field path is in:
// "data[].users[].user.id" is in the items of data[].users.
func hasItems(s *api.Shape, path string) bool {
	i := max(strings.LastIndex(path, "[]."), strings.LastIndex(path, ".*."))
	if i < 0 {
		return true // a top-level field
	}
	parent := path[:i]
	for p := range s.Fields {
		if strings.HasPrefix(p, parent+"[].") || strings.HasPrefix(p, parent+".*.") {
			return true
		}
	}
	return false
}

// Problems are the reasons what came back cannot be counted (none: it
// can).
func (r *Report) Problems() []string {
	var ps []string
	if r.TokenErr != nil {
		ps = append(ps, "no token: "+r.TokenErr.Error())
		return ps
	}
	for _, e := range r.Endpoints {
		var se *api.ScopeError
		var ae *api.AnswerError
		switch {
		case e.Skipped != "":
			continue
		case errors.As(e.Err, &se):
			ps = append(ps, fmt.Sprintf("%s: the scope %s is missing", e.Name, se.Scope))
		case errors.Is(e.Err, api.ErrNotFound) && e.Name == api.EndpointThreadUsage:
			// Past the 90-day window or deleted: not a shape problem.
		case errors.As(e.Err, &ae):
			ps = append(ps, ae.Error())
		case e.Err != nil:
			ps = append(ps, e.Err.Error())
		}
		if e.Shape == nil {
			continue
		}
		for _, a := range e.Shape.Sorted() {
			if (a.Reason == api.ReasonMissingField || a.Reason == api.ReasonTypeMismatch) && requiredPath(e.Name, a.Field) {
				ps = append(ps, fmt.Sprintf("%s: %s %s (%d items skipped)", e.Name, a.Reason, a.Field, e.Shape.Anomalies[a]))
			}
		}
	}
	return ps
}

// Countable tells whether what came back can be counted.
func (r *Report) Countable() bool { return len(r.Problems()) == 0 }

// Write prints the report.
func (r *Report) Write(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("amp-exporter workspace check")
	p("api_url:   %s", r.APIURL)
	p("token_url: %s (client_auth: %s%s)", r.TokenURL, r.ClientAuth, map[bool]string{true: ", resource: " + r.Resource}[r.Resource != ""])
	p("")
	p("token")
	if r.TokenErr != nil {
		p("  failed: %v", r.TokenErr)
		var te *api.TokenError
		if errors.As(r.TokenErr, &te) && te.Code == "invalid_client" {
			other := api.AuthPost
			if r.ClientAuth == api.AuthPost {
				other = api.AuthBasic
			}
			p("  hint: check client_id and the secret; if they are right, try client_auth: %s", other)
		}
		if errors.As(r.TokenErr, &te) && te.Code == "invalid_target" {
			p("  hint: try with resource set (or unset)")
		}
	} else {
		p("  ok")
		for _, s := range r.ScopesAsked {
			state := "granted"
			switch {
			case len(r.ScopesGranted) == 0:
				state = "asked (the answer names no scope)"
			case !slices.Contains(r.ScopesGranted, s):
				state = "NOT granted"
			}
			p("  scope %s: %s", s, state)
		}
		for _, s := range r.ScopesGranted {
			if !slices.Contains(r.ScopesAsked, s) {
				p("  scope %s: granted, not asked", s)
			}
		}
	}
	for _, e := range r.Endpoints {
		r.writeEndpoint(p, e)
	}
	p("")
	if ps := r.Problems(); len(ps) > 0 {
		p("result: NOT countable")
		for _, x := range ps {
			p("  - %s", x)
		}
	} else {
		p("result: countable")
	}
	p("")
	p("If anything above differs from what docs/workspace.md shows, please open an issue")
	p("with this output (it holds no secret and no token).")
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) writeEndpoint(p func(string, ...any), e *Endpoint) {
	p("")
	p("%s: %s", e.Name, e.Request)
	if e.Skipped != "" {
		p("  not asked: %s", e.Skipped)
		return
	}
	status := "no answer"
	if len(e.Statuses) > 0 {
		status = "HTTP " + strings.Join(e.Statuses, ", HTTP ")
	}
	var se *api.ScopeError
	switch {
	case e.Err == nil:
		p("  reachable: %s", status)
	case errors.As(e.Err, &se):
		p("  reachable: %s: the scope %s is missing", status, se.Scope)
	case errors.Is(e.Err, api.ErrNotFound):
		p("  reachable: %s: not found (past the 90-day window, or deleted)", status)
	default:
		p("  reachable: %s: %v", status, e.Err)
	}
	for _, n := range e.Notes {
		p("  note: %s", n)
	}
	if e.Shape != nil {
		for _, f := range expected[e.Name] {
			n := e.Shape.Fields[f.path]
			state := fmt.Sprintf("seen %d", n)
			switch {
			case n == 0 && !hasItems(e.Shape, f.path):
				state = "not seen: no item to see it in"
			case n == 0:
				state = "MISSING"
				if f.scope != "" && !slices.Contains(r.ScopesGranted, f.scope) {
					state = "missing (needs " + f.scope + ")"
				}
				if f.use != "" {
					state += ": " + f.use
				}
				if f.required {
					state += " (required)"
				}
			}
			p("  field %s: %s", f.path, state)
		}
		for _, a := range e.Shape.Sorted() {
			p("  %s: %s (%d)", a.Reason, a.Field, e.Shape.Anomalies[a])
		}
	}
	for _, t := range e.Totals {
		p("  %s: %s", t[0], t[1])
	}
}

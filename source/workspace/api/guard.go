package api

import (
	"fmt"
	"net/http"
	"strings"
)

// getOnly is the transport-level guard: no request other than GET ever
// leaves for a path under /api/v2/, whatever code above it asks (the
// API's DELETE removes a thread). The token endpoint's POST is elsewhere.
type getOnly struct{ next http.RoundTripper }

func (g getOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && strings.Contains(r.URL.EscapedPath(), "/api/v2/") {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, fmt.Errorf("refused %s: only GET is ever sent to the workspace API", r.Method)
	}
	return g.next.RoundTrip(r)
}

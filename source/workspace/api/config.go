package api

import "github.com/amp-exporter/amp-exporter/config"

// OptionsFrom maps the amp_workspace section to Options; the caller adds
// the clock, the hooks and the version.
func OptionsFrom(c config.WorkspaceConfig) Options {
	p := c.ListingParams
	return Options{
		APIURL: c.APIURL, TokenURL: c.TokenURL,
		ClientID: c.ClientID, ClientSecret: string(c.ClientSecret), ClientAuth: c.ClientAuth,
		Resource: c.Resource, Scopes: c.Scopes, MaxRequestsPerMinute: c.MaxRequestsPerMinute,
		Params: ListingParams{Cursor: p.Cursor, After: p.After, Before: p.Before, Sort: p.Sort},
		HTTP:   c.HTTPClient,
	}
}

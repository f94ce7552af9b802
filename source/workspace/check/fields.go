package check

import "github.com/amp-exporter/amp-exporter/source/workspace/api"

// field is a field the exporter reads.
type field struct {
	path string
	// required: without it the item cannot be counted.
	required bool
	// scope: the field is shown only with this scope.
	scope string
	// why it matters when it is missing.
	use string
}

const (
	scopeContents = "amp.api:workspace.threads.contents:view"
	scopeMembers  = "amp.api:workspace.members:view"
)

// expected are the fields the exporter reads, per endpoint.
var expected = map[string][]field{
	api.EndpointThreads: {
		{path: "threads", required: true},
		{path: "threads[].id", required: true},
		{path: "threads[].creatorUserID", required: true, use: "the user label"},
		{path: "threads[].createdAt", use: "the 90-day window"},
		{path: "threads[].updatedAt", use: "what changed since the last sync"},
		{path: "threads[].firstSyncedAt", use: "after/before and the listing's order"},
		{path: "threads[].repositories", scope: scopeContents, use: "the repository label"},
	},
	api.EndpointThreadUsage: {
		{path: "threadID", required: true},
		{path: "usage", use: "amp_billed_cost_usd_total"},
		{path: "models", use: "tokens and dollars per model"},
		{path: "models[].model", required: true},
		{path: "models[].provider"},
		{path: "models[].inputTokens"},
		{path: "models[].outputTokens"},
		{path: "models[].cacheReadInputTokens"},
		{path: "models[].cacheCreationInputTokens"},
		{path: "models[].usage", use: "dollars per model"},
	},
	api.EndpointDailyUsage: {
		{path: "data", required: true},
		{path: "data[].date", required: true},
		{path: "data[].users[].user.id", required: true},
		{path: "data[].users[].user.email", scope: scopeMembers, use: "user_label: email"},
		{path: "data[].users[].metrics.usage"},
		{path: "data[].users[].metrics.linesAdded"},
		{path: "data[].users[].metrics.linesDeleted"},
		{path: "data[].users[].metrics.linesModified"},
		{path: "data[].users[].models.*.inputTokens"},
		{path: "data[].users[].models.*.outputTokens"},
		{path: "data[].users[].models.*.cacheReadInputTokens"},
		{path: "data[].users[].models.*.cacheCreationInputTokens"},
		{path: "data[].users[].models.*.totalTokens"},
		{path: "data[].users[].models.*.usage"},
	},
}

// requiredPath tells whether a path is a required field of an endpoint.
func requiredPath(endpoint, path string) bool {
	for _, f := range expected[endpoint] {
		if f.path == path {
			return f.required
		}
	}
	return false
}

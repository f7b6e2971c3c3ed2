// Package client serves the imports through which a tool asks the MCP
// client, and through it the person, for something mid-call:
//
//	warden.elicit  {"key"?, "params": ElicitRequestParams}    -> ElicitResult
//	warden.sample  {"key"?, "params": CreateMessageRequestParams} -> CreateMessageResult
//	warden.roots   {"key"?, "params"?: {}}                     -> ListRootsResult
//	warden.ask     {"requests": [{"key"?, "method", "params"}]} -> {"results": [...]}
//
// Params and results are MCP's own (elicitation/create,
// sampling/createMessage, roots/list). ask sends several at once, so that a
// client speaking 2026-07-28 gets them in one input-required result.
//
// The one permission gate is the tool's grant: tools.grants.<tool>.client
// must list the feature (elicit, sample, roots). Past it, a client that did
// not declare the feature, or a call with no client at all, gets the typed
// error "unsupported" at once, never a wait. Waiting for an answer is bounded
// by tools.defaults.client_wait and holds the call's deadline; the guest runs
// no instructions meanwhile, so it burns no fuel.
//
// A tool's question is visibly the tool's: the message the client shows
// begins with a line warden writes, naming the tool and its module, and the
// tool's own text follows escaped and quoted (Attribution); so does a
// sampling request's systemPrompt (SamplingAttribution). warden's own
// questions carry _meta[tool.MetaQuestion], a key no tool may put in its
// params, nor any params field spelt in another case than MCP's.
// A URL-mode elicitation, whose link the client would present as warden's,
// and a sampling request for the session's context (includeContext) are
// refused as denied.
package client

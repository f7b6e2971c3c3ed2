package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Client features a tool may be granted (tools.grants.<tool>.client) and
// the MCP method each one asks with.
const (
	ClientElicit = "elicit" // elicitation/create: ask the person for input
	ClientSample = "sample" // sampling/createMessage: ask the client's model
	ClientRoots  = "roots"  // roots/list: the client's roots
)

// ClientFeatures lists the client features, in documentation order.
var ClientFeatures = []string{ClientElicit, ClientSample, ClientRoots}

// MCP methods of the client features.
const (
	MethodElicit = "elicitation/create"
	MethodSample = "sampling/createMessage"
	MethodRoots  = "roots/list"
)

// FeatureOf returns the client feature a method belongs to, "" if none.
func FeatureOf(method string) string {
	switch method {
	case MethodElicit:
		return ClientElicit
	case MethodSample:
		return ClientSample
	case MethodRoots:
		return ClientRoots
	}
	return ""
}

// ValidateClientFeature checks one value of a client grant or request.
func ValidateClientFeature(f string) error {
	for _, known := range ClientFeatures {
		if strings.EqualFold(f, known) {
			return nil
		}
	}
	return fmt.Errorf("unknown client feature %q (known: %s)", f, strings.Join(ClientFeatures, ", "))
}

// HasClient reports whether c grants (or requests) the client feature f.
func (c Capabilities) HasClient(f string) bool {
	for _, g := range c.Client {
		if strings.EqualFold(g, f) {
			return true
		}
	}
	return false
}

// ClientRequest is one request to the MCP client, as a call asks it.
type ClientRequest struct {
	// Key names the request within its call; the client's answer comes
	// back under it. Keys of warden's own requests begin with ReservedPrefix.
	Key string `json:"key"`
	// Method is MethodElicit, MethodSample or MethodRoots.
	Method string `json:"method"`
	// Params are the method's params as MCP defines them.
	Params json.RawMessage `json:"params,omitempty"`
}

// Client is the MCP client behind a call, as far as the call may reach it.
// The MCP server gives one to every call; a nil Client means none can be
// asked (a call from the CLI, say).
type Client interface {
	// Supports reports whether the client declared the feature (one of
	// ClientFeatures).
	Supports(feature string) bool
	// Require is Supports for a feature the call is about to use: when the
	// client lacks it, the feature is noted as one the request needed (a
	// 2026-07-28 server answers a request that failed for want of it with
	// MissingRequiredClientCapability, -32021).
	Require(feature string) bool
	// Ask sends the requests and returns each one's result, in order. It
	// returns ErrInputRequired when the answers must come back in a later
	// request of the client's (a 2026-07-28 input-required result): the
	// call must then stop at once, and the server answers with the
	// requests. Ask honours ctx: a person who never answers is bounded by
	// the caller.
	Ask(ctx context.Context, requests []ClientRequest) ([]json.RawMessage, error)
}

// ErrInputRequired is returned by Client.Ask when the client answers in a
// later round trip; see Client.
var ErrInputRequired = &Error{Kind: KindUnsupported, Message: "input required: the client answers in its next request"}

// IsInputRequired reports whether err is, or wraps, ErrInputRequired.
func IsInputRequired(err error) bool { return errors.Is(err, ErrInputRequired) }

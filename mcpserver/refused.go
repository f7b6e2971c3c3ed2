package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

// Refusal is a tool the server does not list or call because another module
// describes the same name; Reason says what to do about it.
type Refusal struct {
	Tool    string   `json:"tool"`
	Module  string   `json:"module"`
	Modules []string `json:"modules"`
	Reason  string   `json:"reason"`
}

// refused returns what Options.Refused refuses, or nil.
func (s *Server) refused() []Refusal {
	if s.opts.Refused != nil {
		return s.opts.Refused()
	}
	return nil
}

// refusedMiddleware adds the refusals to every tools/list result.
func (s *Server) refusedMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "tools/list" || err != nil {
			return res, err
		}
		if list, ok := res.(*mcp.ListToolsResult); ok {
			if refused := s.refused(); len(refused) > 0 {
				if list.Meta == nil {
					list.Meta = mcp.Meta{}
				}
				list.Meta[tool.MetaRefused] = refused
			}
		}
		return res, err
	}
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil(r []Refusal) []Refusal {
	if r == nil {
		return []Refusal{}
	}
	return r
}

package mcpserver

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

// toolFor maps a validated descriptor onto an MCP tool. The fields MCP's Tool
// has no place for go under _meta, with keys the tool.Meta* constants name.
func toolFor(d *tool.Descriptor) *mcp.Tool {
	t := &mcp.Tool{
		Name:        d.Name,
		Title:       d.Title,
		Description: d.Description,
		// Raw, so that the schema reaches the client byte for byte: keyword
		// order, $defs, $anchor and all of 2020-12 survive.
		InputSchema: d.InputSchema,
	}
	if len(d.OutputSchema) > 0 {
		t.OutputSchema = d.OutputSchema
	}
	if a := d.Annotations; a != nil {
		t.Annotations = &mcp.ToolAnnotations{
			ReadOnlyHint:    a.ReadOnlyHint != nil && *a.ReadOnlyHint,
			IdempotentHint:  a.IdempotentHint != nil && *a.IdempotentHint,
			DestructiveHint: a.DestructiveHint,
			OpenWorldHint:   a.OpenWorldHint,
		}
	}
	for _, icon := range d.Icons {
		t.Icons = append(t.Icons, mcp.Icon{
			Source:   icon.Src,
			MIMEType: icon.MimeType,
			Sizes:    icon.Sizes,
			Theme:    mcp.IconTheme(icon.Theme),
		})
	}
	meta := mcp.Meta{}
	if d.Version != "" {
		meta[tool.MetaVersion] = d.Version
	}
	if len(d.Tags) > 0 {
		meta[tool.MetaTags] = d.Tags
	}
	if d.Category != "" {
		meta[tool.MetaCategory] = d.Category
	}
	if !d.Capabilities.IsZero() {
		meta[tool.MetaCapabilities] = d.Capabilities
	}
	if d.TimeoutMillis > 0 {
		meta[tool.MetaTimeoutMs] = d.TimeoutMillis
	}
	if d.Paginates {
		meta[tool.MetaPaginates] = true
	}
	if len(meta) > 0 {
		t.Meta = meta
	}
	return t
}

// resultFor maps a tool result onto an MCP result. What the model must never
// see (Details, captured output) is logged at debug level instead. A content
// block that cannot be represented makes the whole call a bad_output error:
// silently dropping part of a result would show the model something the tool
// did not say.
func (s *Server) resultFor(name string, r *tool.Result) *mcp.CallToolResult {
	if len(r.Details) > 0 || r.Captured != nil {
		s.log.Debug("tool result details", "tool", name,
			"details", json.RawMessage(r.Details), "captured", r.Captured)
	}
	out, err := mapResult(r)
	if err != nil {
		s.log.Warn("tool result cannot be sent", "tool", name, "error", err)
		out, _ = mapResult(tool.ErrorResult(tool.Errorf(tool.KindBadOutput, "%v", err)))
	}
	if out.IsError {
		s.log.Info("tool call failed", "tool", name,
			"kind", out.Meta[tool.MetaKind], "error", r.Error)
	}
	return out
}

// mapResult is the pure part of resultFor: no logging, every failure returned.
func mapResult(r *tool.Result) (*mcp.CallToolResult, error) {
	out := &mcp.CallToolResult{Content: make([]mcp.Content, 0, len(r.Content))}
	for i := range r.Content {
		c, err := contentFor(&r.Content[i])
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		out.Content = append(out.Content, c)
	}
	if len(r.StructuredContent) > 0 {
		if !json.Valid(r.StructuredContent) {
			return nil, fmt.Errorf("structuredContent is not valid JSON")
		}
		out.StructuredContent = r.StructuredContent
	}
	var meta mcp.Meta
	if len(r.Meta) > 0 || r.NextCursor != "" || r.IsError || r.Error != nil {
		meta = mcp.Meta{} // most results have no _meta: no map for them
	}
	for k, v := range r.Meta {
		meta[k] = v
	}
	if r.NextCursor != "" {
		meta[tool.MetaNextCursor] = r.NextCursor
	}
	if r.IsError || r.Error != nil {
		out.IsError = true
		e := r.Error
		if e == nil || !e.Kind.Valid() {
			// An error without a known kind is warden's bug, not the tool's.
			e = &tool.Error{Kind: tool.KindInternal, Message: "tool failed without a typed error"}
			if r.Error != nil {
				e.Message = r.Error.Message
			}
		}
		e.PutMeta(meta)
		if len(out.Content) == 0 {
			// A model needs words to recover from a failure.
			out.Content = append(out.Content, &mcp.TextContent{Text: e.Error()})
		}
	}
	if len(meta) > 0 {
		out.Meta = meta
	}
	return out, nil
}

// contentFor maps one content block. The runtime has judged every block
// already (tool.Content.Validate, the one judgment `warden call` shares), so
// this only translates: binary payloads travel as base64 in both tool.Content
// and MCP, but the go-sdk holds them decoded, so they are decoded here and
// re-encoded by the go-sdk. The errors left are for results that did not
// come through the runtime.
func contentFor(c *tool.Content) (mcp.Content, error) {
	ann := annotationsFor(c.Annotations)
	switch c.Type {
	case tool.ContentText:
		return &mcp.TextContent{Text: c.Text, Annotations: ann}, nil
	case tool.ContentImage, tool.ContentAudio:
		data, err := tool.DecodeBase64(c.Data)
		if err != nil {
			return nil, fmt.Errorf("%s data: %w", c.Type, err)
		}
		if c.Type == tool.ContentImage {
			return &mcp.ImageContent{Data: data, MIMEType: c.MimeType, Annotations: ann}, nil
		}
		return &mcp.AudioContent{Data: data, MIMEType: c.MimeType, Annotations: ann}, nil
	case tool.ContentResourceLink:
		return &mcp.ResourceLink{
			URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description,
			MIMEType: c.MimeType, Size: c.Size, Annotations: ann,
		}, nil
	case tool.ContentResource:
		if c.Resource == nil {
			return nil, fmt.Errorf("resource content needs resource.uri")
		}
		rc := &mcp.ResourceContents{URI: c.Resource.URI, MIMEType: c.Resource.MimeType, Text: c.Resource.Text}
		if c.Resource.Blob != "" {
			blob, err := tool.DecodeBase64(c.Resource.Blob)
			if err != nil {
				return nil, fmt.Errorf("resource blob: %w", err)
			}
			rc.Blob = blob
		}
		return &mcp.EmbeddedResource{Resource: rc, Annotations: ann}, nil
	}
	return nil, fmt.Errorf("unknown content type %q", c.Type)
}

func annotationsFor(a *tool.ContentAnnotation) *mcp.Annotations {
	if a == nil {
		return nil
	}
	out := &mcp.Annotations{LastModified: a.LastModified}
	for _, role := range a.Audience {
		out.Audience = append(out.Audience, mcp.Role(role))
	}
	if a.Priority != nil {
		out.Priority = *a.Priority
	}
	return out
}

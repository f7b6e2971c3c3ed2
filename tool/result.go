package tool

import "encoding/json"

// Request is what the host sends a module's call export: which of the
// module's tools to run, with which arguments.
type Request struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// CallID identifies the call in logs and progress notifications.
	CallID string `json:"callId,omitempty"`
	// Cursor continues a paginated listing (Descriptor.Paginates). The host
	// verifies a client's cursor before a guest ever sees it.
	Cursor string `json:"cursor,omitempty"`
}

// Result is the outcome of one call: what the model sees (Content,
// StructuredContent, IsError) and what it never sees (Details, Stats).
type Result struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	// Error is set exactly when IsError is: the failure's kind and message.
	Error *Error `json:"error,omitempty"`
	// Details is kept for logs and user interfaces, never sent to the model.
	Details json.RawMessage `json:"details,omitempty"`
	// NextCursor, when set, continues the listing on the next call.
	NextCursor string `json:"nextCursor,omitempty"`
	// Meta is what the host adds about the call (fuel consumed, duration,
	// error kind); MCP clients receive it as _meta. Guests cannot set it.
	Meta map[string]any `json:"-"`
	// Captured holds what the guest wrote to stdout and stderr during the
	// call, bounded; it is logged, never sent to the model. Guests cannot set it.
	Captured *Captured `json:"-"`
}

// Captured is a guest's bounded stdout and stderr from one call.
type Captured struct {
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
	// Dropped counts bytes written past the bound and discarded.
	Dropped int64 `json:"dropped,omitempty"`
}

// ErrorResult returns an error Result whose single text block is err's message.
func ErrorResult(err *Error) *Result {
	return &Result{Content: []Content{TextContent(err.Error())}, IsError: true, Error: err}
}

// Content is one MCP content block. Type selects which other fields apply:
//
//   - "text": Text
//   - "image", "audio": Data (base64) and MimeType
//   - "resource_link": URI, Name, and optionally Title, Description, MimeType, Size
//   - "resource": Resource, an embedded resource with Text or Blob
type Content struct {
	Type        string             `json:"type"`
	Text        string             `json:"text,omitempty"`
	Data        string             `json:"data,omitempty"`
	MimeType    string             `json:"mimeType,omitempty"`
	URI         string             `json:"uri,omitempty"`
	Name        string             `json:"name,omitempty"`
	Title       string             `json:"title,omitempty"`
	Description string             `json:"description,omitempty"`
	Size        *int64             `json:"size,omitempty"`
	Resource    *EmbeddedResource  `json:"resource,omitempty"`
	Annotations *ContentAnnotation `json:"annotations,omitempty"`
}

// EmbeddedResource is the body of a "resource" content block.
type EmbeddedResource struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"` // base64
}

// ContentAnnotation carries the MCP audience/priority hints of a block.
type ContentAnnotation struct {
	Audience     []string `json:"audience,omitempty"`
	Priority     *float64 `json:"priority,omitempty"`
	LastModified string   `json:"lastModified,omitempty"`
}

// Content block types.
const (
	ContentText         = "text"
	ContentImage        = "image"
	ContentAudio        = "audio"
	ContentResourceLink = "resource_link"
	ContentResource     = "resource"
)

// TextContent returns a text block.
func TextContent(text string) Content { return Content{Type: ContentText, Text: text} }

// Validate checks that a block carries the fields its type requires.
func (c *Content) Validate() error {
	switch c.Type {
	case ContentText:
		return nil
	case ContentImage, ContentAudio:
		if c.Data == "" || c.MimeType == "" {
			return Errorf(KindBadOutput, "%s content needs data and mimeType", c.Type)
		}
	case ContentResourceLink:
		if c.URI == "" || c.Name == "" {
			return Errorf(KindBadOutput, "resource_link content needs uri and name")
		}
	case ContentResource:
		if c.Resource == nil || c.Resource.URI == "" {
			return Errorf(KindBadOutput, "resource content needs resource.uri")
		}
	default:
		return Errorf(KindBadOutput, "unknown content type %q", c.Type)
	}
	return nil
}

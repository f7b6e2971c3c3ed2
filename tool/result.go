package tool

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"strings"
)

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
// StructuredContent, IsError) and what it never sees (Details, Outcome).
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
	// Outcome is what the runtime measured of the call (its Meta has it
	// too, written by Outcome.PutMeta); zero for a result the runtime did
	// not produce. Guests cannot set it.
	Outcome Outcome `json:"-"`
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

// Validate is the one judgment of a content block, shared by every path a
// result takes (the runtime applies it to each guest result, so `warden call`
// and MCP's tools/call agree): the fields its type requires are present, and
// well-formed as MCP requires them. Binary payloads must be base64 that
// DecodeBase64 accepts, media types must parse, an embedded resource holds
// text or a blob but not both, and annotations use MCP's roles and range.
func (c *Content) Validate() error {
	switch c.Type {
	case ContentText:
	case ContentImage, ContentAudio:
		if c.Data == "" || c.MimeType == "" {
			return Errorf(KindBadOutput, "%s content needs data and mimeType", c.Type)
		}
		if err := validMediaType(c.MimeType); err != nil {
			return Errorf(KindBadOutput, "%s content mimeType: %v", c.Type, err)
		}
		if _, err := DecodeBase64(c.Data); err != nil {
			return Errorf(KindBadOutput, "%s content data is not base64: %v", c.Type, err)
		}
	case ContentResourceLink:
		if c.URI == "" || c.Name == "" {
			return Errorf(KindBadOutput, "resource_link content needs uri and name")
		}
		if c.MimeType != "" {
			if err := validMediaType(c.MimeType); err != nil {
				return Errorf(KindBadOutput, "resource_link content mimeType: %v", err)
			}
		}
		if c.Size != nil && *c.Size < 0 {
			return Errorf(KindBadOutput, "resource_link content size %d is negative", *c.Size)
		}
	case ContentResource:
		r := c.Resource
		if r == nil || r.URI == "" {
			return Errorf(KindBadOutput, "resource content needs resource.uri")
		}
		if r.Text != "" && r.Blob != "" {
			return Errorf(KindBadOutput, "resource content has both text and blob; it must have one")
		}
		if r.MimeType != "" {
			if err := validMediaType(r.MimeType); err != nil {
				return Errorf(KindBadOutput, "resource content mimeType: %v", err)
			}
		}
		if r.Blob != "" {
			if _, err := DecodeBase64(r.Blob); err != nil {
				return Errorf(KindBadOutput, "resource content blob is not base64: %v", err)
			}
		}
	default:
		return Errorf(KindBadOutput, "unknown content type %q", c.Type)
	}
	if a := c.Annotations; a != nil {
		for _, role := range a.Audience {
			if role != "user" && role != "assistant" {
				return Errorf(KindBadOutput, "%s content annotations: audience %q is not \"user\" or \"assistant\"", c.Type, role)
			}
		}
		if a.Priority != nil && !(*a.Priority >= 0 && *a.Priority <= 1) {
			return Errorf(KindBadOutput, "%s content annotations: priority %v is outside 0..1", c.Type, *a.Priority)
		}
	}
	return nil
}

// validMediaType checks a MIME type such as "image/png" or
// "text/plain; charset=utf-8".
func validMediaType(s string) error {
	mt, _, err := mime.ParseMediaType(s)
	if err != nil {
		return fmt.Errorf("%q is not a media type: %w", s, err)
	}
	if !strings.Contains(mt, "/") {
		return fmt.Errorf("%q is not a media type (want type/subtype)", s)
	}
	return nil
}

// DecodeBase64 decodes a content block's binary payload: standard base64,
// padded or not, which is what MCP specifies; the line breaks some encoders
// insert are tolerated.
func DecodeBase64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, s)
	if data, err := base64.StdEncoding.DecodeString(s); err == nil {
		return data, nil
	}
	return base64.RawStdEncoding.DecodeString(s)
}

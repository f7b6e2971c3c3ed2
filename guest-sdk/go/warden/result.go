package warden

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/warden-run/warden/tool"
)

// Result returns a result made of blocks. The block constructors below
// (TextBlock, ImageBlock, ...) build the blocks; Text, Image and the other
// result constructors are shorthands for a result with one block.
func Result(blocks ...tool.Content) *tool.Result {
	if blocks == nil {
		blocks = []tool.Content{}
	}
	return &tool.Result{Content: blocks}
}

// Text returns a result with one text block.
func Text(s string) *tool.Result { return single(TextBlock(s)) }

// single returns a result of one block, allocating the result and its block
// together: each allocation costs hundreds of instructions inside wasm, and
// a one-block result is what most calls return.
func single(block tool.Content) *tool.Result {
	r := new(struct {
		result tool.Result
		blocks [1]tool.Content
	})
	r.blocks[0] = block
	r.result.Content = r.blocks[:]
	return &r.result
}

// Textf is Text with a format.
func Textf(format string, args ...any) *tool.Result { return Text(fmt.Sprintf(format, args...)) }

// JSON returns v as structured content together with a text block holding
// the same JSON, as MCP recommends for clients that read only text. v must
// encode to a JSON object, the only structured content MCP allows.
func JSON(v any) (*tool.Result, error) {
	raw, err := structured(v)
	if err != nil {
		return nil, err
	}
	r := Text(string(raw))
	r.StructuredContent = raw
	return r, nil
}

// WithStructured sets r's structured content to v (which must encode to a
// JSON object) and returns r. Unlike JSON it leaves r's blocks alone, for
// tools whose text is a rendering rather than the JSON itself.
func WithStructured(r *tool.Result, v any) (*tool.Result, error) {
	raw, err := structured(v)
	if err != nil {
		return nil, err
	}
	r.StructuredContent = raw
	return r, nil
}

func structured(v any) (json.RawMessage, error) {
	if raw, ok := encodeFlatStruct(v); ok {
		return raw, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, Failed("encode structured content: %v", err)
	}
	if !bytes.HasPrefix(raw, []byte("{")) {
		return nil, Failed("structured content must be a JSON object, got %.40s", raw)
	}
	return raw, nil
}

// WithDetails attaches details to r and returns r. Details are kept in
// warden's logs and user interfaces and never shown to the model. A value
// that cannot be encoded is replaced by {"detailsError": "..."}: losing
// diagnostics must not lose the result.
func WithDetails(r *tool.Result, details any) *tool.Result {
	r.Details = encodeDetails(details)
	return r
}

func encodeDetails(details any) json.RawMessage {
	raw, err := json.Marshal(details)
	if err != nil {
		raw, _ = json.Marshal(map[string]string{"detailsError": err.Error()})
	}
	return raw
}

// Image returns a result with one image block.
func Image(data []byte, mimeType string) *tool.Result { return single(ImageBlock(data, mimeType)) }

// Audio returns a result with one audio block.
func Audio(data []byte, mimeType string) *tool.Result { return single(AudioBlock(data, mimeType)) }

// ResourceLink returns a result with one resource_link block.
func ResourceLink(uri, name string) *tool.Result { return single(ResourceLinkBlock(uri, name)) }

// EmbeddedText returns a result with one embedded text resource.
func EmbeddedText(uri, mimeType, text string) *tool.Result {
	return single(EmbeddedTextBlock(uri, mimeType, text))
}

// EmbeddedBlob returns a result with one embedded binary resource.
func EmbeddedBlob(uri, mimeType string, data []byte) *tool.Result {
	return single(EmbeddedBlobBlock(uri, mimeType, data))
}

// TextBlock returns a text content block.
func TextBlock(s string) tool.Content { return tool.TextContent(s) }

// ImageBlock returns an image content block; data is base64-encoded for you.
func ImageBlock(data []byte, mimeType string) tool.Content {
	return tool.Content{Type: tool.ContentImage, Data: base64.StdEncoding.EncodeToString(data), MimeType: mimeType}
}

// AudioBlock returns an audio content block; data is base64-encoded for you.
func AudioBlock(data []byte, mimeType string) tool.Content {
	return tool.Content{Type: tool.ContentAudio, Data: base64.StdEncoding.EncodeToString(data), MimeType: mimeType}
}

// ResourceLinkBlock returns a link to a resource the client can fetch.
func ResourceLinkBlock(uri, name string) tool.Content {
	return tool.Content{Type: tool.ContentResourceLink, URI: uri, Name: name}
}

// EmbeddedTextBlock returns a resource block carrying text.
func EmbeddedTextBlock(uri, mimeType, text string) tool.Content {
	return tool.Content{Type: tool.ContentResource, Resource: &tool.EmbeddedResource{URI: uri, MimeType: mimeType, Text: text}}
}

// EmbeddedBlobBlock returns a resource block carrying binary data,
// base64-encoded for you.
func EmbeddedBlobBlock(uri, mimeType string, data []byte) tool.Content {
	return tool.Content{Type: tool.ContentResource, Resource: &tool.EmbeddedResource{
		URI: uri, MimeType: mimeType, Blob: base64.StdEncoding.EncodeToString(data)}}
}

// The error constructors below format their message as fmt.Sprintf does
// (format and args), and go vet checks them as it checks fmt.Errorf: a
// message that is not a constant goes through a verb,
// InvalidArguments("pattern: %v", err), not InvalidArguments("pattern: " +
// err.Error()), which vet reports (and which would garble a % in err).

// InvalidArguments returns an "invalid_arguments" error: the caller should
// fix its arguments and try again.
func InvalidArguments(format string, args ...any) *tool.Error {
	return tool.Errorf(tool.KindInvalidArguments, format, args...)
}

// NotFound returns a "not_found" error: something the tool looked for does
// not exist. An empty search result is not an error; return it as a result.
func NotFound(format string, args ...any) *tool.Error {
	return tool.Errorf(tool.KindNotFound, format, args...)
}

// Denied returns a "denied" error: the tool lacks a permission it needs.
func Denied(format string, args ...any) *tool.Error {
	return tool.Errorf(tool.KindDenied, format, args...)
}

// Failed returns a "failed" error: the tool ran and could not do its job.
func Failed(format string, args ...any) *tool.Error {
	return tool.Errorf(tool.KindFailed, format, args...)
}

// Cancelled returns a "cancelled" error, for a tool that stops because the
// work it was asked to do was called off.
func Cancelled(format string, args ...any) *tool.Error {
	return tool.Errorf(tool.KindCancelled, format, args...)
}

// ErrorWithDetails returns err with details attached. Dispatch sends the
// details next to the error, where logs and user interfaces (never the model)
// see them. err keeps its kind: errors.As finds the *tool.Error inside.
func ErrorWithDetails(err error, details any) error {
	return &detailedError{err: err, details: encodeDetails(details)}
}

type detailedError struct {
	err     error
	details json.RawMessage
}

func (e *detailedError) Error() string { return e.err.Error() }
func (e *detailedError) Unwrap() error { return e.err }

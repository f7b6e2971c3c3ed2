package tool

import (
	"strings"
	"testing"
)

func TestContentValidate(t *testing.T) {
	p := func(f float64) *float64 { return &f }
	n := int64(-1)
	bad := map[string]struct {
		c    Content
		want string
	}{
		"image bad base64":   {Content{Type: "image", Data: "!!!", MimeType: "image/png"}, "not base64"},
		"image no mime":      {Content{Type: "image", Data: "AA=="}, "needs data and mimeType"},
		"image no data":      {Content{Type: "image", MimeType: "image/png"}, "needs data and mimeType"},
		"audio bad mime":     {Content{Type: "audio", Data: "AA==", MimeType: "wav"}, "mimeType"},
		"resource both":      {Content{Type: "resource", Resource: &EmbeddedResource{URI: "x:y", Text: "t", Blob: "AA=="}}, "both text and blob"},
		"resource bad blob":  {Content{Type: "resource", Resource: &EmbeddedResource{URI: "x:y", Blob: "%"}}, "blob is not base64"},
		"resource no uri":    {Content{Type: "resource", Resource: &EmbeddedResource{Text: "t"}}, "needs resource.uri"},
		"resource nil":       {Content{Type: "resource"}, "needs resource.uri"},
		"link no name":       {Content{Type: "resource_link", URI: "x:y"}, "needs uri and name"},
		"link negative size": {Content{Type: "resource_link", URI: "x:y", Name: "n", Size: &n}, "negative"},
		"unknown":            {Content{Type: "video"}, "unknown content type"},
		"audience":           {Content{Type: "text", Annotations: &ContentAnnotation{Audience: []string{"root"}}}, "audience"},
		"priority":           {Content{Type: "text", Annotations: &ContentAnnotation{Priority: p(2)}}, "priority"},
	}
	for name, c := range bad {
		err := c.c.Validate()
		if err == nil || KindOf(err) != KindBadOutput || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want bad_output with %q", name, err, c.want)
		}
	}
	good := []Content{
		TextContent(""),
		{Type: "image", Data: "iVBORw0KGgo=", MimeType: "image/png"},
		{Type: "image", Data: "iVBORw0KGgo", MimeType: "image/png"}, // unpadded
		{Type: "audio", Data: "AAAA\nAAAA", MimeType: "audio/wav; rate=8000"},
		{Type: "resource", Resource: &EmbeddedResource{URI: "file:///a", Blob: "AA=="}},
		{Type: "resource", Resource: &EmbeddedResource{URI: "file:///a", Text: "t", MimeType: "text/plain"}},
		{Type: "resource_link", URI: "file:///a", Name: "a"},
		{Type: "text", Text: "x", Annotations: &ContentAnnotation{Audience: []string{"user", "assistant"}, Priority: p(0.5)}},
	}
	for _, c := range good {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

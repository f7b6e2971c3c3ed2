package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yosida95/uritemplate/v3"
)

// A module may offer, next to its tools, MCP resources, resource templates
// and prompts (docs/abi.md, "Resources, prompts and completions"). Their
// descriptors sit beside "tools" in the descriptor document; the types below
// mirror MCP's Resource, ResourceTemplate and Prompt, plus Tool, which names
// the tool of the same module whose grants a read or a prompt runs under.

// ResourceDescriptor is one fixed resource a module serves.
type ResourceDescriptor struct {
	URI         string             `json:"uri"`
	Name        string             `json:"name"`
	Title       string             `json:"title,omitempty"`
	Description string             `json:"description,omitempty"`
	MimeType    string             `json:"mimeType,omitempty"`
	Size        *int64             `json:"size,omitempty"`
	Annotations *ContentAnnotation `json:"annotations,omitempty"`
	Icons       []Icon             `json:"icons,omitempty"`
	// Tool, when set, names a tool of the same module: reading the
	// resource runs under the grants config gives that tool. Without it
	// the read runs with no grants.
	Tool string `json:"tool,omitempty"`
}

// ResourceTemplateDescriptor is a family of resources addressed by an RFC
// 6570 URI template, such as "test://template/{id}/data".
type ResourceTemplateDescriptor struct {
	URITemplate string             `json:"uriTemplate"`
	Name        string             `json:"name"`
	Title       string             `json:"title,omitempty"`
	Description string             `json:"description,omitempty"`
	MimeType    string             `json:"mimeType,omitempty"`
	Annotations *ContentAnnotation `json:"annotations,omitempty"`
	Icons       []Icon             `json:"icons,omitempty"`
	Tool        string             `json:"tool,omitempty"`
}

// PromptDescriptor is one prompt a module serves.
type PromptDescriptor struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Icons       []Icon           `json:"icons,omitempty"`
	Tool        string           `json:"tool,omitempty"`
}

// PromptArgument is one argument a prompt accepts.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Limits on the features one module declares.
const (
	MaxResources         = 1000
	MaxResourceTemplates = 1000
	MaxPrompts           = 1000
	MaxPromptArguments   = 64
	MaxURIBytes          = 2048
	MaxFeatureNameBytes  = 256
	MaxFeatureTextBytes  = 16 << 10 // a title or description
)

// checkText checks a string of a feature descriptor: bounded, valid UTF-8
// and free of control and invisible characters (descriptions may hold
// newlines and tabs).
func checkText(field, s string, limit int, multiline bool) error {
	if len(s) > limit {
		return fmt.Errorf("%s: %d bytes, over the limit of %d", field, len(s), limit)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s: not valid UTF-8", field)
	}
	for _, r := range s {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("%s: holds the control or invisible character %U", field, r)
		}
	}
	return nil
}

// checkURI checks a resource URI: an absolute URI (with a scheme) that
// parses, within MaxURIBytes.
func checkURI(field, uri string) error {
	if uri == "" {
		return fmt.Errorf("%s: missing", field)
	}
	if err := checkText(field, uri, MaxURIBytes, false); err != nil {
		return err
	}
	if strings.ContainsAny(uri, " \"<>\\^`{|}") {
		return fmt.Errorf("%s %q: holds a character a URI may not (space, quote, <, >, \\, ^, `, {, |, })", field, uri)
	}
	u, err := url.Parse(uri)
	if err != nil {
		return fmt.Errorf("%s %q: not a URI: %v", field, uri, err)
	}
	if u.Scheme == "" {
		return fmt.Errorf("%s %q: not an absolute URI (it has no scheme, e.g. file:// or test://)", field, uri)
	}
	return nil
}

func checkCommon(prefix, name, title, description, mimeType string, icons []Icon) []error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", prefix, err))
		}
	}
	if strings.TrimSpace(name) == "" {
		add(errors.New("name: must not be empty"))
	} else {
		add(checkText("name", name, MaxFeatureNameBytes, false))
	}
	add(checkText("title", title, MaxFeatureNameBytes, false))
	add(checkText("description", description, MaxFeatureTextBytes, true))
	if mimeType != "" {
		if err := validMediaType(mimeType); err != nil {
			add(fmt.Errorf("mimeType: %v", err))
		}
	}
	if len(icons) > 16 {
		add(fmt.Errorf("icons: %d, over the limit of 16", len(icons)))
	}
	for i, icon := range icons {
		add(checkText(fmt.Sprintf("icons[%d].src", i), icon.Src, 64<<10, false))
	}
	return errs
}

// Validate checks r; prefix names it in errors ("resources[2]").
func (r *ResourceDescriptor) Validate(prefix string) error {
	var errs []error
	if err := checkURI("uri", r.URI); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", prefix, err))
	}
	errs = append(errs, checkCommon(prefix, r.Name, r.Title, r.Description, r.MimeType, r.Icons)...)
	if r.Size != nil && *r.Size < 0 {
		errs = append(errs, fmt.Errorf("%s: size %d is negative", prefix, *r.Size))
	}
	if err := checkAnnotations(r.Annotations); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", prefix, err))
	}
	return errors.Join(errs...)
}

// Validate checks t; prefix names it in errors.
func (t *ResourceTemplateDescriptor) Validate(prefix string) error {
	var errs []error
	if _, err := ParseURITemplate(t.URITemplate); err != nil {
		errs = append(errs, fmt.Errorf("%s: uriTemplate: %w", prefix, err))
	}
	errs = append(errs, checkCommon(prefix, t.Name, t.Title, t.Description, t.MimeType, t.Icons)...)
	if err := checkAnnotations(t.Annotations); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", prefix, err))
	}
	return errors.Join(errs...)
}

// ParseURITemplate parses an RFC 6570 URI template and checks that the URIs
// it expands to are absolute: the template starts with a scheme.
func ParseURITemplate(s string) (*uritemplate.Template, error) {
	if s == "" {
		return nil, errors.New("missing")
	}
	if err := checkText("uriTemplate", s, MaxURIBytes, false); err != nil {
		return nil, err
	}
	t, err := uritemplate.New(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not an RFC 6570 URI template: %v", s, err)
	}
	i := strings.Index(s, ":")
	if i <= 0 || strings.ContainsAny(s[:i], "{}/?#") {
		return nil, fmt.Errorf("%q does not start with a URI scheme (e.g. test://)", s)
	}
	if len(t.Varnames()) == 0 {
		return nil, fmt.Errorf("%q has no {variable}: declare it as a resource", s)
	}
	return t, nil
}

// Validate checks p; prefix names it in errors.
func (p *PromptDescriptor) Validate(prefix string) error {
	errs := checkCommon(prefix, p.Name, p.Title, p.Description, "", p.Icons)
	if len(p.Arguments) > MaxPromptArguments {
		errs = append(errs, fmt.Errorf("%s: arguments: %d, over the limit of %d", prefix, len(p.Arguments), MaxPromptArguments))
	}
	seen := map[string]bool{}
	for i, a := range p.Arguments {
		field := fmt.Sprintf("%s: arguments[%d]", prefix, i)
		if a.Name == "" {
			errs = append(errs, fmt.Errorf("%s: name must not be empty", field))
		} else if err := checkText("name", a.Name, 128, false); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
		}
		if seen[a.Name] {
			errs = append(errs, fmt.Errorf("%s: name %q is used twice", field, a.Name))
		}
		seen[a.Name] = true
		if err := checkText("title", a.Title, MaxFeatureNameBytes, false); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
		}
		if err := checkText("description", a.Description, MaxFeatureTextBytes, true); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
		}
	}
	return errors.Join(errs...)
}

func checkAnnotations(a *ContentAnnotation) error {
	if a == nil {
		return nil
	}
	c := Content{Type: ContentText, Annotations: a}
	if err := c.Validate(); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "bad_output: text content "))
	}
	return nil
}

// Features is what a module offers besides tools.
type Features struct {
	Resources         []ResourceDescriptor         `json:"resources,omitempty"`
	ResourceTemplates []ResourceTemplateDescriptor `json:"resourceTemplates,omitempty"`
	Prompts           []PromptDescriptor           `json:"prompts,omitempty"`
}

// Empty reports whether f offers nothing.
func (f *Features) Empty() bool {
	return len(f.Resources) == 0 && len(f.ResourceTemplates) == 0 && len(f.Prompts) == 0
}

// ParseFeatures reads the resources, resource templates and prompts of a
// descriptor document and validates them. Every problem is reported, each
// naming its entry (`resources[1] "test://x": ...`); duplicates (the same
// URI, URI template or prompt name twice) are problems too.
func ParseFeatures(doc []byte) (*Features, error) {
	var f Features
	if err := json.Unmarshal(doc, &f); err != nil {
		return nil, fmt.Errorf("resources, resourceTemplates or prompts: %w", err)
	}
	var errs []error
	if n := len(f.Resources); n > MaxResources {
		errs = append(errs, fmt.Errorf("resources: %d, over the limit of %d", n, MaxResources))
	}
	if n := len(f.ResourceTemplates); n > MaxResourceTemplates {
		errs = append(errs, fmt.Errorf("resourceTemplates: %d, over the limit of %d", n, MaxResourceTemplates))
	}
	if n := len(f.Prompts); n > MaxPrompts {
		errs = append(errs, fmt.Errorf("prompts: %d, over the limit of %d", n, MaxPrompts))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	uris := map[string]int{}
	for i := range f.Resources {
		r := &f.Resources[i]
		prefix := fmt.Sprintf("resources[%d] %q", i, clip(r.URI))
		if err := r.Validate(prefix); err != nil {
			errs = append(errs, err)
		}
		if j, dup := uris[r.URI]; dup {
			errs = append(errs, fmt.Errorf("%s: uri is also resources[%d]'s", prefix, j))
		} else {
			uris[r.URI] = i
		}
	}
	templates := map[string]int{}
	for i := range f.ResourceTemplates {
		t := &f.ResourceTemplates[i]
		prefix := fmt.Sprintf("resourceTemplates[%d] %q", i, clip(t.URITemplate))
		if err := t.Validate(prefix); err != nil {
			errs = append(errs, err)
		}
		if j, dup := templates[t.URITemplate]; dup {
			errs = append(errs, fmt.Errorf("%s: uriTemplate is also resourceTemplates[%d]'s", prefix, j))
		} else {
			templates[t.URITemplate] = i
		}
	}
	prompts := map[string]int{}
	for i := range f.Prompts {
		p := &f.Prompts[i]
		prefix := fmt.Sprintf("prompts[%d] %q", i, clip(p.Name))
		if err := p.Validate(prefix); err != nil {
			errs = append(errs, err)
		}
		if j, dup := prompts[p.Name]; dup {
			errs = append(errs, fmt.Errorf("%s: name is also prompts[%d]'s", prefix, j))
		} else {
			prompts[p.Name] = i
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &f, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// ResourceRequest is the request of the warden_read_resource export.
type ResourceRequest struct {
	URI    string `json:"uri"`
	CallID string `json:"callId,omitempty"`
}

// PromptRequest is the request of the warden_get_prompt export.
type PromptRequest struct {
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
	CallID    string            `json:"callId,omitempty"`
}

// CompleteRequest is the request of the warden_complete export: complete
// the value of Argument for Ref (a prompt argument or a template variable).
type CompleteRequest struct {
	Ref      CompleteRef      `json:"ref"`
	Argument CompleteArgument `json:"argument"`
	Context  *CompleteContext `json:"context,omitempty"`
	CallID   string           `json:"callId,omitempty"`
}

// CompleteRef names what is completed: {"type": "ref/prompt", "name"} or
// {"type": "ref/resource", "uri"} (a resource template's URI template).
type CompleteRef struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CompleteArgument is the argument being completed and its partial value.
type CompleteArgument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompleteContext holds the values of arguments already resolved.
type CompleteContext struct {
	Arguments map[string]string `json:"arguments,omitempty"`
}

// ResourceContents is one item of a resource read: Text or Blob (base64).
type ResourceContents struct {
	URI      string          `json:"uri"`
	MimeType string          `json:"mimeType,omitempty"`
	Text     *string         `json:"text,omitempty"`
	Blob     *string         `json:"blob,omitempty"`
	Meta     json.RawMessage `json:"_meta,omitempty"`
}

// ResourceResult is a resource read's response.
type ResourceResult struct {
	Contents []ResourceContents `json:"contents"`
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// PromptResult is a prompt get's response.
type PromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
}

// Completion is a completion's response.
type Completion struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// MaxCompletionValues is MCP's bound on the values of one completion.
const MaxCompletionValues = 100

// featureResponse is the envelope of every feature response: the result's
// fields, or an error.
type featureResponse struct {
	Error *Error `json:"error"`
}

// guestErrorKinds are the error kinds a guest may report.
var guestErrorKinds = map[Kind]bool{
	KindInvalidArguments: true, KindNotFound: true, KindDenied: true, KindFailed: true, KindCancelled: true,
}

// decodeFeature decodes a guest's feature response into v, or returns the
// error it reports. what names the response in messages.
func decodeFeature(raw []byte, what string, v any) *Error {
	var env featureResponse
	if err := json.Unmarshal(raw, &env); err != nil {
		return Errorf(KindBadOutput, "%s is not valid JSON: %v", what, err)
	}
	if env.Error != nil {
		if !guestErrorKinds[env.Error.Kind] {
			return Errorf(KindBadOutput, "%s reported error kind %q, which a module may not report", what, env.Error.Kind)
		}
		return &Error{Kind: env.Error.Kind, Message: env.Error.Message}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return Errorf(KindBadOutput, "%s: %v", what, err)
	}
	return nil
}

// ParseResourceResult reads and judges a guest's warden_read_resource
// response for uri: at least one item, each with a URI, text or a blob
// (base64) but not both, a well-formed mimeType. An item without a URI gets
// uri. A guest error comes back as its *Error; anything malformed is
// bad_output.
func ParseResourceResult(raw []byte, uri string) (*ResourceResult, *Error) {
	var r ResourceResult
	if err := decodeFeature(raw, "resource "+clip(uri)+" response", &r); err != nil {
		return nil, err
	}
	if len(r.Contents) == 0 {
		return nil, Errorf(KindBadOutput, "resource %s response has no contents", clip(uri))
	}
	for i := range r.Contents {
		c := &r.Contents[i]
		if c.URI == "" {
			c.URI = uri
		}
		at := fmt.Sprintf("resource %s contents[%d]", clip(uri), i)
		if err := checkURI("uri", c.URI); err != nil {
			return nil, Errorf(KindBadOutput, "%s: %v", at, err)
		}
		switch {
		case c.Text != nil && c.Blob != nil:
			return nil, Errorf(KindBadOutput, "%s has both text and blob; it must have one", at)
		case c.Text == nil && c.Blob == nil:
			return nil, Errorf(KindBadOutput, "%s has neither text nor blob", at)
		case c.Blob != nil:
			if _, err := DecodeBase64(*c.Blob); err != nil {
				return nil, Errorf(KindBadOutput, "%s blob is not base64: %v", at, err)
			}
		}
		if c.MimeType != "" {
			if err := validMediaType(c.MimeType); err != nil {
				return nil, Errorf(KindBadOutput, "%s mimeType: %v", at, err)
			}
		}
	}
	return &r, nil
}

// ParsePromptResult reads and judges a guest's warden_get_prompt response:
// messages whose role is user or assistant and whose content is a valid
// content block (Content.Validate).
func ParsePromptResult(raw []byte, name string) (*PromptResult, *Error) {
	var r PromptResult
	if err := decodeFeature(raw, "prompt "+clip(name)+" response", &r); err != nil {
		return nil, err
	}
	if r.Messages == nil {
		return nil, Errorf(KindBadOutput, "prompt %s response has no messages", clip(name))
	}
	if err := checkText("description", r.Description, MaxFeatureTextBytes, true); err != nil {
		return nil, Errorf(KindBadOutput, "prompt %s response %v", clip(name), err)
	}
	for i := range r.Messages {
		m := &r.Messages[i]
		if m.Role != "user" && m.Role != "assistant" {
			return nil, Errorf(KindBadOutput, "prompt %s messages[%d]: role %q is not \"user\" or \"assistant\"", clip(name), i, m.Role)
		}
		if err := m.Content.Validate(); err != nil {
			msg := err.Error()
			var te *Error
			if errors.As(err, &te) {
				msg = te.Message
			}
			return nil, Errorf(KindBadOutput, "prompt %s messages[%d]: %s", clip(name), i, msg)
		}
	}
	return &r, nil
}

// ParseCompletion reads and judges a guest's warden_complete response:
// {"completion": {"values": [...], "total"?, "hasMore"?}}, at most
// MaxCompletionValues values.
func ParseCompletion(raw []byte) (*Completion, *Error) {
	var r struct {
		Completion *Completion `json:"completion"`
	}
	if err := decodeFeature(raw, "completion response", &r); err != nil {
		return nil, err
	}
	c := r.Completion
	if c == nil {
		return nil, Errorf(KindBadOutput, "completion response has no completion")
	}
	if len(c.Values) > MaxCompletionValues {
		return nil, Errorf(KindBadOutput, "completion response has %d values, over MCP's limit of %d", len(c.Values), MaxCompletionValues)
	}
	if c.Total < 0 {
		return nil, Errorf(KindBadOutput, "completion response total %d is negative", c.Total)
	}
	if c.Values == nil {
		c.Values = []string{}
	}
	for i, v := range c.Values {
		if !utf8.ValidString(v) {
			return nil, Errorf(KindBadOutput, "completion response values[%d] is not valid UTF-8", i)
		}
	}
	return c, nil
}

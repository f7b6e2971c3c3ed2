package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Descriptor is everything a tool declares about itself. A module returns one
// per tool from its describe export (docs/abi.md); the fields follow the MCP
// Tool object, plus the fields of the seed Tool traits that MCP lacks.
type Descriptor struct {
	// Name is the tool's identifier over MCP: 1–128 of A-Z a-z 0-9 _ - . and
	// unique across every loaded module.
	Name string `json:"name"`
	// Title is the human-readable label shown in user interfaces.
	Title string `json:"title,omitempty"`
	// Description tells a model what the tool does. It must not be empty.
	Description string `json:"description"`
	// InputSchema is a JSON Schema (2020-12) whose root has "type": "object".
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema, when set, describes Result.StructuredContent, which is
	// then required and validated against it.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	Version      string          `json:"version,omitempty"`
	Tags         []string        `json:"tags,omitempty"`
	Category     string          `json:"category,omitempty"`
	Icons        []Icon          `json:"icons,omitempty"`
	// TimeoutMillis is the tool's own preferred deadline; config may lower it.
	TimeoutMillis int64 `json:"timeoutMs,omitempty"`
	// Paginates says the tool accepts a cursor and may return NextCursor.
	Paginates bool `json:"paginates,omitempty"`
	// Capabilities lists what the tool asks for. Requested is not granted:
	// grants come from config, and these are shown to whoever installs it.
	Capabilities Capabilities `json:"capabilities,omitzero"`
	// Execution says whether the tool may, must or must not run as an MCP
	// task; nil means TaskForbidden, MCP's default. Config may force or
	// forbid it per tool (docs/tasks.md).
	Execution *Execution `json:"execution,omitempty"`
}

// Execution is the MCP Tool object's execution field.
type Execution struct {
	// TaskSupport is TaskForbidden, TaskOptional or TaskRequired.
	TaskSupport string `json:"taskSupport,omitempty"`
}

// The values of Execution.TaskSupport.
const (
	TaskForbidden = "forbidden"
	TaskOptional  = "optional"
	TaskRequired  = "required"
)

// ValidTaskSupport reports whether s is a value of Execution.TaskSupport:
// TaskForbidden, TaskOptional or TaskRequired. The empty string is not one
// (an absent field means TaskForbidden: see Descriptor.TaskSupport).
func ValidTaskSupport(s string) bool {
	return s == TaskForbidden || s == TaskOptional || s == TaskRequired
}

// TaskSupport returns d's Execution.TaskSupport, TaskForbidden when unset.
func (d *Descriptor) TaskSupport() string {
	if d.Execution == nil || d.Execution.TaskSupport == "" {
		return TaskForbidden
	}
	return d.Execution.TaskSupport
}

// Annotations are the MCP behaviour hints. They are hints, not guarantees.
type Annotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// Icon is an MCP icon: a URL or data: URI with its type and sizes.
type Icon struct {
	Src      string   `json:"src"`
	MimeType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

// Capabilities describes access to host capabilities. The same shape serves
// for what a tool requests (Descriptor.Capabilities) and for what config
// grants it.
type Capabilities struct {
	FS FSAccess `json:"fs,omitzero"`
	// Memory is "", "read" or "read-write" access to the project memory store.
	Memory MemoryAccess `json:"memory,omitempty"`
	// MemoryTopics, when non-empty, limits memory access to these topic prefixes.
	MemoryTopics []string `json:"memoryTopics,omitempty"`
	// LSP lists languages whose language servers the tool may query.
	LSP []string `json:"lsp,omitempty"`
	// Net lists hosts (exact or glob, optionally scheme://host) the tool may reach.
	Net []string `json:"net,omitempty"`
	// Env lists environment keys the tool may read.
	Env []string `json:"env,omitempty"`
	// Client lists what the tool may ask of the MCP client, and through it
	// of the person: "elicit", "sample", "roots" (see ClientFeatures).
	Client []string `json:"client,omitempty"`
}

// FSAccess lists paths, relative to a root, for reading and for writing.
type FSAccess struct {
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
}

// MemoryAccess is the level of access to the project memory store.
type MemoryAccess string

const (
	MemoryNone      MemoryAccess = ""
	MemoryRead      MemoryAccess = "read"
	MemoryReadWrite MemoryAccess = "read-write"
)

// IsZero reports whether c requests or grants nothing.
func (c Capabilities) IsZero() bool {
	return len(c.FS.Read) == 0 && len(c.FS.Write) == 0 && c.Memory == MemoryNone &&
		len(c.MemoryTopics) == 0 && len(c.LSP) == 0 && len(c.Net) == 0 && len(c.Env) == 0 &&
		len(c.Client) == 0
}

// Summary renders c compactly for tables, e.g. "fs.read=src,docs lsp=go".
func (c Capabilities) Summary() string {
	var parts []string
	add := func(key string, values []string) {
		if len(values) > 0 {
			parts = append(parts, key+"="+strings.Join(values, ","))
		}
	}
	add("fs.read", c.FS.Read)
	add("fs.write", c.FS.Write)
	if c.Memory != MemoryNone {
		parts = append(parts, "memory="+string(c.Memory))
	}
	add("memory.topics", c.MemoryTopics)
	add("lsp", c.LSP)
	add("net", c.Net)
	add("env", c.Env)
	add("client", c.Client)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// Timeout returns the tool's preferred deadline, or 0 when it has none.
func (d *Descriptor) Timeout() time.Duration {
	return time.Duration(d.TimeoutMillis) * time.Millisecond
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// NameRule says in words what ValidName accepts, for error messages.
const NameRule = "1-128 characters of A-Z a-z 0-9 _ - ., starting with a letter or digit"

// ValidName reports whether name is a valid tool name: 1-128 characters of
// A-Z a-z 0-9 _ - . starting with a letter or digit. That excludes "." and
// "..", and names that read as flags or hidden files. Module names (file
// names without .wasm) follow the same rule, since both become config keys.
// Tool names are also unique ignoring case (see warden's internal/catalog.Table).
func ValidName(name string) bool { return namePattern.MatchString(name) }

// Validate checks d's fields. Every problem is reported, each prefixed with
// the field it concerns. It does not compile the schemas: that is the host's
// (internal/schema.CompileDescriptor, which calls Validate first), so that a
// guest, which builds descriptors but never validates against them, does
// not link a JSON Schema validator.
func (d *Descriptor) Validate() error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !ValidName(d.Name) {
		fail("name %q: must be %s", d.Name, NameRule)
	}
	if strings.TrimSpace(d.Description) == "" {
		fail("description: must not be empty")
	}
	if d.TimeoutMillis < 0 {
		fail("timeoutMs: must not be negative, got %d", d.TimeoutMillis)
	}
	switch d.Capabilities.Memory {
	case MemoryNone, MemoryRead, MemoryReadWrite:
	default:
		fail("capabilities.memory %q: must be \"read\" or \"read-write\"", d.Capabilities.Memory)
	}
	if len(d.InputSchema) == 0 {
		fail("inputSchema: missing")
	}
	if d.Execution != nil && d.Execution.TaskSupport != "" && !ValidTaskSupport(d.Execution.TaskSupport) {
		fail("execution.taskSupport %q: must be %q, %q or %q (or absent, which means %q)",
			d.Execution.TaskSupport, TaskForbidden, TaskOptional, TaskRequired, TaskForbidden)
	}
	return errors.Join(errs...)
}

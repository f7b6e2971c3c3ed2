package guest

import (
	"context"

	"github.com/warden-run/warden/tool"
)

// Op is an operation of a module besides tool calls: reading a resource,
// getting a prompt, completing an argument (docs/abi.md, "Resources,
// prompts and completions").
type Op string

const (
	OpReadResource Op = "read_resource"
	OpGetPrompt    Op = "get_prompt"
	OpComplete     Op = "complete"
)

// OpRunner is implemented by engines that serve Ops. An engine without it
// serves none.
type OpRunner interface {
	// Supports reports whether the module has what op needs (its export);
	// an error when it has the export with the wrong signature.
	Supports(op Op) (bool, error)
	// RunOp runs op on in with request, the op's request JSON in the native
	// shape (tool.ResourceRequest, tool.PromptRequest,
	// tool.CompleteRequest), and returns the response in the native shape,
	// like Engine.Run. what names the response in messages.
	RunOp(ctx context.Context, in *Instance, op Op, request []byte, what string) (raw []byte, respErr *tool.Error, err error)
}

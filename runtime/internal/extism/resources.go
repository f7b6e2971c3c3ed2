package extism

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/warden-run/warden/runtime/internal/guest"
	"github.com/warden-run/warden/tool"
)

// Resources, resource templates, prompts and completions of hyper-mcp v2
// plugins. A plugin lists them with the optional exports list_resources,
// list_resource_templates and list_prompts (input {"context"}; output an MCP
// ListResourcesResult, ListResourceTemplatesResult, ListPromptsResult),
// read once at load into the descriptor document beside its tools, where
// the runtime validates them as a native module's; it serves them with
// read_resource, get_prompt and complete (input {"request": params,
// "context"}; output the MCP result), which run as call_tool does.

// featureLists are the v2 list exports and the descriptor key each fills.
var featureLists = []struct{ export, key, field string }{
	{"list_resources", "resources", "resources"},
	{"list_resource_templates", "resourceTemplates", "resourceTemplates"},
	{"list_prompts", "prompts", "prompts"},
}

// opExports are the v2 exports that serve the ops.
var opExports = map[guest.Op]string{
	guest.OpReadResource: "read_resource",
	guest.OpGetPrompt:    "get_prompt",
	guest.OpComplete:     "complete",
}

// listFeatures adds to the tool list doc what the plugin's list exports
// return. A v1 plugin has none. A list's nextCursor is ignored, as
// list_tools' is: hyper-mcp asks for one page.
func (x *plugin) listFeatures(ctx context.Context, in *guest.Instance, doc []byte) ([]byte, error) {
	if x.shape != extismV2 {
		return doc, nil
	}
	exports := x.main.ExportedFunctions()
	var merged map[string]json.RawMessage
	for _, l := range featureLists {
		if _, ok := exports[l.export]; !ok {
			continue
		}
		out, err := x.loadCall(ctx, in, l.export, []byte(`{"context":{"id":"warden-load","_meta":{}}}`))
		if err != nil {
			return nil, err
		}
		list, err := ParseFeatureList(out, l.field)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.export, err)
		}
		if merged == nil {
			if err := json.Unmarshal(doc, &merged); err != nil || merged == nil {
				return nil, fmt.Errorf("tool list is not a JSON object: %v", err)
			}
		}
		merged[l.key] = list
	}
	if merged == nil {
		return doc, nil
	}
	return json.Marshal(merged)
}

// ParseFeatureList reads the list under field of an MCP list result (a
// plugin's output); absent or null is an empty list.
func ParseFeatureList(out []byte, field string) (json.RawMessage, error) {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("output is not a JSON object: %v", err)
	}
	list := r[field]
	if len(list) == 0 || bytes.Equal(list, []byte("null")) {
		return json.RawMessage("[]"), nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(list, &items); err != nil {
		return nil, fmt.Errorf("%s is not an array: %v", field, err)
	}
	return list, nil
}

// Supports reports whether the plugin exports op's function (v2 only).
func (x *plugin) Supports(op guest.Op) (bool, error) {
	if x.shape != extismV2 {
		return false, nil
	}
	def, ok := x.main.ExportedFunctions()[opExports[op]]
	if !ok {
		return false, nil
	}
	if len(def.ParamTypes()) != 0 || len(def.ResultTypes()) != 1 {
		return false, fmt.Errorf("export %s has signature %s, want () -> (i32)", opExports[op],
			guest.FuncSig{Params: def.ParamTypes(), Results: def.ResultTypes()})
	}
	return true, nil
}

// RunOp runs op's export with the request in the plugin's shape; the MCP
// result it returns is the native response already.
func (x *plugin) RunOp(ctx context.Context, in *guest.Instance, op guest.Op, request []byte, what string) ([]byte, *tool.Error, error) {
	params, callID, terr := OpInput(op, request)
	if terr != nil {
		return nil, terr, nil
	}
	if callID == "" {
		callID = "warden"
	}
	input, _ := json.Marshal(map[string]any{"request": params, "context": map[string]any{"id": callID, "_meta": map[string]any{}}})
	export := opExports[op]
	ext := own(in)
	if f := ext.files; f != nil {
		defer f.endCall()
	}
	rc, out, err := ext.plugin.CallWithContext(ctx, export, input)
	state, _ := guest.StateOf(ctx)
	switch {
	case err != nil && isPluginError(in, err):
		return pluginFailure(state, what, err.Error()), nil, nil
	case err != nil:
		return nil, nil, err
	case rc != 0:
		return pluginFailure(state, what, fmt.Sprintf("%s returned %d", export, rc)), nil, nil
	case len(out) > x.spec.Limits.MaxOutput:
		return nil, tool.Errorf(tool.KindBadOutput, "%s is %d bytes, over the output limit of %d", what, len(out), x.spec.Limits.MaxOutput), nil
	}
	return out, nil, nil
}

// OpInput converts an op's native request into the MCP params a v2
// plugin reads, and returns the call's id. A completion's ref type loses
// its "ref/" prefix, as hyper-mcp sends it.
func OpInput(op guest.Op, request []byte) (any, string, *tool.Error) {
	bad := func(err error) (any, string, *tool.Error) {
		return nil, "", tool.Errorf(tool.KindInternal, "%s request: %v", op, err)
	}
	switch op {
	case guest.OpReadResource:
		var r tool.ResourceRequest
		if err := json.Unmarshal(request, &r); err != nil {
			return bad(err)
		}
		return map[string]any{"uri": r.URI}, r.CallID, nil
	case guest.OpGetPrompt:
		var r tool.PromptRequest
		if err := json.Unmarshal(request, &r); err != nil {
			return bad(err)
		}
		params := map[string]any{"name": r.Name}
		if len(r.Arguments) > 0 {
			params["arguments"] = r.Arguments
		}
		return params, r.CallID, nil
	case guest.OpComplete:
		var r tool.CompleteRequest
		if err := json.Unmarshal(request, &r); err != nil {
			return bad(err)
		}
		ref := map[string]any{"type": strings.TrimPrefix(r.Ref.Type, "ref/")}
		if r.Ref.Name != "" {
			ref["name"] = r.Ref.Name
		}
		if r.Ref.URI != "" {
			ref["uri"] = r.Ref.URI
		}
		params := map[string]any{"ref": ref, "argument": r.Argument}
		if r.Context != nil {
			params["context"] = r.Context
		}
		return params, r.CallID, nil
	}
	return bad(fmt.Errorf("unknown op"))
}

package scaffold

import (
	"encoding/json"
	"fmt"
	"strings"
)

// MCPClients are the clients MCPConfig writes for.
var MCPClients = []string{"claude", "vscode", "cursor"}

// MCPConfig is the JSON that registers warden with an MCP client as server
// name, running the binary at exe (absolute) on the config at config
// (absolute): Claude Desktop and Claude Code, and Cursor, read
// {"mcpServers": {...}}; VS Code's .vscode/mcp.json reads {"servers": {...}}
// with a "type".
func MCPConfig(client, name, exe, config string) ([]byte, error) {
	type server struct {
		Type    string   `json:"type,omitempty"`
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	s := server{Command: exe, Args: []string{"serve", "--config", config}}
	var doc any
	switch client {
	case "claude", "cursor":
		doc = struct {
			Servers map[string]server `json:"mcpServers"`
		}{map[string]server{name: s}}
	case "vscode":
		s.Type = "stdio"
		doc = struct {
			Servers map[string]server `json:"servers"`
		}{map[string]server{name: s}}
	default:
		return nil, fmt.Errorf("unknown client %q: want one of %s", client, strings.Join(MCPClients, ", "))
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

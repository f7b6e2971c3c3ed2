package scaffold

import "testing"

func TestMCPConfig(t *testing.T) {
	cases := map[string]string{
		"claude": `{
  "mcpServers": {
    "warden": {
      "command": "/opt/bin/warden",
      "args": [
        "serve",
        "--config",
        "/home/a/p/config.yaml"
      ]
    }
  }
}
`,
		"cursor": `{
  "mcpServers": {
    "warden": {
      "command": "/opt/bin/warden",
      "args": [
        "serve",
        "--config",
        "/home/a/p/config.yaml"
      ]
    }
  }
}
`,
		"vscode": `{
  "servers": {
    "warden": {
      "type": "stdio",
      "command": "/opt/bin/warden",
      "args": [
        "serve",
        "--config",
        "/home/a/p/config.yaml"
      ]
    }
  }
}
`,
	}
	for client, want := range cases {
		got, err := MCPConfig(client, "warden", "/opt/bin/warden", "/home/a/p/config.yaml")
		if err != nil || string(got) != want {
			t.Errorf("%s: got %s (%v)\nwant %s", client, got, err, want)
		}
	}
	if _, err := MCPConfig("emacs", "w", "/w", "/c"); err == nil || err.Error() != `unknown client "emacs": want one of claude, vscode, cursor` {
		t.Errorf("emacs: %v", err)
	}
}

package lsp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestConfigDefaults(t *testing.T) {
	c, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Language{"go": {
		Command: "gopls", Extensions: []string{".go"}, LanguageID: "go",
		InitializationOptions: json.RawMessage(`{"symbolScope":"workspace"}`),
	}}
	if !reflect.DeepEqual(c.Languages, want) {
		t.Fatalf("languages: %+v", c.Languages)
	}
	if c.IdleTimeout != 10*time.Minute || c.RequestTimeout != 30*time.Second || c.MaxFailures != 5 ||
		c.FailureWindow != time.Minute || c.BreakerCooldown != time.Minute || c.ShutdownGrace != 2*time.Second {
		t.Fatalf("durations: %+v", c)
	}
}

func TestConfigLanguages(t *testing.T) {
	// Overriding go's command keeps its extensions and options; another
	// language is added beside it.
	c, err := Config{Languages: map[string]Language{
		"go":     {Command: "/opt/gopls", Args: []string{"-remote=auto"}},
		"python": {Command: "pyright-langserver", Args: []string{"--stdio"}, Extensions: []string{".py", ".pyi"}},
	}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if g := c.Languages["go"]; g.Command != "/opt/gopls" || !reflect.DeepEqual(g.Args, []string{"-remote=auto"}) ||
		!reflect.DeepEqual(g.Extensions, []string{".go"}) || len(g.InitializationOptions) == 0 {
		t.Fatalf("go: %+v", g)
	}
	for path, want := range map[string]string{"a/b.go": "go", "x.pyi": "python", "README.md": ""} {
		if got, _ := c.languageFor(path); got != want {
			t.Errorf("language of %s: %q, want %q", path, got, want)
		}
	}
	// A configured language claiming .go replaces the default go.
	c, err = Config{Languages: map[string]Language{"golang": {Command: "gopls", Extensions: []string{".go"}}}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Languages["go"]; ok || len(c.Languages) != 1 {
		t.Fatalf("languages: %+v", c.Languages)
	}

	for _, tc := range []struct {
		langs map[string]Language
		want  string
	}{
		{map[string]Language{"rust": {Extensions: []string{".rs"}}}, "language rust: command is empty"},
		{map[string]Language{"rust": {Command: "rust-analyzer"}}, "language rust: no file extensions"},
		{map[string]Language{"rust": {Command: "ra", Extensions: []string{"rs"}}}, `extension "rs" must look like ".go"`},
		{map[string]Language{"a": {Command: "x", Extensions: []string{".x"}}, "b": {Command: "y", Extensions: []string{".x"}}}, "extension .x is claimed by both"},
		{map[string]Language{"my lang": {Command: "x", Extensions: []string{".x"}}}, `language name "my lang"`},
		{map[string]Language{"x": {Command: "x", Extensions: []string{".x"}, InitializationOptions: json.RawMessage(`{`)}}, "initializationOptions is not valid JSON"},
	} {
		_, err := Config{Languages: tc.langs}.withDefaults()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.langs, err, tc.want)
		}
	}
}

package lsp

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/limits"
)

func TestConfigDefaults(t *testing.T) {
	c, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := Language{
		Command: "gopls", Extensions: []string{".go"}, LanguageID: "go",
		InitializationOptions: json.RawMessage(`{"symbolScope":"workspace"}`),
		Install:               "go install golang.org/x/tools/gopls@latest",
	}
	if !reflect.DeepEqual(c.Languages["go"], want) {
		t.Fatalf("go: %+v", c.Languages["go"])
	}
	// config accepts grants of exactly these without an lsp.languages entry.
	if names := slices.Sorted(maps.Keys(c.Languages)); !reflect.DeepEqual(names, limits.DefaultLSPLanguages) {
		t.Fatalf("default languages %v, limits.DefaultLSPLanguages %v", names, limits.DefaultLSPLanguages)
	}
	for path, want := range map[string]string{
		"a.py": "python", "a.pyi": "python", "a.ts": "typescript", "a.tsx": "typescript", "a.mts": "typescript", "a.cts": "typescript",
		"a.js": "javascript", "a.jsx": "javascript", "a.mjs": "javascript", "a.cjs": "javascript",
		"a.c": "c", "a.h": "c", "a.cc": "cpp", "a.cpp": "cpp", "a.cxx": "cpp", "a.hpp": "cpp", "a.hh": "cpp", "a.rs": "rust",
	} {
		if got, _ := c.languageFor(path); got != want {
			t.Errorf("language of %s: %q, want %q", path, got, want)
		}
	}
	for _, l := range c.Languages {
		if l.Install == "" {
			t.Errorf("%s: no install command", l.LanguageID)
		}
	}
	// A cpp server takes c's headers (both run clangd), a python one does not.
	if !c.serves("cpp", "x/a.h") || c.serves("python", "x/a.h") || c.serves("typescript", "a.py") {
		t.Fatal("serves: wrong")
	}
	ts := c.Languages["typescript"]
	if ts.languageID("a.tsx") != "typescriptreact" || ts.languageID("a.ts") != "typescript" || c.Languages["javascript"].languageID("b.jsx") != "javascriptreact" {
		t.Fatal("languageID: wrong")
	}
	// A .js file sent to a typescript server, a .h to a cpp one: the
	// languageId of the file's own language.
	if c.languageID("typescript", "a.js") != "javascript" || c.languageID("typescript", "a.tsx") != "typescriptreact" || c.languageID("cpp", "a.h") != "c" {
		t.Fatal("Config.languageID: wrong")
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
	if _, ok := c.Languages["go"]; ok || len(c.Languages) != len(limits.DefaultLSPLanguages) {
		t.Fatalf("languages: %+v", c.Languages)
	}

	for _, tc := range []struct {
		langs map[string]Language
		want  string
	}{
		{map[string]Language{"cobol": {Extensions: []string{".cob"}}}, "language cobol: command is empty"},
		{map[string]Language{"cobol": {Command: "cobol-ls"}}, "language cobol: no file extensions"},
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

// TestReplacedServerDoesNotWaitForProject: a default language whose command
// config replaces (python served by pylsp) keeps nothing of how the
// default's server loads: a replacement that publishes no diagnostics
// would make every first query wait for its deadline. One that only
// changes the default's arguments keeps it.
func TestReplacedServerDoesNotWaitForProject(t *testing.T) {
	c, err := Config{Languages: map[string]Language{
		"python":     {Command: "pylsp"},
		"typescript": {Args: []string{"--stdio", "--log-level", "4"}},
	}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Languages["python"].WaitForProject {
		t.Error("pylsp inherited pyright's wait for the project")
	}
	if !c.Languages["typescript"].WaitForProject {
		t.Error("typescript-language-server with other arguments lost its wait for the project")
	}
}

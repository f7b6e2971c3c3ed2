package lsp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pythonStdlib returns the directory of a Python standard library shipped
// on this machine, or "".
func pythonStdlib() string {
	if out, err := exec.Command("python3", "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); dir != "" {
			return dir
		}
	}
	for _, dir := range []string{"/usr/lib/python3.11", "/root/.pyenv/versions/3.11.7/lib/python3.11"} {
		if _, err := os.Stat(filepath.Join(dir, "json", "decoder.py")); err == nil {
			return dir
		}
	}
	return ""
}

// TestPythonAgreement: warden's five queries against pyright asked
// directly, on a slice of the standard library (json and textwrap).
func TestPythonAgreement(t *testing.T) {
	requireServer(t, "python")
	stdlib := pythonStdlib()
	if stdlib == "" {
		t.Fatal("no Python standard library found (python3 -c 'import sysconfig'); the agreement test copies json/ and textwrap.py from it")
	}
	root := t.TempDir()
	copyDir(t, filepath.Join(stdlib, "json"), filepath.Join(root, "json"))
	os.RemoveAll(filepath.Join(root, "json", "__pycache__"))
	b, err := os.ReadFile(filepath.Join(stdlib, "textwrap.py"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "textwrap.py", string(b))
	runAgreement(t, agreementSpec{
		lang:    "python",
		root:    root,
		files:   []string{"json/decoder.py", "json/encoder.py", "json/__init__.py", "textwrap.py"},
		every:   37,
		maxPos:  8,
		queries: []string{"JSONDecoder", "py_encode_basestring", "TextWrapper", "dedent"},
		keywords: strings.Fields("def class return if elif else for while in not and or is None True False import from as " +
			"try except finally raise with pass break continue lambda self yield global nonlocal assert del"),
	})
}

// TestTypeScriptAgreement: warden's five queries against
// typescript-language-server asked directly, on the TypeScript sources
// the zod package ships (src/v4/core), installed beside the server
// (.ci/run installs both).
func TestTypeScriptAgreement(t *testing.T) {
	server := requireServer(t, "typescript")
	real, err := filepath.EvalSymlinks(server)
	if err != nil {
		t.Fatal(err)
	}
	// .../node_modules/typescript-language-server/lib/cli.mjs
	modules := filepath.Dir(filepath.Dir(filepath.Dir(real)))
	src := filepath.Join(modules, "zod", "src", "v4", "core")
	if _, err := os.Stat(filepath.Join(src, "core.ts")); err != nil {
		t.Skipf("no zod sources beside typescript-language-server (%v): npm install zod@4.6.7 in %s, as .ci/run does", err, filepath.Dir(modules))
	}
	root := t.TempDir()
	for _, f := range []string{"core.ts", "util.ts", "errors.ts", "parse.ts", "versions.ts", "json-schema.ts", "standard-schema.ts", "registries.ts"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, root, "core/"+f, string(b))
	}
	writeFile(t, root, "tsconfig.json", `{"compilerOptions": {"strict": true, "target": "es2022", "module": "esnext", "moduleResolution": "bundler", "noEmit": true}, "include": ["core"]}`)
	runAgreement(t, agreementSpec{
		lang:    "typescript",
		root:    root,
		files:   []string{"core/core.ts", "core/parse.ts", "core/errors.ts", "core/util.ts"},
		every:   41,
		maxPos:  8,
		queries: []string{"safeParse", "$ZodError", "flattenError", "$constructor"},
		keywords: strings.Fields("import export from as const let var function return if else for while of in new this type interface " +
			"extends implements class true false null undefined typeof keyof readonly any unknown never string number boolean void declare namespace"),
	})
}

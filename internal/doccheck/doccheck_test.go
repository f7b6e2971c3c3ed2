package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// spans are the places in Markdown where a document names a file: inline code
// and the targets of links.
var spans = regexp.MustCompile("`([^`\n]+)`|\\]\\(([^)\\s]+)\\)")

// rootFiles are the files at the repository root a document may name bare.
var rootFiles = map[string]bool{
	"README.md": true, "RATIONALE.md": true, "Makefile": true, "config.yaml": true,
	"go.mod": true, "go.sum": true,
}

// generated are paths that the build or CI creates; documents may name them
// though a fresh clone does not have them.
var generated = map[string]bool{".ci/cache": true}

// TestDocumentedPathsExist reads every Markdown file of the repository and
// checks each span that names a path in the repository: a span whose first
// element is a top-level file or directory of the repository, or a file next
// to the document. Globs, placeholders and URLs are not paths and are skipped.
func TestDocumentedPathsExist(t *testing.T) {
	root := repoRoot(t)
	top := topLevel(t, root)
	docs := markdownFiles(t, root)
	if len(docs) < 3 {
		t.Fatalf("found only %d Markdown files under %s; the walk is broken", len(docs), root)
	}
	checked := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range spans.FindAllStringSubmatch(line, -1) {
				span := m[1] + m[2]
				path, ok := candidate(span, top)
				if !ok {
					continue
				}
				checked++
				if generated[path] {
					continue
				}
				if exists(filepath.Join(root, path)) || exists(filepath.Join(filepath.Dir(doc), path)) {
					continue
				}
				t.Errorf("%s:%d names %q, which does not exist", rel, i+1, span)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d paths; the span pattern is broken", checked)
	}
}

// candidate returns the path a span names, if it names one.
func candidate(span string, top map[string]bool) (string, bool) {
	span = strings.TrimSpace(span)
	if i := strings.IndexAny(span, "#:"); i >= 0 && !strings.HasPrefix(span, "./") {
		// A link anchor (docs/abi.md#exports) or a position (file.go:12).
		span = span[:i]
	}
	span = strings.TrimPrefix(span, "./")
	span = strings.TrimSuffix(span, "/")
	if span == "" || strings.ContainsAny(span, " *?<>{}[]$~=,'\"|()") || strings.Contains(span, "...") ||
		strings.Contains(span, "…") {
		return "", false
	}
	first, _, _ := strings.Cut(span, "/")
	if !strings.Contains(span, "/") {
		return span, rootFiles[span]
	}
	return span, top[first]
}

func topLevel(t *testing.T, root string) map[string]bool {
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	top := make(map[string]bool)
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") || e.Name() == ".ci" {
			top[e.Name()] = true
		}
	}
	// bin/ is built by make, not kept in the repository.
	delete(top, "bin")
	return top
}

func markdownFiles(t *testing.T, root string) []string {
	var docs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "cache", "node_modules", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			docs = append(docs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func repoRoot(t *testing.T) string {
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(dir, "go.mod")) {
		t.Fatalf("%s is not the repository root", dir)
	}
	return dir
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// words splits a file that is not Markdown into the words that may be
// paths: a path ends at a space, a quote, a bracket, a comma, an equals
// sign or a colon (`-v $PWD/deploy/x:/etc/warden:ro`).
var words = regexp.MustCompile(`[^\s:,"'()\[\]{}=]+`)

// TestDeployFilesNamePathsThatExist: the Dockerfile and the files of
// deploy/ (the run example in the Dockerfile's comment, the paths the
// Kubernetes example's comments give) name only paths of the repository
// that exist, as the documents must. A path given from the working
// directory ($PWD/deploy/x, ./cmd/warden) is a path of the repository.
func TestDeployFilesNamePathsThatExist(t *testing.T) {
	root := repoRoot(t)
	top := topLevel(t, root)
	files := []string{filepath.Join(root, "Dockerfile")}
	err := filepath.WalkDir(filepath.Join(root, "deploy"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		for i, line := range strings.Split(string(data), "\n") {
			for _, word := range words.FindAllString(line, -1) {
				// A sentence's full stop is not part of the path it ends with.
				word = strings.TrimRight(word, ".;")
				word = strings.TrimPrefix(strings.TrimPrefix(word, "${PWD}/"), "$PWD/")
				path, ok := candidate(word, top)
				if !ok {
					continue
				}
				checked++
				if exists(filepath.Join(root, path)) || exists(filepath.Join(filepath.Dir(file), path)) {
					continue
				}
				t.Errorf("%s:%d names %q, which does not exist", rel, i+1, word)
			}
		}
	}
	if checked < 3 {
		t.Fatalf("checked only %d paths; the word pattern is broken", checked)
	}
}

package console

import (
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// diffContext is the unchanged lines shown around a change.
const diffContext = 3

// UnifiedDiff is the line diff of a file's text before and after an edit,
// in the unified format without line numbers (a person reads it; no tool
// applies it): "--- name", "+++ name", then each change with up to
// diffContext unchanged lines around it, "@@" where lines are skipped.
// It is "" when nothing changed.
func UnifiedDiff(name, before, after string) string {
	if before == after {
		return ""
	}
	dmp := diffmatchpatch.New()
	a, b, lines := dmp.DiffLinesToChars(before, after)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(a, b, false), lines)
	var all []string // each line with its op: ' ', '+' or '-'
	for _, d := range diffs {
		op := " "
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			op = "+"
		case diffmatchpatch.DiffDelete:
			op = "-"
		}
		for _, l := range strings.Split(strings.TrimSuffix(d.Text, "\n"), "\n") {
			all = append(all, op+l)
		}
	}
	show := make([]bool, len(all))
	for i, l := range all {
		if l[0] != ' ' {
			for j := max(i-diffContext, 0); j <= min(i+diffContext, len(all)-1); j++ {
				show[j] = true
			}
		}
	}
	var out strings.Builder
	out.WriteString("--- " + name + "\n+++ " + name + "\n")
	prev := -2
	for i, l := range all {
		if !show[i] {
			continue
		}
		if i != prev+1 {
			out.WriteString("@@\n")
		}
		out.WriteString(l + "\n")
		prev = i
	}
	return out.String()
}

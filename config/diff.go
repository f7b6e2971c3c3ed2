package config

import (
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// diffContext is how many unchanged lines a Diff shows around a change.
const diffContext = 2

// Diff renders the change from before to after, the texts of the file
// called name, as a unified diff (---/+++ headers, @@ hunks, diffContext
// lines of context): exactly the lines an edit adds and removes, as the
// person who approves it should read them. "" when they are equal.
func Diff(name string, before, after []byte) string {
	if string(before) == string(after) {
		return ""
	}
	type line struct {
		op   byte // ' ', '-' or '+'
		text string
		a, b int // 1-based line numbers in before and after at this line
	}
	dmp := diffmatchpatch.New()
	ca, cb, lines := dmp.DiffLinesToChars(string(before), string(after))
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lines)
	var all []line
	na, nb := 1, 1
	for _, d := range diffs {
		text := strings.TrimSuffix(d.Text, "\n")
		for _, l := range strings.Split(text, "\n") {
			switch d.Type {
			case diffmatchpatch.DiffEqual:
				all = append(all, line{' ', l, na, nb})
				na, nb = na+1, nb+1
			case diffmatchpatch.DiffDelete:
				all = append(all, line{'-', l, na, nb})
				na++
			case diffmatchpatch.DiffInsert:
				all = append(all, line{'+', l, na, nb})
				nb++
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", name, name)
	for i := 0; i < len(all); {
		if all[i].op == ' ' {
			i++
			continue
		}
		// A hunk: the changes from i on, joined while no more than
		// 2*diffContext unchanged lines separate them.
		start := max(i-diffContext, 0)
		end := i
		for j := i; j < len(all); j++ {
			if all[j].op != ' ' {
				end = j + 1
			} else if j-end >= 2*diffContext {
				break
			}
		}
		end = min(end+diffContext, len(all))
		ca, cb := 0, 0
		for _, l := range all[start:end] {
			if l.op != '+' {
				ca++
			}
			if l.op != '-' {
				cb++
			}
		}
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", all[start].a, ca, all[start].b, cb)
		for _, l := range all[start:end] {
			b.WriteByte(l.op)
			b.WriteString(l.text)
			b.WriteByte('\n')
		}
		i = end
	}
	return b.String()
}

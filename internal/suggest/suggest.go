// Package suggest finds the name a person probably meant: the did-you-mean
// of a config key (config) and of a tool name (warden grant) come from one
// distance, so that the two never disagree about what counts as a slip.
package suggest

// Distance is the edit distance between a and b: insertions, deletions,
// substitutions and swaps of two neighbouring bytes each count one (the
// optimal string alignment distance). Names and keys are ASCII, so bytes
// are letters. Strings longer than 64 bytes are not compared: their
// distance is the longer length, far beyond any slip.
func Distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b))
	}
	before := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], before[j-2]+1) // two neighbours swapped
			}
		}
		before, prev, cur = prev, cur, before
	}
	return prev[len(b)]
}

// Closest is the index of the candidate nearest to word, if it is at most
// maxEdits away, else -1. Ties go to the earlier candidate, so a sorted
// list gives a stable answer.
func Closest(word string, candidates []string, maxEdits int) int {
	best, bestD := -1, maxEdits+1
	for i, c := range candidates {
		if d := Distance(word, c); d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

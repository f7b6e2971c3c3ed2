// Package descriptorcheck looks for tool poisoning in tool descriptors:
// text a person reviewing a module cannot see (Unicode tag characters,
// zero-width and bidi controls, words mixing scripts), instructions aimed
// at the model rather than at describing the tool ("ignore previous
// instructions", "do not tell the user", "read ~/.ssh/id_rsa"), mentions
// of other modules' tools (shadowing), URLs and e-mail addresses, and
// descriptions far longer than their peers'.
//
// Findings are data: each names the tool, the field (name, title,
// description, or a JSON pointer into a schema), the byte span of the
// field's text that matched and that text, the rule and its kind. What to
// do about them is the caller's policy (Policy): the install review shows
// them, and the catalog refuses or logs them at load.
//
// The rules are heuristics tuned so that ordinary descriptions (every
// bundled tool's, the Extism test plugins', the MCP reference servers')
// trip none of them: a finding asks a person to look, it proves nothing.
package descriptorcheck

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/tool"
)

// Kind groups the rules by what they look for.
type Kind string

const (
	Invisible     Kind = "invisible"      // characters a person does not see
	MixedScript   Kind = "mixed-script"   // a word spelled with letters of two scripts
	Instruction   Kind = "instruction"    // text that instructs the model
	ToolReference Kind = "tool-reference" // another module's tool named
	Link          Kind = "link"           // a URL or an e-mail address
	Length        Kind = "length"         // a description far longer than its peers'
)

// Severity is how strongly a finding suggests poisoning.
type Severity string

const (
	High   Severity = "high"
	Medium Severity = "medium"
	Low    Severity = "low"
)

// Finding is one match of one rule in one field of one tool's descriptor.
type Finding struct {
	Tool string
	// Field is "name", "title", "description", or a JSON pointer into a
	// schema ("inputSchema/properties/path/description"); a schema
	// property's name is checked as ".../properties/NAME#name".
	Field string
	// Start and End are byte offsets into the field's text; Text is
	// exactly that text[Start:End]. Both fall on UTF-8 boundaries.
	Start, End int
	Text       string
	Rule       string
	Kind       Kind
	Severity   Severity
	// Why says what the rule looks for, for a person.
	Why string
}

// String is the finding on one line, its text quoted with Go escapes so
// that an invisible character shows as \U000e0041 and not as nothing.
func (f Finding) String() string {
	text := f.Text
	if len(text) > 120 {
		cut := 120
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "…"
	}
	return fmt.Sprintf("%s %s: %s [%d:%d] %s (%s, %s)", f.Tool, f.Field, f.Rule, f.Start, f.End,
		strconv.QuoteToASCII(text), f.Why, f.Severity)
}

// Limits on description length: a description longer than AbsoluteCap
// bytes is a finding; so is one longer than RelativeFactor times the
// median of its module's other descriptions, when it is also longer than
// RelativeFloor (so that two short descriptions never compare).
const (
	AbsoluteCap    = 4096
	RelativeFactor = 4
	RelativeFloor  = 1024
)

// Check checks the descriptors of one module (tools) against each other
// and against others, the names of the tools other modules serve. The
// findings come in tool, field and offset order.
func Check(tools []tool.Descriptor, others []string) []Finding {
	mine := map[string]bool{}
	for _, d := range tools {
		mine[configkey.Fold(d.Name)] = true
	}
	var foreign []string
	for _, o := range others {
		if o != "" && !mine[configkey.Fold(o)] {
			foreign = append(foreign, o)
		}
	}
	var out []Finding
	for i, d := range tools {
		c := checker{tool: d.Name, others: foreign}
		c.text("name", d.Name, false)
		c.text("title", d.Title, true)
		c.text("description", d.Description, true)
		c.schema("inputSchema", d.InputSchema)
		c.schema("outputSchema", d.OutputSchema)
		c.length(d.Description, peers(tools, i))
		out = append(out, c.found...)
	}
	return out
}

// peers are the lengths of the descriptions of tools other than tools[i].
func peers(tools []tool.Descriptor, i int) []int {
	var n []int
	for j, d := range tools {
		if j != i {
			n = append(n, len(d.Description))
		}
	}
	return n
}

type checker struct {
	tool   string
	others []string
	found  []Finding
}

func (c *checker) add(field, text string, start, end int, r rule) {
	c.found = append(c.found, Finding{Tool: c.tool, Field: field, Start: start, End: end, Text: text[start:end],
		Rule: r.id, Kind: r.kind, Severity: r.severity, Why: r.why})
}

// text runs every rule over one field. prose is false for a name, which
// only the character rules apply to.
func (c *checker) text(field, s string, prose bool) {
	if s == "" {
		return
	}
	from := len(c.found)
	defer func() { // offset order within the field
		sort.SliceStable(c.found[from:], func(i, j int) bool { return c.found[from+i].Start < c.found[from+j].Start })
	}()
	c.invisible(field, s)
	c.mixedScript(field, s)
	if !prose {
		return
	}
	for _, r := range patterns {
		for _, m := range r.re.FindAllStringIndex(s, -1) {
			c.add(field, s, m[0], m[1], r.rule)
		}
	}
	c.toolNames(field, s)
}

// schema walks a JSON Schema: every string value is prose (a description,
// a title, an enum value, a default), every property name is a name.
func (c *checker) schema(field string, raw json.RawMessage) {
	if len(raw) == 0 {
		return
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return // the runtime refuses such a descriptor before it gets here
	}
	c.value(field, v, false)
}

func (c *checker) value(at string, v any, properties bool) {
	switch v := v.(type) {
	case string:
		c.text(at, v, true)
	case []any:
		for i, e := range v {
			c.value(at+"/"+strconv.Itoa(i), e, false)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			p := at + "/" + pointerEscape(k)
			if properties {
				c.text(p+"#name", k, false)
			}
			if ref, ok := v[k].(string); ok && !properties && schemaReference[k] {
				// A meta-schema or reference URI ("$schema":
				// "https://json-schema.org/draft/2020-12/schema") is
				// schema machinery, not text for the model: only the
				// character rules apply.
				c.text(p, ref, false)
				continue
			}
			c.value(p, v[k], !properties && (k == "properties" || k == "patternProperties" || k == "$defs" || k == "definitions"))
		}
	}
}

// schemaReference are the JSON Schema keywords whose string value is a URI
// or an anchor the validator resolves.
var schemaReference = map[string]bool{"$schema": true, "$id": true, "$ref": true, "$dynamicRef": true, "$anchor": true, "$dynamicAnchor": true}

// pointerEscape escapes a JSON pointer token (RFC 6901).
func pointerEscape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func (c *checker) length(desc string, peers []int) {
	n := len(desc)
	if n > AbsoluteCap {
		c.add("description", desc, 0, n, rule{id: "long-description", kind: Length, severity: Low,
			why: fmt.Sprintf("description is %d bytes, over the cap of %d", n, AbsoluteCap)})
		return
	}
	if len(peers) == 0 || n <= RelativeFloor {
		return
	}
	sort.Ints(peers)
	median := peers[len(peers)/2]
	if n > RelativeFactor*max(median, 1) {
		c.add("description", desc, 0, n, rule{id: "long-description", kind: Length, severity: Low,
			why: fmt.Sprintf("description is %d bytes, over %d times the median of its module's other tools (%d)", n, RelativeFactor, median)})
	}
}

type rule struct {
	id       string
	kind     Kind
	severity Severity
	why      string
}

// invisible reports each run of characters a person does not see: the
// Unicode tag block (ASCII smuggled as U+E0000–E007F), bidi controls
// (which reorder what is shown), and other format characters (zero-width
// space, joiners, word joiner, BOM, soft hyphen, …).
func (c *checker) invisible(field, s string) {
	start, cur := -1, ""
	flush := func(end int) {
		if start >= 0 {
			c.add(field, s, start, end, invisibleRules[cur])
			start = -1
		}
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		class := invisibleClass(r)
		if r == utf8.RuneError && size == 1 {
			class = "zero" // invalid UTF-8 shows as nothing useful either
		}
		if class != cur {
			flush(i)
			cur = class
			if class != "" {
				start = i
			}
		}
		i += size
	}
	flush(len(s))
}

var invisibleRules = map[string]rule{
	"tag":  {id: "tag-characters", kind: Invisible, severity: High, why: "Unicode tag characters carry text a person cannot see"},
	"bidi": {id: "bidi-control", kind: Invisible, severity: High, why: "bidi controls make text show in another order than a model reads it"},
	"zero": {id: "invisible-format", kind: Invisible, severity: High, why: "zero-width or other invisible format characters"},
}

func invisibleClass(r rune) string {
	switch {
	case r >= 0xE0000 && r <= 0xE007F:
		return "tag"
	case r == 0x061C, r == 0x200E, r == 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return "bidi"
	case unicode.Is(unicode.Cf, r), r == 0x180E, r == 0x3164, r == 0xFFA0, r == 0x115F, r == 0x1160,
		unicode.Is(unicode.Variation_Selector, r):
		return "zero"
	}
	return ""
}

// confusableScripts are the scripts whose letters pass for Latin ones
// (Cyrillic а, Greek ο, …): a word mixing one of them with Latin letters
// is a homoglyph spelling. A word wholly in one script is fine, so
// descriptions in Russian or Greek are not findings.
var confusableScripts = []*unicode.RangeTable{unicode.Cyrillic, unicode.Greek, unicode.Armenian, unicode.Cherokee}

func (c *checker) mixedScript(field, s string) {
	wordStart := -1
	check := func(end int) {
		if wordStart < 0 {
			return
		}
		w := s[wordStart:end]
		latin, other := false, false
		for _, r := range w {
			switch {
			case unicode.Is(unicode.Latin, r):
				latin = true
			case unicode.In(r, confusableScripts...):
				other = true
			}
		}
		if latin && other {
			c.add(field, s, wordStart, end, rule{id: "mixed-script", kind: MixedScript, severity: Medium,
				why: "a word mixing Latin letters with look-alike letters of another script"})
		}
		wordStart = -1
	}
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || unicode.Is(unicode.Mn, r) {
			if wordStart < 0 {
				wordStart = i
			}
			continue
		}
		check(i)
	}
	check(len(s))
}

// toolNames reports a mention of another module's tool. A name with a
// separator or digit in it (send_email, git.status) counts wherever it
// stands as a word; a plain word (fetch, echo) only where it is plainly a
// tool's name: quoted, in backticks, or beside the word "tool".
func (c *checker) toolNames(field, s string) {
	lower := strings.ToLower(s)
	for _, name := range c.others {
		n := strings.ToLower(name)
		plain := !strings.ContainsAny(n, "_-.0123456789")
		for off := 0; ; {
			i := strings.Index(lower[off:], n)
			if i < 0 {
				break
			}
			i += off
			j := i + len(n)
			off = j
			if isNameByte(lower, i-1) || isNameByte(lower, j) {
				continue
			}
			if plain && !namedAsTool(lower, i, j) {
				continue
			}
			c.add(field, s, i, j, rule{id: "other-tool", kind: ToolReference, severity: Medium,
				why: "names a tool another module serves (shadowing: steering the model away from or towards it)"})
		}
	}
}

func isNameByte(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	b := s[i]
	return b == '_' || b == '-' || b == '.' && i+1 < len(s) && s[i+1] != ' ' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b >= 0x80
}

func namedAsTool(s string, i, j int) bool {
	if i > 0 && j < len(s) && strings.ContainsRune("`'\"", rune(s[i-1])) && s[j] == s[i-1] {
		return true
	}
	return strings.HasPrefix(s[j:], " tool") || strings.HasSuffix(s[:i], "tool ")
}

type pattern struct {
	rule
	re *regexp.Regexp
}

func p(id string, kind Kind, sev Severity, why, re string) pattern {
	return pattern{rule{id: id, kind: kind, severity: sev, why: why}, regexp.MustCompile(re)}
}

// patterns are the instruction and link rules. Each is narrow on purpose:
// "tell the user" is how an honest description says what to report (the
// MCP fetch server's does), "do not tell the user" is not.
var patterns = []pattern{
	p("hidden-tag", Instruction, High, "a markup tag of the kind used to hide orders for the model",
		`(?i)<\s*/?\s*(important|system|instructions?|secret|hidden|note to (the )?(model|assistant|ai))\b[^>]{0,40}>`),
	p("override", Instruction, High, "tells the model to drop its instructions",
		`(?i)\b(ignore|disregard|forget|override)\s+(all\s+|any\s+|the\s+|your\s+)*(previous|prior|above|earlier|preceding|system|other)\s+(instructions|prompts?|rules|messages|directions)\b|\byou are now\b|\bnew (system )?instructions\b`),
	p("conceal", Instruction, High, "tells the model to keep something from the user",
		`(?i)\b(do\s+not|don'?t|never|must\s+not)\s+(tell|mention|reveal|inform|notify|disclose|show|alert|let)\b[^.]{0,40}\b(user|human|person|anyone)\b|\bwithout\s+(telling|informing|notifying|alerting|asking|showing)\s+(the\s+)?(user|human|person)\b|\b(hide|conceal|keep)\s+(this|it|that)\s+(secret\s+)?from\s+(the\s+)?(user|human)\b|\b(user|human)\s+(must|should)\s+(not|never)\s+(know|see|be told)\b`),
	p("sensitive-file", Instruction, High, "names a file or store of secrets",
		`(?i)~/\.ssh\b|\.ssh/|\bid_(rsa|dsa|ecdsa|ed25519)\b|(^|[\s"'(=/])\.env\b|\.aws/credentials|\.netrc\b|\.git-credentials|\.npmrc\b|\.pypirc\b|/etc/(passwd|shadow)\b|\bmcp\.json\b|claude_desktop_config|\.docker/config\.json|\.kube/config`),
	p("secret-request", Instruction, High, "asks the model to pass along secrets or file contents",
		`(?i)\b(read|cat|open|include|send|pass|attach|append|upload|forward|copy)\b[^.]{0,60}\b(private keys?|api[ _-]?keys?|passwords?|credentials|secrets?|access tokens?|auth tokens?|session cookies?|conversation history|chat history|system prompt)\b`),
	p("preamble", Instruction, Medium, "orders the model about other calls (before/after using this tool …)",
		`(?i)\b(before|after|prior to)\s+(using|calling|invoking|running)\s+(this|any|the|other)\b[^.]{0,30}\btools?\b|\b(always|must|first)\s+(first\s+)?(call|use|invoke|run|read)\s+(the\s+)?[\w.-]+\s+tool\b|\bas\s+(its|the)\s+['"`+"`"+`]?\w+['"`+"`"+`]?\s+(parameter|argument)\b[^.]{0,40}\b(otherwise|or else|else)\b`),
	p("shadowing", Instruction, High, "redirects what the user asks for to this tool",
		`(?i)\b(instead\s+of|rather\s+than|in\s+place\s+of)\s+(using\s+|calling\s+)?(the\s+|any\s+)?['"`+"`"+`]?[\w.-]+['"`+"`"+`]?\s+tool\b|\buse\s+this\s+tool\s+instead\b|\b(whenever|when|if)\s+the\s+user\s+(asks|wants|requests|tells)\b[^.]{0,80}\b(use|call|invoke)\s+(this|the)\b|\bevery\s+(e-?mail|message|request|call)\b[^.]{0,40}\bmust\b`),
	p("url", Link, Low, "a URL: a place the model may be sent or data may go",
		`(?i)\b(https?|ftp|wss?|file|data)://[^\s"'<>)\]]+|\bwww\.[a-z0-9-]+\.[a-z]{2,}[^\s"'<>)\]]*`),
	p("email", Link, Low, "an e-mail address: a place data may be sent",
		`(?i)\b[a-z0-9._%+-]+@[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z]{2,}\b`),
}

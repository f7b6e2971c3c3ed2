package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/internal/schema"
	"github.com/warden-run/warden/tool"
)

// call runs the tool the way the module's warden_call does, and returns the
// response JSON.
func call(t *testing.T, args string) (out jqOutput, text string, errResp *tool.Error) {
	t.Helper()
	resp := warden.NewRegistry(jqTool{}).Dispatch([]byte(`{"tool":"jq","arguments":`+args+`}`), nil)
	var r struct {
		Content           []tool.Content `json:"content"`
		StructuredContent *jqOutput      `json:"structuredContent"`
		Error             *tool.Error    `json:"error"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		t.Fatalf("%s: response %s: %v", args, resp, err)
	}
	if r.Error != nil {
		return jqOutput{}, "", r.Error
	}
	return *r.StructuredContent, r.Content[0].Text, nil
}

func results(o jqOutput) string {
	parts := make([]string, len(o.Results))
	for i, r := range o.Results {
		parts[i] = string(r)
	}
	return strings.Join(parts, " ")
}

func TestJQ(t *testing.T) {
	cases := []struct{ args, want, text string }{
		{`{"filter":".a","input":{"a":[1,2]}}`, `[1,2]`, `[1,2]`},
		{`{"filter":".[] | .n","input":[{"n":1},{"n":"x"}]}`, `1 "x"`, "1\n\"x\""},
		{`{"filter":".a","input":"{\"a\": true}"}`, `true`, `true`},
		{`{"filter":".","input":"{\"a\":1} {\"a\":2}"}`, `{"a":1} {"a":2}`, "{\"a\":1}\n{\"a\":2}"},
		{`{"filter":"length","input":"not json"}`, `8`, `8`},
		{`{"filter":"length","input":"[1,2]","raw":true}`, `5`, `5`},
		{`{"filter":"$x + $y","input":null,"vars":{"x":40,"y":2}}`, `42`, `42`},
		{`{"filter":".","input":12345678901234567890123}`, `12345678901234567890123`, `12345678901234567890123`},
		{`{"filter":"empty","input":1}`, ``, ``},
		{`{"filter":"1, 2, halt, 3","input":null}`, `1 2`, "1\n2"},
		{`{"filter":"{a: 1} | keys","input":0}`, `["a"]`, `["a"]`},
	}
	for _, c := range cases {
		out, text, err := call(t, c.args)
		if err != nil {
			t.Errorf("%s: error %v", c.args, err)
			continue
		}
		if got := results(out); got != c.want || text != c.text || out.Overflow != nil {
			t.Errorf("%s: results %q text %q overflow %+v; want %q, %q", c.args, got, text, out.Overflow, c.want, c.text)
		}
	}
}

func TestJQErrors(t *testing.T) {
	cases := []struct{ args, kind, message string }{
		{`{"filter":".a |","input":{}}`, "invalid_arguments", `filter: unexpected EOF (at byte 4)`},
		{`{"filter":"nosuchfn(1)","input":{}}`, "invalid_arguments", `filter: function not defined: nosuchfn/1`},
		{`{"filter":"$missing","input":{}}`, "invalid_arguments", `filter: variable not defined: $missing`},
		{`{"filter":" ","input":{}}`, "invalid_arguments", `argument "filter": must not be empty (use "." for the identity)`},
		{`{"filter":".[] | .a","input":[{"a":1},3]}`, "invalid_arguments", `jq: expected an object but got: number (3) (after 1 results)`},
		{`{"filter":"error(\"custom\")","input":1}`, "invalid_arguments", `jq: error: custom (after 0 results)`},
		{`{"filter":".","input":"{\"a\":"}`, "", ""}, // not JSON: taken as a plain string
		{`{"filter":".","input":{},"offset":-2,"detail_level":"full"}`, "invalid_arguments", `argument "offset": must not be negative, got -2`},
		{`{"filter":"import \"x\" as x; .","input":{}}`, "invalid_arguments", `filter: cannot load module: "x"`},
	}
	for _, c := range cases {
		_, _, err := call(t, c.args)
		if c.kind == "" {
			if err != nil {
				t.Errorf("%s: unexpected error %v", c.args, err)
			}
			continue
		}
		if err == nil || string(err.Kind) != c.kind || err.Message != c.message {
			t.Errorf("%s: got %v, want %s: %s", c.args, err, c.kind, c.message)
		}
	}
}

func TestJQPaging(t *testing.T) {
	out, text, err := call(t, `{"filter":"range(500)","input":null}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 200 || out.Overflow == nil || out.Overflow.Shown != 200 || out.Overflow.Total != 500 ||
		out.Overflow.NextOffset != nil || !strings.HasSuffix(text, `"shown":200,"total":500,"hint":"narrow the filter, or use detail_level \"full\" with offset/limit to page through all results"}`) {
		t.Fatalf("exploring: %d results, overflow %+v, text tail %q", len(out.Results), out.Overflow, text[len(text)-80:])
	}
	out, _, _ = call(t, `{"filter":"range(500)","input":null,"limit":7}`)
	if results(out) != "0 1 2 3 4 5 6" || out.Overflow.Total != 500 {
		t.Fatalf("exploring with limit: %s %+v", results(out), out.Overflow)
	}
	var seen []string
	offset := 0
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("paging does not end")
		}
		out, _, err := call(t, fmt.Sprintf(`{"filter":"range(120)","input":null,"detail_level":"full","offset":%d}`, offset))
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, results(out))
		if out.Overflow == nil || out.Overflow.NextOffset == nil {
			break
		}
		offset = *out.Overflow.NextOffset
	}
	if len(seen) != 3 || !strings.HasPrefix(seen[2], "100 ") || !strings.HasSuffix(seen[2], " 119") {
		t.Fatalf("pages = %d, last %q", len(seen), seen[len(seen)-1])
	}
}

func TestJQBudgets(t *testing.T) {
	// An endless filter stops at maxScan and says so.
	out, _, err := call(t, `{"filter":"repeat(1)","input":null,"detail_level":"full","offset":20000}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 0 || out.Overflow.Total != maxScan || !strings.Contains(out.Overflow.Hint, "at least 10000 results") {
		t.Fatalf("endless: %d results, %+v", len(out.Results), out.Overflow)
	}
	// Big results stop a page at the byte budget; next_offset resumes there.
	out, _, err = call(t, `{"filter":"range(10) | tostring * 100000","input":null,"detail_level":"full"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 5 || out.Overflow == nil || *out.Overflow.NextOffset != 5 {
		t.Fatalf("budget: %d results, %+v", len(out.Results), out.Overflow)
	}
	// A single result larger than the budget is still shown: the host's
	// max_output is the last word on what is too big.
	out, _, _ = call(t, `{"filter":"\"x\" * 100000","input":null}`)
	if len(out.Results) != 1 || out.Overflow != nil {
		t.Fatalf("one large result: %d results, %+v", len(out.Results), out.Overflow)
	}
}

func TestJQDescriptorIsValid(t *testing.T) {
	d := jqTool{}.Descriptor()
	if _, err := schema.CompileDescriptor(&d); err != nil {
		t.Fatal(err)
	}
}

func FuzzJQ(f *testing.F) {
	f.Add(".a", `{"a":1}`)
	f.Add(".[] | select(. > 1)", `[1,2,3]`)
	f.Add("reduce .[] as $x (0; . + $x)", `[1,2]`)
	f.Add(`"\(.)"`, `"str"`)
	reg := warden.NewRegistry(jqTool{})
	f.Fuzz(func(t *testing.T, filter, input string) {
		if strings.Contains(filter, "repeat") || strings.Contains(filter, "range") || strings.Contains(filter, "recurse") ||
			strings.Contains(filter, "while") || strings.Contains(filter, "until") || strings.Contains(filter, "def") {
			t.Skip("may not terminate: the host's deadline bounds these, not the tool")
		}
		args, _ := json.Marshal(map[string]string{"filter": filter, "input": input})
		resp := reg.Dispatch([]byte(`{"tool":"jq","arguments":`+string(args)+`}`), nil)
		var r struct {
			Content []tool.Content `json:"content"`
			Error   *tool.Error    `json:"error"`
		}
		if err := json.Unmarshal(resp, &r); err != nil {
			t.Fatalf("response is not JSON: %s", resp)
		}
		if r.Error != nil && r.Error.Kind != tool.KindInvalidArguments {
			t.Fatalf("kind %s for %q on %q: %s", r.Error.Kind, filter, input, r.Error.Message)
		}
	})
}

package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// TestAnswerChecked: Answer checks every answer it takes, against the
// request it answers in the record it changes, and keeps what the check
// returns; an answer it does not take (not outstanding: never asked,
// answered already, a task that asks nothing) is ignored and never
// checked; a refused check leaves the record unchanged, the other answers
// of the update untaken too.
func TestAnswerChecked(t *testing.T) {
	errKind := errors.New("wrong kind")
	var checked []string
	check := func(req InputRequest, answer json.RawMessage) (json.RawMessage, error) {
		checked = append(checked, req.Key+"/"+req.Method)
		if string(answer) == "[1,2]" {
			return nil, errKind
		}
		return json.RawMessage(`{"checked":` + string(answer) + `}`), nil
	}
	task := func() Task {
		return Task{ID: "t", Status: InputRequired,
			InputRequests:  []InputRequest{{Key: "a", Method: "elicitation/create"}, {Key: "b", Method: "roots/list"}},
			InputResponses: map[string]json.RawMessage{"b": json.RawMessage(`{}`)}}
	}

	tk := task()
	ignored, err := tk.Answer(map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": json.RawMessage(`[1,2]`), "c": json.RawMessage(`[1,2]`)}, check)
	if err != nil || fmt.Sprint(ignored) != `map[b:answered already; an answer is taken once c:not an outstanding request of this task (outstanding: "a")]` {
		t.Fatalf("Answer = %v, %v", ignored, err)
	}
	if fmt.Sprint(checked) != "[a/elicitation/create]" || string(tk.InputResponses["a"]) != `{"checked":1}` || string(tk.InputResponses["b"]) != `{}` {
		t.Errorf("checked %v, kept %s", checked, tk.InputResponses)
	}

	tk, checked = task(), nil
	tk.InputResponses = nil
	ignored, err = tk.Answer(map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": json.RawMessage(`[1,2]`)}, check)
	if !errors.Is(err, errKind) || ignored != nil || tk.InputResponses != nil {
		t.Errorf("a refused answer: %v, %v, record %s", ignored, err, tk.InputResponses)
	}

	tk, checked = task(), nil
	tk.Status = Working
	ignored, err = tk.Answer(map[string]json.RawMessage{"a": json.RawMessage(`[1,2]`)}, check)
	if err != nil || ignored["a"] != "task t is working and asks nothing" || checked != nil {
		t.Errorf("a task that asks nothing: %v, %v, checked %v", ignored, err, checked)
	}
}

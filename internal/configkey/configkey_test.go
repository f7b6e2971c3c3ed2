package configkey

import "testing"

func TestFold(t *testing.T) {
	for in, want := range map[string]string{"danger": "danger", "Danger": "danger", "DANGER": "danger", "my_tool-2": "my_tool-2", "": ""} {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}

package limits

import "testing"

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"": 0, "0": 0, "10/s": 10, "600/m": 10, "36/h": 0.01, "0.5/s": 0.5} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"10":   `"10" is not a rate: write calls per unit, such as 10/s, 600/m or 2/h`,
		"x/s":  `"x/s" is not a rate: "x" is not a non-negative number`,
		"10/d": `"10/d" is not a rate: the unit "d" is not s, m or h`,
		"-1/s": `"-1/s" is not a rate: "-1" is not a non-negative number`,
	} {
		if _, err := ParseRate(in); err == nil || err.Error() != want {
			t.Errorf("ParseRate(%q) = %v, want %q", in, err, want)
		}
	}
}

package tally

import "testing"

func TestSumAddsLines(t *testing.T) {
	got, err := Sum([]string{"1", " 2", "3 "})
	if err != nil || got != 6 {
		t.Fatalf("Sum = %d, %v; want 6", got, err)
	}
}

func TestSumNamesTheBadLine(t *testing.T) {
	if _, err := Sum([]string{"1", "x"}); err == nil || err.Error() != `line 2: "x" is not a number` {
		t.Fatalf("err = %v", err)
	}
}

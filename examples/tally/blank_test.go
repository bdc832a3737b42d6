package tally

import "testing"

// Story 902: a column with blank lines in it still adds up.
func TestSumSkipsBlankLines(t *testing.T) {
	got, err := Sum([]string{"1", "", "  ", "2"})
	if err != nil || got != 3 {
		t.Fatalf("Sum = %d, %v; want 3", got, err)
	}
}

// Package tally adds up a column of numbers, one per line: the Go example of aayudha verify's
// test evidence and red-on-base.
package tally

import (
	"fmt"
	"strconv"
	"strings"
)

// Sum adds the integers of lines, skipping blank ones; a line that is not an integer is an error naming
// its line number.
func Sum(lines []string) (int, error) {
	total := 0
	for i, line := range lines {
		if strings.TrimSpace(line) == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			return 0, fmt.Errorf("line %d: %q is not a number", i+1, line)
		}
		total += n
	}
	return total, nil
}

package cli

import (
	"fmt"
	"strings"

	"tare/agent"
)

// demoSides reads `tare demo --sides A,B`: the two agents the demo compares, any two of
// the ones tare runs. It fails with one line naming the flag and the fix.
func demoSides(pair string) ([]string, error) {
	names := strings.Split(pair, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	if len(names) != 2 || names[0] == "" || names[1] == "" {
		return nil, fmt.Errorf("--sides %q: want two agents separated by a comma, e.g. --sides gemini,claude", pair)
	}
	for _, n := range names {
		if _, err := agent.ByName(n); err != nil {
			return nil, fmt.Errorf("--sides %q: %v", pair, err)
		}
	}
	return names, nil
}

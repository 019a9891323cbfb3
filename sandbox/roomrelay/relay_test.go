package roomrelay

import (
	"slices"
	"testing"
)

func TestParseRelayArgs(t *testing.T) {
	ra, err := parseRelayArgs([]string{"--lifeline", "9", "--listen", "127.0.0.1:80=/run/tare/80.sock", "--listen=127.0.0.1:81=/run/tare/81.sock", "--", "sh", "-c", "x"})
	if err != nil || ra.lifeline != 9 || len(ra.listens) != 2 || ra.listens[1].sock != "/run/tare/81.sock" || !slices.Equal(ra.argv, []string{"sh", "-c", "x"}) {
		t.Fatalf("got %+v %v", ra, err)
	}
	if ra, err := parseRelayArgs([]string{"--lifeline=4", "--", "sh"}); err != nil || ra.lifeline != 4 || len(ra.listens) != 0 {
		t.Fatalf("lifeline alone: got %+v %v", ra, err)
	}
	for _, bad := range [][]string{{"--listen", "127.0.0.1:80"}, {"--listen", "80=/x", "--", "sh"}, {"--"}, {"--", ""}, {"sh"}, {"--listen"},
		{"--lifeline", "--", "sh"}, {"--lifeline", "2", "--", "sh"}, {"--lifeline"}} {
		if _, err := parseRelayArgs(bad); err == nil {
			t.Errorf("parseRelayArgs(%q) accepted", bad)
		}
	}
}

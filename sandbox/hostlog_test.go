package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
)

// TestHostLogIsBounded: a room reaching for hosts without end fills its host log only up to
// maxHostLines; the log says where it stopped and, when the room ends, how many it left out.
func TestHostLogIsBounded(t *testing.T) {
	var log bytes.Buffer
	h, err := listenRelays(t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.hosts = &log
	rl := Relay{Port: 4001, Allow: []string{"a:443"}}
	for range maxHostLines + 7 {
		h.reach(rl, "evil.example:443", false, false)
	}
	h.stop()
	var lines []HostReach
	sc := bufio.NewScanner(&log)
	for sc.Scan() {
		var r HostReach
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, r)
	}
	if len(lines) != maxHostLines+2 {
		t.Fatalf("%d lines; want %d reaches, the full note and the count", len(lines), maxHostLines)
	}
	full, last := lines[maxHostLines], lines[maxHostLines+1]
	if full.Host != "" || full.Note == "" || last.Dropped != 7 {
		t.Errorf("after the cap: %+v then %+v; want the log-full note, then 7 dropped", full, last)
	}
}

package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ProbesDir is the folder below the state directory that holds each agent's last reading.
const ProbesDir = "probes"

// ProbeReading is an agent's last probe reading as the engine stores it, one JSON file per
// agent, project and room at <state>/probes/<agent>-<hash>.json.
type ProbeReading struct {
	Agent   string `json:"agent"`
	Version string `json:"version"`
	// Project is the folder the reading is for; Room the room it read ("tare's model server").
	// A reading without a room is from before readings were kept per project: it says
	// nothing about any one project, and the app does not show it.
	Project string `json:"project"`
	Room    string `json:"room"`
	// Verdict is the reading's line: "tare: 0.00", "tare: 2 leaks", "not proven (blind)".
	Verdict string `json:"verdict"`
	// Zero is true only for "tare: 0.00".
	Zero bool      `json:"zero"`
	At   time.Time `json:"at"`
	// path is the file the reading was read from (the whole reading is there).
	path string
}

// readProbes reads every reading in dir, sorted by agent. A file that is not a reading is
// reported in the error and left out; the others still count.
func readProbes(dir string) ([]ProbeReading, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []ProbeReading
	var bad []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		var r ProbeReading
		// The file is <agent>-<hash>.json (<agent>.json before readings were per project).
		agent, _, _ := strings.Cut(strings.TrimSuffix(filepath.Base(p), ".json"), "-")
		if err := json.Unmarshal(data, &r); err != nil {
			bad = append(bad, fmt.Sprintf("%s: not a probe reading (%v); fix: run tare probe %s again", p, err, agent))
			continue
		}
		if r.Agent == "" {
			r.Agent = agent
		}
		r.path = p
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	if len(bad) > 0 {
		return out, fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return out, nil
}

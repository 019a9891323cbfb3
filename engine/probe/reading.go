package probe

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"tare/capsule"
)

// Detector names, in the order a reading lists them.
const (
	DetInstructions = "instructions"
	DetHomePath     = "home path"
	DetMCP          = "mcp"
	DetSkills       = "skills"
	DetPlugins      = "plugins"
	DetEmail        = "email"
	DetEnv          = "env"
	DetFDs          = "descriptors"
	DetHostFiles    = "host files"
	DetSecrets      = "secrets"
	DetLoopback     = "host loopback"
	DetOtherHosts   = "other hosts"
)

// Detectors lists every detector a probe runs.
var Detectors = []string{DetInstructions, DetHomePath, DetMCP, DetSkills, DetPlugins, DetEmail,
	DetEnv, DetFDs, DetHostFiles, DetSecrets, DetLoopback, DetOtherHosts}

// Leak is one thing of the operator's that a room let through.
type Leak struct {
	// Detector is the detector that saw it.
	Detector string `json:"detector"`
	// What says what was seen and where (in what reached the model, or inside the room).
	What string `json:"what"`
	// Source is the host file (or variable, or listener) it came from.
	Source string `json:"source"`
}

// Reading is the result of a probe: the verdict, its evidence and what the room declares.
type Reading struct {
	Agent    string `json:"agent"`
	Version  string `json:"version"`
	Verified bool   `json:"verified"`
	Project  string `json:"project"`
	// Room is the kind of room probed (RoomModelServer, or with the host's network): a
	// reading holds for its agent, project and room only.
	Room  string `json:"room"`
	Bwrap string `json:"bwrap"`
	// Network says how the room reaches its model.
	Network string `json:"network"`
	// Kernel is what the clean room's inspection saw of its kernel-side defences: the
	// seccomp filter and the kernel keys in sight.
	Kernel string `json:"kernel"`
	// Declared lists what tare itself placed in the room (login copy, config files).
	Declared []string `json:"declared"`
	// Leaks are what the clean room let through; the agent does not start while there are any.
	Leaks []Leak `json:"leaks"`
	// Blind lists the detectors whose silence proves nothing: the control twin saw nothing,
	// or one of the operator's files is one they cannot recognise (Unseen says which).
	Blind []string `json:"blind"`
	// Unseen gives the reasons for Blind beyond the control: each names the detector, why it
	// cannot see (What) and the file (Source).
	Unseen []Leak `json:"unseen,omitempty"`
	// NotApplicable lists the detectors of mechanisms this agent does not have (pi reads no
	// MCP servers): nothing of that kind can leak, and the control plants none.
	NotApplicable []string `json:"not_applicable"`
	// ControlSaw maps each detector to what it saw in the control twin.
	ControlSaw map[string]string `json:"control_saw"`
	// KeptOut lists what a twin with a copy of the operator's real setup showed and the room kept out.
	KeptOut []Leak `json:"kept_out"`
	// Requests is how many requests reached the model in the clean room.
	Requests int       `json:"requests"`
	At       time.Time `json:"at"`
	Took     float64   `json:"took_seconds"`
}

// blind marks detector det blind; why and source, when given, say what it cannot see.
func (r *Reading) blind(det, why, source string) {
	if !slices.Contains(r.Blind, det) {
		r.Blind = append(r.Blind, det)
	}
	u := Leak{Detector: det, What: why, Source: source}
	if why != "" && !slices.Contains(r.Unseen, u) {
		r.Unseen = append(r.Unseen, u)
	}
}

// The rooms a probe reads. Every probe points its agent at tare's model server: the rooms of
// real-provider runs add a login copy and a proxy to the provider, which no reading saw.
const (
	RoomModelServer        = "tare's model server"
	RoomModelServerHostNet = "tare's model server, host network"
)

// probedRoom is the room a probe with or without the host's network reads.
func probedRoom(hostNet bool) string {
	if hostNet {
		return RoomModelServerHostNet
	}
	return RoomModelServer
}

// ProbesDir is where the last reading of each agent, project and room is kept, below the
// state directory.
const ProbesDir = "probes"

// StoreReading keeps r as the last reading of its agent for its project and room
// (ReadingPath), where the app's probes pane finds it.
func StoreReading(stateDir string, r *Reading) error {
	data, err := json.MarshalIndent(struct {
		*Reading
		Verdict string `json:"verdict"`
		Zero    bool   `json:"zero"`
	}{r, r.Verdict(), r.Zero()}, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Join(stateDir, ProbesDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return capsule.WriteFileAtomic(ReadingPath(stateDir, r.Agent, r.Project, r.Room), append(data, '\n'), 0o644)
}

// ReadingPath is where the last reading of agent for project in room is kept:
// <state>/probes/<agent>-<12 hex digits of the project and room>.json. One project's reading
// never stands in for another's, whose ancestors and files differ.
func ReadingPath(stateDir, agent, project, room string) string {
	sum := sha256.Sum256([]byte(project + "\x00" + room))
	return filepath.Join(stateDir, ProbesDir, fmt.Sprintf("%s-%x.json", agent, sum[:6]))
}

// Summary is a stored reading as the app lists it: whose it is, for which project and room,
// and its verdict line as StoreReading kept it.
type Summary struct {
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
	// Path is the file the summary was read from (the whole reading is there).
	Path string `json:"-"`
}

// ReadSummaries reads every stored reading in dir (a state directory's ProbesDir), sorted by
// agent. A file that is not a reading is reported in the error and left out; the others
// still count.
func ReadSummaries(dir string) ([]Summary, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Summary
	var bad []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		var r Summary
		// The file is <agent>-<hash>.json (<agent>.json before readings were per project).
		agent, _, _ := strings.Cut(strings.TrimSuffix(filepath.Base(p), ".json"), "-")
		if err := json.Unmarshal(data, &r); err != nil {
			bad = append(bad, fmt.Sprintf("%s: not a probe reading (%v); fix: run tare probe %s again", p, err, agent))
			continue
		}
		if r.Agent == "" {
			r.Agent = agent
		}
		r.Path = p
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	if len(bad) > 0 {
		return out, fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return out, nil
}

// Zero reports whether the room is proven clean: no leak, and every detector proven able to see.
func (r *Reading) Zero() bool { return len(r.Leaks) == 0 && len(r.Blind) == 0 }

// Verdict is the reading's one line: "tare: 0.00", "tare: N leaks" or "not proven (blind)".
func (r *Reading) Verdict() string {
	switch {
	case len(r.Leaks) == 1:
		return "tare: 1 leak"
	case len(r.Leaks) > 1:
		return fmt.Sprintf("tare: %d leaks", len(r.Leaks))
	case len(r.Blind) > 0:
		return "not proven (blind)"
	}
	return "tare: 0.00"
}

// Render is the reading as a person reads it.
func (r *Reading) Render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tare probe %s %s · %s\n", r.Agent, r.Version, r.Project)
	if !r.Verified {
		fmt.Fprintf(&b, "  note      %s has not been verified here: its adapter is written from its public docs\n", r.Agent)
	}
	fmt.Fprintf(&b, "  room      bwrap %s · uid 1000 · %s\n", r.Bwrap, r.Network)
	if r.Room != "" {
		fmt.Fprintf(&b, "  probed    %s, no login copy; a real-provider run's room adds its login copy (read back into a declared line when you have a login file) and a proxy, unseen here\n", r.Room)
	}
	if r.Kernel != "" {
		fmt.Fprintf(&b, "  kernel    %s\n", r.Kernel)
	}
	for _, d := range r.Declared {
		fmt.Fprintf(&b, "  declared  %s\n", d)
	}
	fmt.Fprintf(&b, "  checked   %s (%d requests reached the model)\n", strings.Join(Detectors, ", "), r.Requests)
	seen := 0
	for _, d := range Detectors {
		if r.ControlSaw[d] != "" {
			seen++
		}
	}
	fmt.Fprintf(&b, "  control   %d/%d detectors saw their canary in the planted dirty home\n", seen, len(Detectors)-len(r.NotApplicable))
	if len(r.NotApplicable) > 0 {
		fmt.Fprintf(&b, "  n/a       %s: %s has no such mechanism\n", strings.Join(r.NotApplicable, ", "), r.Agent)
	}
	for _, k := range r.KeptOut {
		fmt.Fprintf(&b, "  kept out  %-13s %s  <- %s\n", k.Detector, k.What, k.Source)
	}
	b.WriteString(r.Verdict() + "\n")
	for _, l := range r.Leaks {
		fmt.Fprintf(&b, "  %-13s %s  <- %s\n", l.Detector, l.What, l.Source)
	}
	var control []string
	for _, d := range r.Blind {
		if !slices.ContainsFunc(r.Unseen, func(u Leak) bool { return u.Detector == d }) {
			control = append(control, d)
		}
	}
	if len(control) > 0 {
		fmt.Fprintf(&b, "  blind     the control could not see: %s\n", strings.Join(control, ", "))
	}
	for _, u := range r.Unseen {
		fmt.Fprintf(&b, "  blind     %-13s %s: %s\n", u.Detector, u.Source, u.What)
	}
	return b.String()
}

// WriteJSON writes the reading as one JSON object.
func (r *Reading) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// tilde shows a host path under the operator's home as ~/..., as people write it.
func tilde(path string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == "/" {
		return path
	}
	if path == home {
		return "~"
	}
	if strings.HasPrefix(path, home+"/") {
		return "~" + strings.TrimPrefix(path, home)
	}
	return path
}

func sortLeaks(leaks []Leak) {
	order := map[string]int{}
	for i, d := range Detectors {
		order[d] = i
	}
	sort.SliceStable(leaks, func(i, j int) bool {
		if order[leaks[i].Detector] != order[leaks[j].Detector] {
			return order[leaks[i].Detector] < order[leaks[j].Detector]
		}
		return leaks[i].What < leaks[j].What
	})
}

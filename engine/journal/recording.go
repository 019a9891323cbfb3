package journal

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"tare/agent"
	"tare/capsule"
)

// Recording is the original run of a task: its session read as steps, and the capsule of
// the workspace after each step. Capsules[0] is the project before the run; Capsules[n] is
// the workspace after step n.
type Recording struct {
	Agent     string            `json:"agent"`
	Args      []string          `json:"args,omitempty"`
	Task      string            `json:"task"`
	SessionID string            `json:"session_id"`
	Exit      string            `json:"exit"`
	Snapshots string            `json:"snapshots"`
	Steps     []agent.Step      `json:"steps"`
	Capsules  []capsule.Capsule `json:"capsules"`
	// Inherited marks the steps none of whose tool calls left a capsule (the hook did not run,
	// or its snapshot failed): Capsules holds the nearest earlier one for them, which may not
	// be the workspace the step left. A tail from such a step is refused unless asked for.
	Inherited []Inherited `json:"inherited,omitempty"`
	// Events are the trail's events, for handoffs.
	Events []agent.Event `json:"events"`
	// Metered is the recording's usage as tare's relay counted it (on tare's model server).
	Metered *Metered `json:"metered,omitempty"`
	// Stopped is set when the model provider, not the agent, ended the recorded run (a quota
	// wall, an expired login, an overload, a dropped stream): its last steps are where the
	// provider cut it, so they say nothing about the agent.
	Stopped *ProviderStop `json:"stopped,omitempty"`
	// Session is the session file's content (original/session.jsonl), read beside
	// record.json, never written into it.
	Session []byte `json:"-"`
}

// ProviderStop is how a provider ended a run: Kind is agent.StopQuota, StopLogin,
// StopOverloaded or StopDropped, Detail the CLI's own words.
type ProviderStop struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// Line says it in a sentence: "ended by the provider (quota): <detail>".
func (p ProviderStop) Line() string {
	return Printable(fmt.Sprintf("ended by the provider (%s): %s", p.Kind, p.Detail)) // the CLI's words, printed on the host
}

// Inherited is a step with no capsule of its own and the step whose capsule it starts from
// (0: the project before the run).
type Inherited struct {
	Step int `json:"step"`
	From int `json:"from"`
}

// Nearest is the step whose capsule step starts from when it has none of its own.
func (r *Recording) Nearest(step int) (int, bool) {
	for _, in := range r.Inherited {
		if in.Step == step {
			return in.From, true
		}
	}
	return step, false
}

// RecordFile is the recording's summary inside the original/ folder.
const RecordFile = "record.json"

// ReadRecording loads a recorded run's steps, capsules and session.
func ReadRecording(dir string) (*Recording, error) {
	data, err := os.ReadFile(filepath.Join(dir, "original", RecordFile))
	if err != nil {
		return nil, fmt.Errorf("%s: the recording did not finish (no original/%s); fix: record the task again", dir, RecordFile)
	}
	var rec Recording
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%s: original/%s: %v", dir, RecordFile, err)
	}
	if rec.Session, err = os.ReadFile(filepath.Join(dir, "original", "session.jsonl")); err != nil {
		return nil, fmt.Errorf("%s: original/session.jsonl: %v", dir, err)
	}
	return &rec, nil
}

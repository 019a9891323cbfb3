package modelserver

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"strings"
	"time"
)

// Texts the server answers outside the script.
const (
	// ProbeText is the answer to every model request in probe mode.
	ProbeText = "tare probe: recorded."
	// SideText answers side calls that offer no tools (titles, summaries).
	SideText = "tare: side answer."
)

// answer is the content of one assistant message, whatever the dialect.
type answer struct {
	text  string
	calls []toolCall
}

// decision is what the server does with one model request.
type decision struct {
	answer
	fail    ErrorKind
	delay   time.Duration
	turn    int // 1-based scripted turn, 0 when none
	branch  int // 1-based branch, 0 for the plain turn
	attempt int
	outcome string
	note    string
}

// turnKey names one turn of one conversation: conv is "key:<session id>"
// or, for clients that send no session id, "history:<hash>".
type turnKey struct {
	conv string
	turn int
}

// turnState remembers the branch drawn for a turn and how many attempts
// it has had, so that retries keep their branch and error_times counts.
type turnState struct {
	branch   int
	step     Step
	attempts int
}

// decide picks the answer for a model request. Scripted turns are indexed
// by the number of assistant turns in the request's history, so state is
// only needed for branch draws without a key and for attempt counts.
func (s *Server) decide(c *convo) decision {
	if c.structured {
		b, _ := json.Marshal(sampleJSON(c.schema, 0))
		return decision{answer: answer{text: string(b)}, outcome: "side", note: "structured output"}
	}
	if s.script == nil {
		return decision{answer: answer{text: ProbeText}, outcome: "probe"}
	}
	if len(c.tools) == 0 {
		return decision{answer: answer{text: SideText}, outcome: "side", note: "no tools offered"}
	}
	idx := c.turns
	if idx >= len(s.script.Turns) {
		return decision{answer: answer{text: s.script.Final}, outcome: "final"}
	}
	turn := &s.script.Turns[idx]
	k := turnKey{conv: c.draws + "\x00history:" + c.history, turn: idx}
	if c.key != "" {
		k.conv = c.draws + "\x00key:" + c.key
	}

	s.stateMu.Lock()
	st, ok := s.turnState[k]
	if !ok {
		var u float64
		switch {
		case c.draws != "":
			// A stream is one tail: its draws depend on the seed and the stream alone, not
			// on the session id its CLI made up, so the run replays from its seed.
			u = keyedDraw(s.seed, "stream\x00"+c.draws, idx)
		case c.key != "":
			u = keyedDraw(s.seed, c.key, idx)
		default:
			u = s.rng.Float64()
		}
		st = &turnState{}
		st.branch, st.step = turn.pick(u)
		s.turnState[k] = st
	}
	st.attempts++
	d := decision{turn: idx + 1, branch: st.branch, attempt: st.attempts, delay: st.step.Delay}
	step := st.step
	failing := step.Error != "" && (step.ErrorTimes == 0 || st.attempts <= step.ErrorTimes)
	if !failing && c.key == "" {
		// Without a session id the next identical conversation is another
		// run: let it draw again.
		delete(s.turnState, k)
	}
	s.stateMu.Unlock()

	if failing {
		d.fail = step.Error
		d.outcome = string(step.Error)
		if step.Error != ErrDrop {
			return d
		}
	}
	d.text = step.Text
	calls, err := mapActions(step.Actions, c.tools, s.cwdFor(c))
	if err != nil {
		d.fail = ""
		d.text = "tare model server: " + err.Error()
		d.outcome, d.note = "unmapped", err.Error()
		return d
	}
	d.calls = calls
	if d.outcome == "" {
		d.outcome = "turn"
	}
	return d
}

func (s *Server) cwdFor(c *convo) string {
	if c.cwd != "" {
		return c.cwd
	}
	return s.workspace
}

// keyedDraw is a uniform number in [0,1) fixed by (seed, key, turn), so a
// retry or resume of the same session takes the same branch.
func keyedDraw(seed int64, key string, turn int) float64 {
	h := sha256.New()
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(seed))
	h.Write(buf[:])
	h.Write([]byte(key))
	binary.BigEndian.PutUint64(buf[:], uint64(turn))
	h.Write(buf[:])
	sum := h.Sum(nil)
	return float64(binary.BigEndian.Uint64(sum[:8])>>11) / (1 << 53)
}

// sampleJSON builds a minimal value valid for a JSON schema: every
// property filled, strings non-empty.
func sampleJSON(schema map[string]any, depth int) any {
	if schema == nil || depth > 8 {
		return map[string]any{}
	}
	if c, ok := schema["const"]; ok {
		return c
	}
	if e, ok := schema["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := schema[k].([]any); ok && len(alts) > 0 {
			if m, ok := alts[0].(map[string]any); ok {
				return sampleJSON(m, depth+1)
			}
		}
	}
	typ := schema["type"]
	if list, ok := typ.([]any); ok && len(list) > 0 {
		typ = list[0]
	}
	if t, ok := typ.(string); ok {
		typ = strings.ToLower(t) // Gemini's responseSchema writes STRING, INTEGER...
	}
	switch typ {
	case "string":
		return "tare"
	case "integer", "number":
		// Gemini CLI's model router rejects a complexity_score below its minimum of 1.
		if lo, ok := schema["minimum"].(float64); ok {
			return lo
		}
		return 0
	case "boolean":
		return false
	case "null":
		return nil
	case "array":
		return []any{}
	}
	out := map[string]any{}
	ps, _ := schema["properties"].(map[string]any)
	for name, p := range ps {
		m, _ := p.(map[string]any)
		if name == "title" && (m == nil || m["type"] == "string") {
			out[name] = "tare session"
			continue
		}
		out[name] = sampleJSON(m, depth+1)
	}
	return out
}

// StreamBranch is the branch (1-based; 0 the plain turn) a server at seed draws for turn
// (1-based) of a conversation on stream (Server.Stream): what a tail on that stream will be
// answered. A test picks the seed that gives it the tails it needs, instead of hoping.
func (s *Script) StreamBranch(seed int64, stream string, turn int) int {
	if turn < 1 || turn > len(s.Turns) {
		return 0
	}
	if seed == 0 {
		seed = s.Seed
	}
	b, _ := s.Turns[turn-1].pick(keyedDraw(seed, "stream\x00"+stream, turn-1))
	return b
}

package workshop

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"tare/agent"
	"tare/config"
	"tare/engine"
	"tare/engine/journal"
)

// RosterResult is a plan's writers, resolved as prepare would, and the ones no run could start.
type RosterResult struct {
	Source      string   `json:"source"`
	Writers     []Writer `json:"writers"`
	Found       []string `json:"found,omitempty"`
	Unavailable []string `json:"unavailable,omitempty"`
}

// Roster lists a plan's writers; with check it finds each agent's CLI as a run would, so a
// seat that cannot start fails here rather than halfway through an experiment.
func Roster(planFile string, check bool, cfg *config.Config) (*RosterResult, error) {
	p, err := ReadPlan(planFile)
	if err != nil {
		return nil, err
	}
	out := &RosterResult{Source: planFile}
	for i, w := range p.Writers {
		n, err := normalize(p, w, i)
		if err != nil {
			return nil, fmt.Errorf("plan %s: %v", planFile, err)
		}
		if n.ID == "" {
			n.ID = writerDirName(n.Agent, n.Model)
		}
		out.Writers = append(out.Writers, n)
		if !check {
			continue
		}
		if inst, err := engine.FindWriterAgent(n.Agent, cfg); err != nil {
			out.Unavailable = append(out.Unavailable, fmt.Sprintf("%s: %v", n.ID, err))
		} else {
			out.Found = append(out.Found, fmt.Sprintf("%s: %s %s", n.ID, n.Agent, inst.Version))
		}
	}
	return out, nil
}

// follower is one writer's stream as watch has read it so far: each poll reads on from where
// the last stopped, a bounded chunk, so a writer with a huge event file costs what a small one
// does per poll.
type follower struct {
	started string
	stream  *agent.StreamFile
	done    bool
}

// Watch follows the writers: who started, which files each read and wrote, who finished.
// Their words and sizes are withheld unless words: what a writer says while it works is the
// draft's own voice, and either identifies a draft before the seal.
// With once it tells what has happened so far and returns. Once the drafts are sealed, words
// are refused until the reading is recorded: they would pair a letter with its writer.
func Watch(ctx context.Context, e *Exp, w io.Writer, words, once bool, poll time.Duration) error {
	if words && e.ReadingPending() {
		return fmt.Errorf("--words: %s; fix: watch without --words, or record the reading first (tare workshop reveal %s --reading FILE)", sealedNote, e.Root)
	}
	if once {
		fmt.Fprintf(w, "the workshop at %s so far\n", e.Root)
	} else {
		fmt.Fprintf(w, "following the workshop at %s (interrupt to stop)\n", e.Root)
	}
	if !words {
		fmt.Fprintln(w, "  the writers' words and draft sizes are withheld; --words shows them")
	}
	state := map[string]*follower{}
	for {
		lines, more := watchOnce(e, state, words)
		for _, line := range lines {
			fmt.Fprintln(w, journal.Printable(line))
		}
		if more && ctx.Err() == nil {
			// A stream longer than one look's chunk: read on at once rather than a poll later.
			continue
		}
		if once {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}

// watchOnce reads what changed since the last look, a bounded chunk of each writer's stream;
// more says a stream has bytes left for the next look.
func watchOnce(e *Exp, seen map[string]*follower, words bool) (lines []string, more bool) {
	for _, id := range e.WriterIDs() {
		s, err := e.State(id)
		if err != nil || s.StartedAt == nil {
			continue
		}
		f := seen[id]
		began := s.StartedAt.Format(time.RFC3339Nano)
		if f == nil || f.started != began {
			f = &follower{started: began, stream: &agent.StreamFile{Path: filepath.Join(e.Record(id), "events.jsonl")}}
			seen[id] = f
			lines = append(lines, fmt.Sprintf("%s  %s [%s/%s] starts writing%s", s.StartedAt.Local().Format("15:04:05"), id, s.Config.Agent, s.Config.Model, again(s)))
		}
		a, err := agent.ByName(s.Config.Agent)
		if err != nil {
			continue
		}
		_, left, _ := f.stream.Read(0, func(l []byte) {
			if live, ok := agent.ParseLine(a, l); ok {
				if t := liveLine(id, live, words); t != "" {
					lines = append(lines, t)
				}
			}
		})
		// Its end is told once its stream has been told, which a huge one takes polls for.
		more = more || left
		if !f.done && !left && (s.Status == StatusCompleted || s.Status == StatusFailed) {
			f.done = true
			took := ""
			// How long a writer took tracks its draft's size, as the report's seconds do:
			// withheld while the drafts are sealed and their reading not recorded.
			if s.EndedAt != nil && s.StartedAt != nil && !e.ReadingPending() {
				took = " after " + s.EndedAt.Sub(*s.StartedAt).Round(time.Second).String()
			}
			switch {
			case s.Status == StatusCompleted && s.StoppedAfterAnswer != nil:
				lines = append(lines, fmt.Sprintf("          %s finished%s (it answered and did not exit; stopped after %gs)", id, took, s.StoppedAfterAnswer.Grace))
			case s.Status == StatusCompleted:
				lines = append(lines, fmt.Sprintf("          %s finished%s", id, took))
			case s.StoppedByQuota || s.StoppedByLogin:
				what, _ := stopWords(map[bool]string{true: agent.StopLogin, false: agent.StopQuota}[s.StoppedByLogin])
				lines = append(lines, fmt.Sprintf("          %s stopped on %s%s", id, what, took))
			default:
				lines = append(lines, fmt.Sprintf("          %s failed%s: %s", id, took, clip(s.Error, 160)))
			}
		}
	}
	return lines, more
}

// liveLine is one tool call of a writer: the tool and the file it names, never what it wrote.
func liveLine(id string, l agent.Live, words bool) string {
	switch l.Kind {
	case agent.LiveToolStart:
		target := l.Summary
		if !words && (strings.ContainsAny(target, " \n<>|;") || len(target) > 120) {
			// A command's text may carry the draft itself: only the workspace files it names.
			target = "(command withheld)"
			if files := namedFiles(l.Summary); len(files) > 0 {
				target = "on " + strings.Join(files, " ") + " (command withheld)"
			}
		}
		return fmt.Sprintf("          %s  %s %s", id, l.Tool, target)
	case agent.LiveText:
		if words && l.Summary != "" {
			return fmt.Sprintf("          %s  says: %s", id, clip(l.Summary, 160))
		}
	}
	return ""
}

// namedFiles are the workspace paths a command names outside any quotes.
func namedFiles(cmd string) []string {
	var out []string
	for _, tok := range strings.Fields(cmd) {
		if strings.ContainsAny(tok, `'"$`+"`") {
			continue
		}
		if strings.HasPrefix(tok, "/work/") || strings.HasPrefix(tok, "drafts/") || strings.HasPrefix(tok, "input/") {
			out = append(out, tok)
		}
	}
	return out
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

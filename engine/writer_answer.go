package engine

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"tare/agent"
)

// WriterExitGrace is how long a writer whose stream carries its final answer is given to exit
// by itself before its room is stopped. A CLI writes its session's last files just after the
// answer; one still there after this waits on something else (a hook, a child it started),
// and a writer that answered is not one to wait the whole timeout for.
const WriterExitGrace = 10 * time.Second

// answerPoll is how often a running writer's stream is looked at for its final answer.
const answerPoll = 250 * time.Millisecond

// errAnswered is why a writer's room was stopped after its answer.
var errAnswered = errors.New("the writer answered and did not exit")

// AnsweredStop says that a writer answered (its stream carried the agent's final result) and
// did not exit within the grace, so tare stopped it: collected like a writer that exited.
type AnsweredStop struct {
	// Grace is how long it was given after its answer, in seconds.
	Grace float64 `json:"grace_seconds"`
	// Exit is the exit code of the stopped room (a signal's).
	Exit int `json:"exit"`
}

// answerWatch follows a running writer's stream for the agent's final result (Claude Code's
// result event, Codex's turn.completed or turn.failed, pi's agent_end, Gemini CLI's result)
// and stops the room when the writer has neither exited nor written more to its stream for
// grace after it.
type answerWatch struct {
	done    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	stopped bool
}

func watchAnswer(a agent.Agent, events string, grace time.Duration, stop context.CancelCauseFunc) *answerWatch {
	w := &answerWatch{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		f := &agent.StreamFile{Path: events}
		var answeredAt time.Time
		tick := time.NewTicker(answerPoll)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
			_, _, _ = f.Read(0, func(line []byte) {
				l, ok := agent.ParseLine(a, line)
				switch {
				case ok && l.Kind == agent.LiveResult:
					answeredAt = time.Now()
				case ok && !answeredAt.IsZero():
					// The run went on after a result (pi retries a failed answer after its
					// agent_end): it answers again or exits.
					answeredAt = time.Time{}
				case !answeredAt.IsZero():
					// Lines after the answer (Claude Code's task notices, a retry's notice): the
					// grace counts from the stream's last word.
					answeredAt = time.Now()
				}
			})
			if l, ok := agent.ParseLine(a, f.Pending()); answeredAt.IsZero() && ok && l.Kind == agent.LiveResult {
				answeredAt = time.Now()
			}
			if answeredAt.IsZero() {
				continue
			}
			if time.Since(answeredAt) >= grace {
				w.mu.Lock()
				w.stopped = true
				w.mu.Unlock()
				stop(errAnswered)
				return
			}
		}
	}()
	return w
}

// end stops following once the room has ended and says whether tare stopped it after its
// answer.
func (w *answerWatch) end() bool {
	close(w.done)
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopped
}

// streamStop reads a finished writer's stream a chunk at a time for how the provider ended it.
func streamStop(a agent.Agent, events, stderr string) (agent.ProviderStop, bool) {
	r := agent.NewStopReader(a)
	f := &agent.StreamFile{Path: events}
	for {
		_, more, err := f.Read(0, r.Line)
		if err != nil || !more {
			break
		}
	}
	r.Line(f.Pending())
	var errEnd []byte
	if !r.Decided() {
		errEnd = agent.FileEnd(stderr, 64<<10)
	}
	return r.Stop(errEnd)
}

// parseStreamFile parses a finished writer's stream from its file, never all of it in memory
// at once beyond what the agent's parser keeps.
func parseStreamFile(a agent.Agent, events string) (agent.Result, error) {
	f, err := os.Open(events)
	if err != nil {
		return agent.Result{}, err
	}
	defer f.Close()
	return a.ParseStream(f)
}

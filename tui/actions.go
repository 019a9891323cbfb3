package tui

import (
	"context"
	"fmt"
	"path/filepath"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
)

// actionKind is which engine call an actionMsg answers.
type actionKind int

const (
	probeKind actionKind = iota
	resumeKind
	retryKind
	deleteKind
	killKind
)

// actionMsg is the engine's answer to an action, addressed to its owner (a run directory or
// "probe:AGENT") so the view that asked can take it; the footer shows it either way.
type actionMsg struct {
	kind  actionKind
	owner string
	// agent is the agent a probe read.
	agent string
	what  string
	err   error
	// after is said once the action is under way (what a retry's rate keeps).
	after string
}

// act runs one engine call off the UI goroutine and reports it as an actionMsg.
func act(ctx context.Context, e Engine, a actionMsg, call func(context.Context, Engine) error) tea.Cmd {
	return func() tea.Msg {
		if e == nil {
			a.err = errReadOnly
			return a
		}
		a.err = call(ctx, e)
		return a
	}
}

func probeAction(ctx context.Context, e Engine, agent string) tea.Cmd {
	return act(ctx, e, actionMsg{kind: probeKind, owner: "probe:" + agent, agent: agent, what: "probe " + agent}, func(ctx context.Context, e Engine) error {
		return e.Probe(ctx, agent)
	})
}

func resumeAction(ctx context.Context, e Engine, dir string) tea.Cmd {
	return act(ctx, e, actionMsg{kind: resumeKind, owner: dir, what: "resume " + filepath.Base(dir)}, func(ctx context.Context, e Engine) error {
		return e.Resume(ctx, dir)
	})
}

// retryAction retries a tail; keeps, when set, says which attempt the rate keeps of it.
func retryAction(ctx context.Context, e Engine, dir, tail, keeps string) tea.Cmd {
	return act(ctx, e, actionMsg{kind: retryKind, owner: dir, what: fmt.Sprintf("retry %s of %s", tail, filepath.Base(dir)), after: keeps}, func(ctx context.Context, e Engine) error {
		return e.Retry(ctx, dir, tail)
	})
}

func deleteAction(ctx context.Context, e Engine, dir string) tea.Cmd {
	return act(ctx, e, actionMsg{kind: deleteKind, owner: dir, what: "delete " + filepath.Base(dir)}, func(ctx context.Context, e Engine) error {
		return e.Delete(ctx, dir)
	})
}

func killAction(ctx context.Context, e Engine, dir, tail string, as journal.KillAs) tea.Cmd {
	return act(ctx, e, actionMsg{kind: killKind, owner: dir, what: fmt.Sprintf("kill %s of %s", tail, filepath.Base(dir))}, func(ctx context.Context, e Engine) error {
		return e.Kill(ctx, dir, tail, as)
	})
}

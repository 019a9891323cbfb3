package tui

import (
	"context"
	"fmt"
	"path/filepath"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
)

// actionMsg is the engine's answer to an action, addressed to its owner (a run directory or
// "probe:AGENT") so the view that asked can take it; the footer shows it either way.
type actionMsg struct {
	owner string
	what  string
	err   error
	// after is said once the action is under way (what a retry's rate keeps).
	after string
}

// act runs one engine call off the UI goroutine and reports it as an actionMsg.
func act(ctx context.Context, e Engine, owner, what string, call func(context.Context, Engine) error) tea.Cmd {
	return func() tea.Msg {
		if e == nil {
			return actionMsg{owner: owner, what: what, err: errReadOnly}
		}
		return actionMsg{owner: owner, what: what, err: call(ctx, e)}
	}
}

func probeAction(ctx context.Context, e Engine, agent string) tea.Cmd {
	return act(ctx, e, "probe:"+agent, "probe "+agent, func(ctx context.Context, e Engine) error {
		return e.Probe(ctx, agent)
	})
}

func resumeAction(ctx context.Context, e Engine, dir string) tea.Cmd {
	return act(ctx, e, dir, "resume "+filepath.Base(dir), func(ctx context.Context, e Engine) error {
		return e.Resume(ctx, dir)
	})
}

// retryAction retries a tail; keeps, when set, says which attempt the rate keeps of it.
func retryAction(ctx context.Context, e Engine, dir, tail, keeps string) tea.Cmd {
	cmd := act(ctx, e, dir, fmt.Sprintf("retry %s of %s", tail, filepath.Base(dir)), func(ctx context.Context, e Engine) error {
		return e.Retry(ctx, dir, tail)
	})
	return func() tea.Msg {
		msg := cmd().(actionMsg)
		msg.after = keeps
		return msg
	}
}

func deleteAction(ctx context.Context, e Engine, dir string) tea.Cmd {
	return act(ctx, e, dir, "delete "+filepath.Base(dir), func(ctx context.Context, e Engine) error {
		return e.Delete(ctx, dir)
	})
}

func killAction(ctx context.Context, e Engine, dir, tail string, as journal.KillAs) tea.Cmd {
	return act(ctx, e, dir, fmt.Sprintf("kill %s of %s", tail, filepath.Base(dir)), func(ctx context.Context, e Engine) error {
		return e.Kill(ctx, dir, tail, as)
	})
}

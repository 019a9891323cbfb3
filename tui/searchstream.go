package tui

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"tare/engine/journal"
)

// search is one f search of a run's tails, read by its own goroutine (run), which hands the
// UI what it found so far at most every searchEvery, and once more at the end.
type search struct {
	dir, q string
	ch     chan searchMsg
	// opened is set once the reader showed it (UI goroutine only).
	opened bool
}

// searchEvery is how often a search shows its progress.
const searchEvery = 100 * time.Millisecond

// searchMsg is a search's progress: every hit so far, and how many tails it has read.
type searchMsg struct {
	s           *search
	hits        []journal.TailHit
	done, total int
	finished    bool
	err         error
}

func (s *search) run() {
	var hits []journal.TailHit
	last := time.Now()
	err := journal.SearchTailsEach(s.dir, s.q, func(done, total int, found []journal.TailHit) bool {
		hits = append(hits, found...)
		if time.Since(last) >= searchEvery && done < total {
			s.ch <- searchMsg{s: s, hits: hits[:len(hits):len(hits)], done: done, total: total}
			last = time.Now()
		}
		return true
	})
	s.ch <- searchMsg{s: s, hits: hits, finished: true, err: err}
	close(s.ch)
}

// next waits for the search's next message.
func (s *search) next() tea.Msg { return <-s.ch }

// searched shows a search's progress: the reader opens on the first message and is filled
// on each, while it is still this search's; the chain of waits ends with the search.
func (m *model) searched(msg searchMsg) tea.Cmd {
	if msg.err != nil {
		m.fail(fmt.Errorf("find %q: %v", msg.s.q, msg.err))
		return nil
	}
	title := fmt.Sprintf("Find %q in the tails of %s · %d found", msg.s.q, filepath.Base(msg.s.dir), len(msg.hits))
	if !msg.finished {
		title += fmt.Sprintf(" · %d of %d tails read…", msg.done, msg.total)
		m.note("find %q: %d of %d tails read, %d found", msg.s.q, msg.done, msg.total, len(msg.hits))
	} else if m.status != "" && strings.HasPrefix(m.status, fmt.Sprintf("find %q:", msg.s.q)) {
		m.status = ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d found\n", len(msg.hits))
	for _, h := range msg.hits {
		step := fmt.Sprintf("step %d", h.Step)
		if h.Step == 0 {
			step = "last words"
		}
		fmt.Fprintf(&b, "%-8s %-10s %-6s %s\n", h.Tail, step, h.Field, h.Line)
	}
	text := journal.Printable(strings.TrimRight(b.String(), "\n"))
	switch {
	case !msg.s.opened:
		msg.s.opened = true
		for m.page() == readerPage {
			m.pop()
		}
		m.reader = newReader(title, text)
		m.reader.search = msg.s
		m.push(readerPage)
	case m.reader != nil && m.reader.search == msg.s && m.page() == readerPage:
		y := m.reader.vp.YOffset
		m.reader.title = title
		m.reader.vp.SetContent(text)
		m.reader.vp.SetYOffset(y)
	case msg.finished:
		// The operator left its reader: the footer says what it found.
		m.note("find %q: %d found", msg.s.q, len(msg.hits))
	}
	if msg.finished {
		return nil
	}
	return msg.s.next
}

package journal

import (
	"path/filepath"
	"strings"
)

// SearchTailsEach is SearchTails tail by tail, for a reader that shows progress on a big run:
// after each tail, found gets how many tails are read, of how many, and that tail's hits
// (none is fine); it returns false to stop the search there.
func SearchTailsEach(runDir, text string, found func(done, total int, hits []TailHit) bool) error {
	events, err := ReadJournalOutline(runDir)
	if err != nil {
		return err
	}
	st := Replay(filepath.Base(runDir), events)
	q := strings.ToLower(text)
	var hits []TailHit
	find := func(tail string, step int, field, s string) {
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(strings.ToLower(l), q) {
				hits = append(hits, TailHit{Tail: tail, Step: step, Field: field, Line: strings.TrimSpace(l)})
			}
		}
	}
	for n, id := range st.Order {
		d, err := readTailDetail(runDir, st, id)
		if err != nil {
			return err
		}
		hits = nil
		for i, c := range d.Calls {
			find(id, i+1, "text", c.Before)
			find(id, i+1, "input", c.Input)
			find(id, i+1, "output", c.Output)
		}
		find(id, 0, "text", d.After)
		if !found(n+1, len(st.Order), hits) {
			return nil
		}
	}
	return nil
}

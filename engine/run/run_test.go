package run

import (
	"os"
	"path/filepath"
	"sync"
	"tare/engine/journal"
	"testing"
	"time"
)

// TestMakeFreeDirUnderRace: runs that start in the same second for folders of the same
// name (tare judge as the check of tails judged side by side: every tail's workspace is
// "work") each get a run directory of their own.
func TestMakeFreeDirUnderRace(t *testing.T) {
	parent := t.TempDir()
	now := time.Now()
	const n = 24
	dirs := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir, err := MakeFreeDir(parent, "/runs/a-0/work", now)
			if err != nil {
				t.Error(err)
			}
			dirs <- dir
		}()
	}
	wg.Wait()
	close(dirs)
	seen := map[string]bool{}
	for d := range dirs {
		if seen[d] {
			t.Errorf("two runs got %s", d)
		}
		seen[d] = true
	}
	if len(seen) != n {
		t.Errorf("%d directories for %d runs", len(seen), n)
	}
}

// TestDefaultRunFoldersAreTheirOwn: runs of one project started at once, none naming --out,
// each open a run folder of their own; none fails because another took the name it chose.
func TestDefaultRunFoldersAreTheirOwn(t *testing.T) {
	parent := t.TempDir()
	const n = 16
	dirs := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := New("", parent, "/home/someone/proj", nil)
			if err != nil {
				t.Error(err)
				return
			}
			r.Close()
			dirs <- r.Dir()
		}()
	}
	wg.Wait()
	close(dirs)
	seen := map[string]bool{}
	for d := range dirs {
		if seen[d] {
			t.Errorf("two runs got %s", d)
		}
		seen[d] = true
		if _, err := os.Stat(filepath.Join(d, journal.JournalFile)); err != nil {
			t.Errorf("run %s has no journal: %v", d, err)
		}
	}
	if len(seen) != n {
		t.Errorf("%d run folders for %d runs", len(seen), n)
	}
}

package taskset

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Set is a dataset: the task folders that loaded, and one error for each that did not.
type Set struct {
	// Dir is the dataset folder.
	Dir string
	// Tasks are the good tasks, sorted by name.
	Tasks []*Task
	// Bad holds one *Error per task folder that did not load, in name order; the rest of
	// the dataset still runs.
	Bad []error
}

// LoadSet reads the dataset dir: every folder in it is a task, except hidden ones. When globs
// are given (--task GLOB, matched against folder names), only matching folders are read. A
// bad task folder goes into Bad and does not stop the others. The error is non-nil when the
// dataset cannot be read, a glob is malformed, no folder matches, or no task loads; in the last
// case the returned Set still carries Bad, so each bad folder can be shown.
func LoadSet(dir string, globs []string) (*Set, error) {
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("--task %q: malformed pattern; use shell globs such as 'fix-*'", g)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read the dataset folder (%v); check the path", dir, errors.Unwrap(err))
	}
	s := &Set{Dir: dir}
	matched := 0
	for _, e := range entries { // ReadDir sorts by name
		name := e.Name()
		if strings.HasPrefix(name, ".") || !matches(name, globs) {
			continue
		}
		// A link to a folder is a task the dataset does not hold: Load refuses it by name.
		// Files beside the tasks (a README, a registry) are not tasks.
		if !e.IsDir() {
			if e.Type()&os.ModeSymlink == 0 {
				continue
			}
			if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && !fi.IsDir() {
				continue
			}
		}
		matched++
		t, err := Load(filepath.Join(dir, name))
		if err != nil {
			s.Bad = append(s.Bad, err)
			continue
		}
		s.Tasks = append(s.Tasks, t)
	}
	sort.Slice(s.Tasks, func(i, j int) bool { return s.Tasks[i].Name < s.Tasks[j].Name })
	switch {
	case matched == 0 && len(globs) > 0:
		return nil, fmt.Errorf("%s: no task folder matches --task %s; list the folders to check the names", dir, strings.Join(globs, " "))
	case matched == 0:
		return nil, fmt.Errorf("%s: holds no task folder; a dataset is a folder of task folders, each with instruction.md, task.toml and tests/test.sh", dir)
	case len(s.Tasks) == 0:
		return s, fmt.Errorf("%s: no task loaded (%d bad task folders); fix the folders named above", dir, len(s.Bad))
	}
	return s, nil
}

// matches says whether name is selected by globs; no globs selects every name.
func matches(name string, globs []string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

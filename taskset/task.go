// Package taskset reads task sets in Harbor's task format, the one Terminal-Bench 2 and the
// generators after it (NeMo Gym, Repo2RLEnv) emit, as described in Harbor's task documentation
// (harborframework.com, "Task Structure").
//
// A task is a folder:
//
//	instruction.md        what the agent is told (required)
//	task.toml             timeouts, verifier env, resources, free metadata (required)
//	environment/          the Dockerfile and its build context (optional)
//	tests/test.sh         the verifier; it writes reward.txt or reward.json (required)
//	solution/solve.sh     the reference solution, run by the oracle (optional)
//
// A dataset is a folder of task folders. This package only reads: it locates the files, checks
// them and hands back what the engine needs; building the environment is environ's job, running
// the verifier the engine's.
package taskset

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The files and folders of a task, by their names in the format.
const (
	InstructionFile = "instruction.md"
	ConfigFile      = "task.toml"
	EnvironmentDir  = "environment"
	TestsDir        = "tests"
	TestScript      = "tests/test.sh"
	SolutionDir     = "solution"
	SolutionScript  = "solution/solve.sh"
)

// MaxInstructionBytes caps instruction.md. Real instructions run to a few kilobytes; a file
// past this is a mistake (a data file under the wrong name) that would flood the agent's prompt.
const MaxInstructionBytes = 1 << 20

// maxConfigBytes caps task.toml for the same reason.
const maxConfigBytes = 1 << 20

// Task is one task folder, read and checked.
type Task struct {
	// Name is the folder's name, the task's name everywhere in tare.
	Name string
	// Dir is the task folder's absolute path.
	Dir string
	// Instruction is instruction.md's text.
	Instruction string
	// Config is what task.toml says.
	Config Config
	// EnvironmentDir is the absolute path of environment/, or "" when the task has none.
	EnvironmentDir string
	// Dockerfile is the absolute path of environment/Dockerfile, or "" when there is none.
	Dockerfile string
	// TestsDir is the absolute path of tests/, copied whole into the verifier's room.
	TestsDir string
	// Solution is the absolute path of solution/solve.sh, or "" when the task has no oracle.
	Solution string
}

// Error is what is wrong with one task folder: one line naming the file, the field (when there
// is one), the problem and the fix.
type Error struct {
	// Path is the file or folder at fault.
	Path string
	// Field is the TOML key at fault, or "".
	Field string
	// Problem says what is wrong.
	Problem string
	// Fix says what to do about it.
	Fix string
}

// Error formats the one line a user sees.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Problem)
	if e.Fix != "" {
		b.WriteString("; " + e.Fix)
	}
	return oneLine(b.String())
}

// oneLine folds a message onto one line, since parser messages may carry newlines.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Load reads the task folder dir. A task folder that is not whole or not safe to hand to a
// room gets an *Error: links out of the folder (and any link in tests/ or solution/, which are
// copied into the verifier's and oracle's rooms), files that are not regular files or folders,
// an oversized instruction, a task.toml that does not parse or has an unknown top-level table,
// and a missing tests/test.sh.
func Load(dir string) (*Task, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, &Error{Path: dir, Problem: err.Error()}
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return nil, &Error{Path: dir, Problem: "cannot read the task folder", Fix: "check the path"}
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, &Error{Path: dir, Problem: "is a link", Fix: "put the task folder itself in the dataset"}
	}
	if !fi.IsDir() {
		return nil, &Error{Path: dir, Problem: "is not a folder", Fix: "a task is a folder holding instruction.md, task.toml and tests/test.sh"}
	}
	if err := checkTree(abs, dir); err != nil {
		return nil, err
	}
	t := &Task{Name: filepath.Base(abs), Dir: abs}

	text, err := readCapped(abs, dir, InstructionFile, MaxInstructionBytes)
	if err != nil {
		return nil, err
	}
	t.Instruction = string(text)

	raw, err := readCapped(abs, dir, ConfigFile, maxConfigBytes)
	if err != nil {
		return nil, err
	}
	cfg, err := parseConfig(raw, filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, err
	}
	t.Config = *cfg

	if err := needRegular(abs, dir, TestScript, "add tests/test.sh: the verifier that writes /logs/verifier/reward.txt"); err != nil {
		return nil, err
	}
	t.TestsDir = filepath.Join(abs, TestsDir)

	if ok, err := exists(abs, dir, SolutionScript); err != nil {
		return nil, err
	} else if ok {
		t.Solution = filepath.Join(abs, SolutionScript)
	}
	if ok, err := exists(abs, dir, EnvironmentDir); err != nil {
		return nil, err
	} else if ok {
		t.EnvironmentDir = filepath.Join(abs, EnvironmentDir)
		if ok, err := exists(abs, dir, filepath.Join(EnvironmentDir, "Dockerfile")); err != nil {
			return nil, err
		} else if ok {
			t.Dockerfile = filepath.Join(abs, EnvironmentDir, "Dockerfile")
		}
	}
	return t, nil
}

// checkTree walks the task folder without following links and refuses what a room must not be
// handed: a link whose target leaves the folder, any link in tests/ or solution/ or among the
// files tare reads itself, and anything that is neither a regular file, a folder nor a link
// (a fifo would block the copy, a device would read the host).
func checkTree(abs, shown string) error {
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return &Error{Path: shown, Problem: err.Error()}
	}
	return filepath.WalkDir(abs, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(abs, p)
		at := filepath.Join(shown, rel)
		if err != nil {
			return &Error{Path: at, Problem: "cannot be read", Fix: "make it readable"}
		}
		mode := d.Type()
		switch {
		case mode.IsDir(), mode.IsRegular():
			return nil
		case mode&os.ModeSymlink != 0:
			top := strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]
			if top == TestsDir || top == SolutionDir || rel == InstructionFile || rel == ConfigFile {
				return &Error{Path: at, Problem: "is a link", Fix: "replace it with the file it points to"}
			}
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				return &Error{Path: at, Problem: "is a broken link", Fix: "remove it or replace it with a file"}
			}
			if target != real && !strings.HasPrefix(target, real+string(filepath.Separator)) {
				return &Error{Path: at, Problem: "links out of the task folder", Fix: "copy what it points to into the task folder"}
			}
			return nil
		default:
			return &Error{Path: at, Problem: "is not a regular file (" + mode.Type().String() + ")", Fix: "remove it from the task folder"}
		}
	})
}

// readCapped reads dir/name without following a link, refusing anything but a regular file of
// at most limit bytes.
func readCapped(dir, shown, name string, limit int64) ([]byte, error) {
	at := filepath.Join(shown, name)
	f, err := openRegular(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, &Error{Path: at, Problem: "is missing", Fix: "add " + name}
	}
	if err != nil {
		return nil, &Error{Path: at, Problem: err.Error(), Fix: "make it a regular file"}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &Error{Path: at, Problem: "cannot be read: " + err.Error()}
	}
	if int64(len(b)) > limit {
		return nil, &Error{Path: at, Problem: fmt.Sprintf("is larger than %d bytes", limit), Fix: "shorten it"}
	}
	return b, nil
}

// openRegular opens path for reading without following a link in its last component and
// without blocking on a fifo, and refuses anything but a regular file.
func openRegular(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err == unix.ELOOP {
		return nil, errors.New("is a link")
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, errors.New("is not a regular file")
	}
	return f, nil
}

// needRegular requires dir/name to be a regular file.
func needRegular(dir, shown, name, fix string) error {
	fi, err := os.Lstat(filepath.Join(dir, name))
	if err != nil {
		return &Error{Path: filepath.Join(shown, name), Problem: "is missing", Fix: fix}
	}
	if !fi.Mode().IsRegular() {
		return &Error{Path: filepath.Join(shown, name), Problem: "is not a regular file", Fix: fix}
	}
	return nil
}

// exists says whether dir/name is there; checkTree has already vetted what it is.
func exists(dir, shown, name string) (bool, error) {
	_, err := os.Lstat(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, &Error{Path: filepath.Join(shown, name), Problem: "cannot be read", Fix: "make it readable"}
	}
	return true, nil
}

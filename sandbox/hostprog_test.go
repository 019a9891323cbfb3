package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLookHostRefusesWhatAnAgentWrites: a program on PATH in a folder an agent can write is
// refused in one line naming the program, the entry and the config key, whichever way the
// folder is one (relative, empty, the working folder, a project, an activated or a plain
// virtualenv); a configured path there is refused too; a copy in a folder of its own is taken.
func TestLookHostRefusesWhatAnAgentWrites(t *testing.T) {
	root := t.TempDir()
	project, wd, venv, elsewhere := filepath.Join(root, "project"), filepath.Join(root, "wd"), filepath.Join(root, "env"), filepath.Join(root, "tools")
	plant := func(dir string) string {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "sinfo")
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plant(filepath.Join(project, ".venv", "bin"))
	plant(filepath.Join(wd, "bin"))
	plant(wd)
	plant(filepath.Join(venv, "bin"))
	if err := os.WriteFile(filepath.Join(venv, "pyvenv.cfg"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	safe := plant(elsewhere)
	t.Chdir(wd)
	key := `cluster.bin_dir = "/usr/bin"`
	for _, c := range []struct {
		name, path, entry, why string
		env                    string // VIRTUAL_ENV
	}{
		{"relative", "bin:" + elsewhere, "bin", "relative", ""},
		{"empty entry", ":" + elsewhere, ".", "relative", ""},
		{"working folder", filepath.Join(wd, "bin") + ":" + elsewhere, filepath.Join(wd, "bin"), "inside the working folder " + wd, ""},
		{"project", filepath.Join(project, ".venv", "bin") + ":" + elsewhere, filepath.Join(project, ".venv", "bin"), "inside " + project, ""},
		{"plain virtualenv", filepath.Join(venv, "bin") + ":" + elsewhere, filepath.Join(venv, "bin"), "a virtualenv's bin folder", ""},
		{"activated virtualenv", filepath.Join(venv, "bin") + ":" + elsewhere, filepath.Join(venv, "bin"), "inside the activated virtualenv " + venv, venv},
	} {
		t.Setenv("VIRTUAL_ENV", c.env)
		_, err := LookHost(HostProgram{Name: "sinfo", Key: key, Avoid: []string{project}, PATH: c.path})
		if err == nil {
			t.Errorf("%s: LookHost took sinfo from %s", c.name, c.path)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "sinfo: the PATH entry "+c.entry+" ") || !strings.Contains(msg, c.why) || !strings.Contains(msg, "fix: set "+key) || strings.Contains(msg, "\n") {
			t.Errorf("%s: the refusal does not name the program, the entry %s, why (%s) and the fix in one line: %s", c.name, c.entry, c.why, msg)
		}
	}
	t.Setenv("VIRTUAL_ENV", "")
	if got, err := LookHost(HostProgram{Name: "sinfo", Key: key, Avoid: []string{project}, PATH: "/nonexistent:" + elsewhere}); err != nil || got != safe {
		t.Errorf("LookHost = %q, %v; want %s", got, err, safe)
	}
	if _, err := LookHost(HostProgram{Name: "sinfo", Path: filepath.Join(project, ".venv", "bin", "sinfo"), Key: key, Avoid: []string{project}}); err == nil || !strings.Contains(err.Error(), "cluster.bin_dir in tare's config") {
		t.Errorf("a configured sinfo inside the project: %v", err)
	}
	if _, err := LookHost(HostProgram{Name: "tare-no-such-program", Key: key, PATH: elsewhere}); !errors.Is(err, ErrNoProgram) {
		t.Errorf("a program nowhere: %v, want ErrNoProgram", err)
	}
}

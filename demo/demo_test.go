package demo

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"tare/modelserver"
)

func TestExtractGivesAProjectTheCheckFailsAndAValidScript(t *testing.T) {
	p, err := Extract(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{p.Script, p.CliffScript, p.SwapScript} {
		if _, err := modelserver.LoadScript(script); err != nil {
			t.Fatalf("a shipped model script does not load: %v", err)
		}
	}
	check := exec.Command("/bin/sh", "-c", Check)
	check.Dir = p.Project
	if check.Run() == nil {
		t.Fatal("the check passes on the untouched project: the demo would measure nothing")
	}
	if err := os.WriteFile(filepath.Join(p.Project, "greet.sh"), []byte("#!/bin/sh\necho \"hello, tare\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	check = exec.Command("/bin/sh", "-c", Check)
	check.Dir = p.Project
	if err := check.Run(); err != nil {
		t.Fatalf("the check fails on the right answer: %v", err)
	}
}

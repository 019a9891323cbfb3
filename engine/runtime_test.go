package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/agent"
	"tare/config"
	"tare/engine/room"
	"tare/sandbox"
)

// TestStandaloneBinaryComesAlone: an agent CLI that is a standalone binary in a folder of
// other files (~/.local/bin with the operator's own scripts) is bound into the room alone:
// the CLI runs there, and nothing beside it on the host is in sight. The CLI here is a
// script that, run in the room, lists its own folder and tries the host sibling.
func TestStandaloneBinaryComesAlone(t *testing.T) {
	needRooms(t)
	bin := filepath.Join(t.TempDir(), ".local", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "deploy.sh"), []byte("export DEPLOY_TOKEN=CANARY_LOCALBIN_TOKEN\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cli := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '2.1.197 (Claude Code)'; exit 0; fi\n" +
		"echo \"ran as $0\"; ls -A \"$(dirname \"$0\")\" /opt/agent | sed 's/^/entry /'; cat \"$(dirname \"$0\")/deploy.sh\" 2>/dev/null; true\n"
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(cli), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(nil, "none")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Agents["claude"] = config.Agent{Bin: filepath.Join(bin, "claude")}
	a := agent.Claude{}
	inst, err := room.FindAgent(a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	box, _, err := room.Build(room.Plan{Agent: a, Inst: inst, Config: cfg, Workspace: t.TempDir()}, "127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	box.Argv = []string{inst.Command}
	var out strings.Builder
	box.Stdin, box.Stdout, box.Stderr = nil, &out, &out
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if code, err := room.Run(ctx, box); code != 0 || err != nil {
		t.Fatalf("room exited %d, %v: %s", code, err, out.String())
	}
	if !strings.Contains(out.String(), "ran as "+sandbox.AgentDir+"/claude") {
		t.Fatalf("the CLI did not run in the room: %q", out.String())
	}
	if strings.Contains(out.String(), "entry deploy.sh") || strings.Contains(out.String(), "CANARY_LOCALBIN_TOKEN") {
		t.Errorf("the room sees the CLI's host neighbours: %q", out.String())
	}
}

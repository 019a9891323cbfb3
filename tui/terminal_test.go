package tui

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
)

// waitOut waits for the program's output to contain every one of want.
func waitOut(t *testing.T, tm *teatest.TestModel, want ...string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		for _, w := range want {
			if !bytes.Contains(b, []byte(w)) {
				return false
			}
		}
		return true
	}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
}

// A real /bin/sh in the terminal pane: typed keys reach it (q included), its output shows,
// a resize reaches it, ctrl+] returns to the app and t goes back to the same shell.
func TestTerminalPaneRunsARealShell(t *testing.T) {
	stateDir, _, _ := demoState(t)
	stub := newStub()
	stub.attach = func(string) (*exec.Cmd, error) {
		cmd := exec.Command("/bin/sh")
		cmd.Env = []string{"PS1=sh$ ", "PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
		return cmd, nil
	}
	m := newModel(modelConfig{engine: stub, styles: asciiStyles(), agents: []string{"claude"}, probes: true})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	startBridge(t, tm, stateDir)
	waitOut(t, tm, "calibrate-demo")

	tm.Send(keyMsg("tab")) // the probes pane
	tm.Send(keyMsg("a"))   // attach the selected agent: the form asks how
	waitOut(t, tm, "Attach claude", "offline")
	tm.Send(keyMsg("ctrl+s"))
	waitOut(t, tm, "sh$ ", "ctrl+] back to tare")

	tm.Type("echo hello-$((6*7)) q-went-to-the-shell")
	tm.Send(keyMsg("enter"))
	waitOut(t, tm, "hello-42 q-went-to-the-shell")

	tm.Send(tea.WindowSizeMsg{Width: 60, Height: 20})
	tm.Type("stty size")
	tm.Send(keyMsg("enter"))
	waitOut(t, tm, "16 58") // the pane's inside: 20 rows less header, footer and border; 60 less border

	tm.Send(keyMsg("ctrl+]"))
	waitOut(t, tm, "Runs", "t terminal (claude)")

	tm.Send(keyMsg("t"))
	waitOut(t, tm, "hello-42", "16 58")

	tm.Type("exit")
	tm.Send(keyMsg("enter"))
	waitOut(t, tm, "exited · esc to close")
	tm.Send(keyMsg("esc"))
	tm.Send(keyMsg("q"))
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*model)
	final.close()
	if final.term != nil {
		t.Fatal("the exited terminal was not let go")
	}
	if calls := stub.Calls(); len(calls) != 1 || calls[0].method != "Attach" || calls[0].args[0] != "claude" || calls[0].args[1] != "true" {
		t.Fatalf("engine calls: %v", calls)
	}
}

// Closing a terminal hangs up its program and kills what ignores the hangup.
func TestTerminalCloseHangsUpThenKills(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		atLeast      time.Duration
	}{
		// perl sets the default action itself: a shell keeps a hangup ignored when the test
		// itself was started with it ignored (under nohup), and would then outlive the grace.
		{"a program that exits on hangup", `exec perl -e '$SIG{HUP} = "DEFAULT"; $| = 1; print "ready\n"; sleep 30'`, 0},
		{"a program that ignores it", "trap '' HUP; echo ready; while :; do sleep 1; done", hangupGrace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			term, err := StartTerminal("sh", exec.Command("/bin/sh", "-c", tc.script), 40, 10)
			if err != nil {
				t.Fatal(err)
			}
			// Both wait until the program runs: a hangup sent while the shell is still being
			// started is not the case under test (tare then kills after the grace, rightly).
			until(t, 30*time.Second, "the script did not start", func() bool { return strings.Contains(term.Screen(), "ready") })
			pid := term.cmd.Process.Pid
			start := time.Now()
			if err := term.Close(); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if took < tc.atLeast || took > tc.atLeast+time.Second+hangupGrace/2 {
				t.Errorf("close took %s", took)
			}
			if err := syscall.Kill(pid, 0); err == nil {
				t.Fatalf("pid %d is still there", pid)
			}
			if !term.Done() {
				t.Fatal("the terminal does not know its program ended")
			}
		})
	}
}

// A program that asks the terminal where its cursor is gets an answer (the emulator's
// replies go back to the pty), so it does not hang.
func TestTerminalAnswersQueries(t *testing.T) {
	script := `stty raw -echo; printf '\033[6n'; IFS= read -r -d R reply 2>/dev/null || reply=$(dd bs=1 count=6 2>/dev/null); stty sane; printf 'got-%s\n' "$(printf %s "$reply" | tr -d '\033[')"`
	term, err := StartTerminal("bash", exec.Command("/bin/bash", "-c", script), 40, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	until(t, 5*time.Second, "no answer to the cursor query: "+term.Screen(), func() bool {
		return strings.Contains(term.Screen(), "got-1;1")
	})
}

// startBridge follows stateDir into the test program, as Run does.
func startBridge(t *testing.T, tm *teatest.TestModel, stateDir string) {
	stub := newStub()
	done := make(chan struct{})
	ctx, cancel := contextWithCancel()
	go func() {
		defer close(done)
		newBridge(newWatcher(stateDir, nil, stub.Alive, nil), tm.GetProgram().Send).run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// A program that stops reading its terminal never stalls the app: keys typed into the pane
// (here a paste far bigger than the pty's buffer) leave Update at once, and once the queue
// is full the footer says that keys are dropped, instead of the app freezing on a write.
func TestTerminalPaneNeverWaitsForAStalledProgram(t *testing.T) {
	term, err := StartTerminal("stalled", exec.Command("/bin/sh", "-c", "stty raw -echo; echo ready; exec sleep 60"), 40, 10)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { term.Close() })
	until(t, 5*time.Second, "the program did not start: "+term.Screen(), func() bool { return strings.Contains(term.Screen(), "ready") })
	m := newModel(modelConfig{styles: asciiStyles()})
	m.Update(tea.WindowSizeMsg{Width: 60, Height: 20})
	m.Update(termStartedMsg{t: term})
	paste := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(strings.Repeat("x", 4096)), Paste: true}
	returned := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		for range 2048 { // 8 MiB: the kernel's pty buffer holds some KiB
			m.Update(paste)
		}
		returned <- time.Since(start)
	}()
	select {
	case took := <-returned:
		if took > 2*time.Second {
			t.Fatalf("2048 keys took %s in Update", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Update waited on a program that reads nothing: the app is frozen")
	}
	if !m.statusErr || !strings.Contains(m.status, "not reading") {
		t.Fatalf("the footer does not say keys were dropped: %q", m.status)
	}
}

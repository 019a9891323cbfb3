package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tare/config"
	"tare/engine/journal"
	"tare/engine/room"
	"tare/engine/run"
)

// DefaultCheckTimeout bounds a check when the run does not say.
const DefaultCheckTimeout = 10 * time.Minute

// checkPreflight refuses, before anything is started, --check-on-host without a check and a
// check room that cannot be built.
func checkPreflight(check string, onHost bool, cr run.CheckRoom, origin string) error {
	if check == "" {
		if onHost {
			return errors.New("--check-on-host: the run has no check (it was started without --check); fix: drop --check-on-host, or give the run a --check CMD")
		}
		return nil
	}
	// tare's own judge runs as tare's code, not in the check's room: its flags are checked
	// now, and the room's binds do not matter.
	if jc, ours, err := parseJudgeCheck(check); ours {
		if err != nil {
			return err
		}
		return jc.validate(check)
	}
	return cr.Validate(origin)
}

// configOrigin names the config file for an error about its [check] section.
func configOrigin(cfg *config.Config) string {
	if cfg.Path == "" {
		return "config"
	}
	return "config " + cfg.Path
}

// checkWhere is where a run's check runs, for its journal ("" without a check).
func checkWhere(rec *run.Recipe) string {
	if rec.Check == "" {
		return ""
	}
	if _, ours, _ := parseJudgeCheck(rec.Check); ours {
		return strings.Join(judgeCheckLines(), "; ")
	}
	return recipeCheckRoom(rec).String()
}

// checkReportLines says in a report where the run's check runs, a part a line, each indented.
func checkReportLines(rec *run.Recipe, indent string) string {
	if _, ours, _ := parseJudgeCheck(rec.Check); ours {
		return indent + strings.Join(judgeCheckLines(), "\n"+indent) + "\n"
	}
	return recipeCheckRoom(rec).ReportLines(indent)
}

// checkResult is a check's verdict on a finished workspace.
type checkResult struct {
	Passed bool
	// CouldNotRun: the check never ran (its room did not start): no verdict on the agent.
	CouldNotRun bool
	// Detail is one line: the exit and the last line the check printed.
	Detail string
	// Output is what the check printed (stdout and stderr together), bounded (checkLog):
	// the tail keeps it as check.log, so a failure's reason is never lost.
	Output []byte
	// Score is a judge's score when the check printed "score N".
	Score *int
	// Judge is the built-in judge's verdict, and Usage what the judge agent spent: the
	// check's spending, kept apart from the agent's.
	Judge *journal.JudgeVerdict
	Usage journal.Usage
}

var scoreLine = regexp.MustCompile(`(?m)\bscore (\d+)\b`)

// runCheck runs the user's check, a shell command, on the finished workspace dir: exit 0
// passes. The check runs what the agent wrote, so it runs in a room of its own (cr), unless
// the operator opted in to the host. A check that outlives its timeout is killed with
// everything it started (its room, or on the host its process group) and fails; the run goes
// on. A check that is exactly tare's own judge runs as tare's code (parseJudgeCheck).
func runCheck(ctx context.Context, check, dir string, timeout time.Duration, cr run.CheckRoom, cfg *config.Config) checkResult {
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if jc, ours, err := parseJudgeCheck(check); ours {
		if err != nil {
			return checkResult{CouldNotRun: true, Detail: "check could not run: " + err.Error()}
		}
		r := jc.run(cctx, dir, cfg)
		switch {
		case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
			return checkResult{Detail: fmt.Sprintf("check timed out after %s", timeout.Round(time.Second)), Usage: r.Usage}
		case ctx.Err() != nil:
			return checkResult{Detail: "check stopped: " + ctx.Err().Error(), Usage: r.Usage}
		}
		return r
	}
	var out checkLog
	var code int
	var err error
	if cr.OnHost {
		code, err = runOnHost(cctx, check, dir, &out)
	} else {
		// The room's pid namespace takes every process the check started with it.
		code, err = room.Run(cctx, cr.Room(check, dir, cfg.Bwrap, &out))
	}
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		return checkResult{Detail: fmt.Sprintf("check timed out after %s%s", timeout.Round(time.Second), cr.Mark()), Output: out.Bytes()}
	case ctx.Err() != nil:
		return checkResult{Detail: "check stopped: " + ctx.Err().Error(), Output: out.Bytes()}
	case err != nil:
		return checkResult{CouldNotRun: true, Detail: fmt.Sprintf("check could not run%s: %v", cr.Mark(), err), Output: out.Bytes()}
	}
	r := checkResult{Passed: code == 0, Detail: fmt.Sprintf("check exit %d%s", code, cr.Mark()), Output: out.Bytes()}
	text := string(r.Output)
	if last := lastLine(text); last != "" {
		r.Detail += ": " + run.Clip(last, 120)
	}
	if m := scoreLine.FindAllStringSubmatch(text, -1); len(m) > 0 {
		if n, err := strconv.Atoi(m[len(m)-1][1]); err == nil {
			r.Score = &n
		}
	}
	return r
}

// runOnHost is the --check-on-host opt-in: /bin/sh -c check in dir, in a process group of its
// own that is killed, background children included, when the check ends or ctx does.
func runOnHost(ctx context.Context, check, dir string, out io.Writer) (int, error) {
	cmd := exec.Command("/bin/sh", "-c", check)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return -1, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return -1, ctx.Err()
	}
	// A check's background children must not outlive it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, err
}

// checkLog is what a check printed, bounded: its first checkHead bytes and its last
// checkKeep, with a line between them saying how much was left out. The check runs what the
// agent wrote, which decides how much it prints; the end is where a test runner says why.
type checkLog struct {
	head, tail bytes.Buffer
	cut        int64 // bytes dropped between head and tail
}

const (
	checkHead = 16 << 10
	checkKeep = 240 << 10
)

func (l *checkLog) Write(p []byte) (int, error) {
	n := len(p)
	if room := checkHead - l.head.Len(); room > 0 {
		k := min(room, len(p))
		l.head.Write(p[:k])
		p = p[k:]
	}
	l.tail.Write(p)
	if over := l.tail.Len() - checkKeep; over > checkKeep/4 {
		// Drop in chunks, not on every write: the tail is copied once per quarter.
		rest := append([]byte(nil), l.tail.Bytes()[over:]...)
		l.tail.Reset()
		l.tail.Write(rest)
		l.cut += int64(over)
	}
	return n, nil
}

// Bytes is the log as check.log keeps it.
func (l *checkLog) Bytes() []byte {
	tail := l.tail.Bytes()
	cut := l.cut
	if over := len(tail) - checkKeep; over > 0 {
		tail, cut = tail[over:], cut+int64(over)
	}
	out := append([]byte(nil), l.head.Bytes()...)
	if cut > 0 {
		out = append(out, fmt.Sprintf("\n[tare: %d bytes of the check's output left out here]\n", cut)...)
	}
	return append(out, tail...)
}

// CheckLogFile is the check's output in a tail's folder.
const CheckLogFile = "check.log"

// checkLogLines is how many of its last lines a tail's result keeps of its check's output.
const checkLogLines = 12

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}

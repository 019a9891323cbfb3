package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultCheckTimeout bounds a check when the run does not say.
const DefaultCheckTimeout = 10 * time.Minute

// checkResult is a check's verdict on a finished workspace.
type checkResult struct {
	Passed bool
	// Detail is one line: the exit and the last line the check printed.
	Detail string
	// Score is a judge's score when the check printed "score N".
	Score *int
}

var scoreLine = regexp.MustCompile(`(?m)\bscore (\d+)\b`)

// runCheck runs the user's check, a shell command, in the finished workspace outside the
// room: exit 0 passes. A check that outlives its timeout is killed with its whole process
// group and fails; the run goes on.
func runCheck(ctx context.Context, check, dir string, timeout time.Duration) checkResult {
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command("/bin/sh", "-c", check)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return checkResult{Detail: fmt.Sprintf("check could not start: %v", err)}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return checkResult{Detail: fmt.Sprintf("check timed out after %s", timeout.Round(time.Second))}
		}
		return checkResult{Detail: "check stopped: " + ctx.Err().Error()}
	}
	// A check's background children must not outlive it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		return checkResult{Detail: fmt.Sprintf("check failed to run: %v", err)}
	}
	r := checkResult{Passed: code == 0, Detail: fmt.Sprintf("check exit %d", code)}
	if last := lastLine(out.String()); last != "" {
		r.Detail += ": " + clip(last, 120)
	}
	if m := scoreLine.FindAllStringSubmatch(out.String(), -1); len(m) > 0 {
		if n, err := strconv.Atoi(m[len(m)-1][1]); err == nil {
			r.Score = &n
		}
	}
	return r
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}

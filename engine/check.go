package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tare/config"
	"tare/engine/journal"
	"tare/engine/room"
	"tare/sandbox"
)

// DefaultCheckTimeout bounds a check when the run does not say.
const DefaultCheckTimeout = 10 * time.Minute

// checkGrace is how long a check that outlived its timeout has between SIGTERM and the kill
// of its whole room.
const checkGrace = time.Second

// CheckRoom is where a run's check runs, as recipe.json keeps it: a resume or a tail scores
// its workspaces where the run's first check was scored. The zero value is the plain room:
// the workspace at /work read-write, a fresh HOME, no variable of the operator's, no network.
type CheckRoom struct {
	// OnHost is the operator's explicit opt-in (--check-on-host) to run the check on the
	// host, as the operator, with the operator's environment, files and network.
	OnHost bool `json:"on_host,omitempty"`
	// ReadOnly and Caches are host folders bound read-only and read-write, as config [check]
	// spells them ("HOST" or "HOST:ROOM").
	ReadOnly []string `json:"read_only,omitempty"`
	Caches   []string `json:"caches,omitempty"`
	// Path is put before the room's /usr/local/bin:/usr/bin:/bin.
	Path []string `json:"path,omitempty"`
	// Env names variables of tare's environment passed in.
	Env []string `json:"env,omitempty"`
	// Network is the host's network, given by config [check] network = true.
	Network bool `json:"network,omitempty"`
}

// NewCheckRoom is the check's room from config [check], or the host when onHost.
func NewCheckRoom(cfg *config.Config, onHost bool) CheckRoom {
	if onHost {
		return CheckRoom{OnHost: true}
	}
	c := cfg.Check
	return CheckRoom{ReadOnly: c.ReadOnly, Caches: c.Caches, Path: c.Path, Env: c.Env, Network: c.Network}
}

// OnHostWarning is what tare prints on stderr before a run whose check runs on the host (the
// report and the journal say it too, in their own words).
const OnHostWarning = "the check runs ON THE HOST (--check-on-host): as you, with your environment, files and network, " +
	"so code the agent wrote can read and change anything you can"

// String says in one line where the check runs, for the journal.
func (c CheckRoom) String() string { return strings.Join(c.lines(), "; ") }

// reportLines is String for a report: one part a line, each line indented by indent.
func (c CheckRoom) reportLines(indent string) string {
	return indent + strings.Join(c.lines(), "\n"+indent) + "\n"
}

func (c CheckRoom) lines() []string {
	if c.OnHost {
		return []string{"ON THE HOST (--check-on-host): as you, with your environment, files and network"}
	}
	parts := []string{"in a room of its own: the workspace at /work read-write, a fresh home, none of your variables"}
	if c.Network {
		parts = append(parts, "network: HOST (check.network = true): host loopback and every network the host reaches")
	} else {
		parts[0] += ", no network"
	}
	for _, e := range c.ReadOnly {
		parts = append(parts, bindLine(e, "read-only"))
	}
	for _, e := range c.Caches {
		parts = append(parts, bindLine(e, "read-write"))
	}
	if len(c.Env) > 0 {
		parts = append(parts, "env: "+strings.Join(c.Env, " "))
	}
	return parts
}

func bindLine(entry, mode string) string {
	host, room := config.SplitBind(entry)
	if host == room {
		return fmt.Sprintf("%s (%s)", host, mode)
	}
	return fmt.Sprintf("%s at %s (%s)", host, room, mode)
}

// mark is what a tail's check detail adds when the check was not in the plain room.
func (c CheckRoom) mark() string {
	switch {
	case c.OnHost:
		return " (ON THE HOST)"
	case c.Network:
		return " (host network)"
	}
	return ""
}

// Validate refuses a check room that cannot be built, before anything is started: a bind
// whose host folder does not exist, or one at a path the room keeps for itself. origin names
// where the binds came from, for the one-line error.
func (c CheckRoom) Validate(origin string) error {
	if c.OnHost {
		return nil
	}
	for _, l := range []struct {
		key     string
		entries []string
		write   bool
	}{{"read_only", c.ReadOnly, false}, {"caches", c.Caches, true}} {
		for _, e := range l.entries {
			host, room := config.SplitBind(e)
			if _, err := os.Stat(host); err != nil {
				return fmt.Errorf("%s: key check.%s: %s: %v; fix: create it, or remove %q from [check]", origin, l.key, host, errors.Unwrap(err), e)
			}
			if !l.write && inUsr(host, room) {
				continue
			}
			r := sandbox.Room{Workspace: "/", Argv: []string{"/bin/sh"}, Binds: []sandbox.Bind{{Source: host, Dest: room, Write: l.write}}}
			if err := r.Validate(); err != nil {
				return fmt.Errorf("%s: key check.%s: %q: %v; fix: give it another room path, as HOST:ROOM", origin, l.key, e, strings.TrimPrefix(err.Error(), "room: "))
			}
		}
	}
	return nil
}

// checkPreflight refuses, before anything is started, --check-on-host without a check and a
// check room that cannot be built.
func checkPreflight(check string, onHost bool, cr CheckRoom, origin string) error {
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
func checkWhere(rec *Recipe) string {
	if rec.Check == "" {
		return ""
	}
	if _, ours, _ := parseJudgeCheck(rec.Check); ours {
		return strings.Join(judgeCheckLines(), "; ")
	}
	return rec.CheckRoom.String()
}

// checkReportLines says in a report where the run's check runs, a part a line, each indented.
func checkReportLines(rec *Recipe, indent string) string {
	if _, ours, _ := parseJudgeCheck(rec.Check); ours {
		return indent + strings.Join(judgeCheckLines(), "\n"+indent) + "\n"
	}
	return rec.CheckRoom.reportLines(indent)
}

// inUsr reports a read-only bind the room has already: every room holds the host's /usr
// (/usr/local/go included) read-only at the same path.
func inUsr(host, room string) bool {
	return host == room && strings.HasPrefix(filepath.Clean(host)+"/", "/usr/")
}

// room is the sandbox a check runs in: the workspace dir at /work, cwd /work.
func (c CheckRoom) room(check, dir, bwrap string, out io.Writer) sandbox.Room {
	r := sandbox.Room{
		Workspace: dir,
		Argv:      []string{"/bin/sh", "-c", check},
		Bwrap:     bwrap,
		Path:      c.Path,
		Stdout:    out,
		Stderr:    out,
		Grace:     checkGrace,
	}
	if c.Network {
		r.Network = sandbox.NetHost
	}
	for _, e := range c.ReadOnly {
		if host, room := config.SplitBind(e); !inUsr(host, room) {
			r.Binds = append(r.Binds, sandbox.Bind{Source: host, Dest: room})
		}
	}
	for _, e := range c.Caches {
		host, room := config.SplitBind(e)
		r.Binds = append(r.Binds, sandbox.Bind{Source: host, Dest: room, Write: true})
	}
	for _, name := range c.Env {
		if v, ok := os.LookupEnv(name); ok {
			if r.Env == nil {
				r.Env = map[string]string{}
			}
			r.Env[name] = v
		}
	}
	return r
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
func runCheck(ctx context.Context, check, dir string, timeout time.Duration, cr CheckRoom, cfg *config.Config) checkResult {
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
		code, err = room.Run(cctx, cr.room(check, dir, cfg.Bwrap, &out))
	}
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		return checkResult{Detail: fmt.Sprintf("check timed out after %s%s", timeout.Round(time.Second), cr.mark()), Output: out.Bytes()}
	case ctx.Err() != nil:
		return checkResult{Detail: "check stopped: " + ctx.Err().Error(), Output: out.Bytes()}
	case err != nil:
		return checkResult{CouldNotRun: true, Detail: fmt.Sprintf("check could not run%s: %v", cr.mark(), err), Output: out.Bytes()}
	}
	r := checkResult{Passed: code == 0, Detail: fmt.Sprintf("check exit %d%s", code, cr.mark()), Output: out.Bytes()}
	text := string(r.Output)
	if last := lastLine(text); last != "" {
		r.Detail += ": " + clip(last, 120)
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

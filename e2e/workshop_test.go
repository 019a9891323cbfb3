package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestWorkshopEndToEnd: three writers (the real claude, codex and pi CLIs) on tare's model
// server; codex hits a quota wall mid-draft and is resumed in its own session; collect,
// anonymize, report, reveal. The drafts under letters are the archived outputs byte for byte,
// the report pairs no letter with a writer until the reading is recorded, and the identity
// key appears in no command's output but reveal's.
func TestWorkshopEndToEnd(t *testing.T) {
	r := newRun(t, "")
	exp := filepath.Join(t.TempDir(), "exp")
	td := filepath.Join(repoDir(), "demo", "workshop")
	var outputs []string
	tare := func(args ...string) *run {
		r.tare(t, args...)
		outputs = append(outputs, r.stdout, r.stderr)
		return r
	}
	if tare("workshop", "prepare", filepath.Join(td, "plan.toml"), exp); r.code != 0 {
		t.Fatalf("prepare: %d %s", r.code, r.stderr)
	}
	const codex, claude, pi = "codex-gpt-5.1-codex", "claude-sonnet-4-5", "pi-tare-model"
	tare("workshop", "run", exp, "--timeout", "2m", "--script", filepath.Join(td, "writer.toml"),
		"--script", codex+"="+filepath.Join(td, "quota.toml"))
	var res map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 1 {
		t.Fatalf("run: exit %d, %q %v\n%s", r.code, r.stdout, err, r.stderr)
	}
	if res[codex] != "failed" || res[claude] != "completed" || res[pi] != "completed" {
		t.Fatalf("run: %v, want codex stopped by the quota wall and the others completed\n%s", res, r.stderr)
	}
	// Spend order: the economy seats before the premium one.
	if i, j := strings.Index(r.stderr, codex+" [codex"), strings.Index(r.stderr, claude+" [claude"); i < 0 || j < i {
		t.Errorf("run order: want codex (economy) before claude (premium):\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, codex+" stopped on a provider limit") {
		t.Errorf("run progress does not name the quota stop:\n%s", r.stderr)
	}
	tare("workshop", "report", exp)
	if !strings.Contains(r.stdout, `"withheld": "run anonymize first, or pass --sizes"`) || strings.Contains(r.stdout, `"declared"`) {
		t.Fatalf("report before the seal shows sizes:\n%s", r.stdout)
	}
	// watch tells who started, what they touched and how they ended, never their words.
	tare("workshop", "watch", exp, "--once")
	for _, want := range []string{claude + " [claude/claude-sonnet-4-5] starts writing", "drafts/scene.md", codex + " stopped on a provider limit", pi + " finished"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("watch --once does not say %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "Maren") || strings.Contains(r.stdout, "Reading the assignment") {
		t.Errorf("watch shows the writers' words without --words:\n%s", r.stdout)
	}
	if tare("workshop", "resume", exp, claude); r.code != 2 || !strings.Contains(r.stderr, "only a writer stopped by a provider quota wall") {
		t.Fatalf("resume of a completed writer: exit %d %s", r.code, r.stderr)
	}
	if tare("workshop", "retry", exp, codex, pi); r.code != 2 || !strings.Contains(r.stderr, "already exists") {
		t.Fatalf("retry onto an existing id: exit %d %s", r.code, r.stderr)
	}
	if tare("workshop", "resume", exp, codex, "--script", filepath.Join(td, "quota-lifted.toml")); r.code != 0 {
		t.Fatalf("resume: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	rec := filepath.Join(exp, "records", codex)
	partial, err := os.ReadFile(filepath.Join(rec, "attempts", "01", "artifacts", "scene.md"))
	if err != nil || string(partial) != "Maren climbed the eighty-two steps for the last time.\n" {
		t.Fatalf("the stopped attempt's partial draft is not archived whole: %q %v", partial, err)
	}
	events, _ := os.ReadFile(filepath.Join(rec, "attempts", "01", "events.jsonl"))
	if !strings.Contains(string(events), "Quota exceeded") {
		t.Errorf("attempt 01's events do not carry the wall:\n%s", events)
	}
	launch, _ := os.ReadFile(filepath.Join(rec, "launch.json"))
	var first, second struct {
		SessionID string `json:"session_id"`
	}
	readJSONFile(t, filepath.Join(rec, "attempts", "01", "receipt.json"), &first)
	readJSONFile(t, filepath.Join(rec, "receipt.json"), &second)
	if first.SessionID == "" || second.SessionID != first.SessionID || !strings.Contains(string(launch), `"resume"`) {
		t.Fatalf("resume did not continue the writer's own session: %q then %q, argv %s", first.SessionID, second.SessionID, launch)
	}
	final, _ := os.ReadFile(filepath.Join(exp, "writers", codex, "drafts", "scene.md"))
	if !bytes.HasPrefix(final, partial) || len(final) <= len(partial) {
		t.Fatalf("the resumed writer did not continue its draft: %q", final)
	}
	for _, id := range []string{claude, codex, pi} {
		if tare("workshop", "collect", exp, id); r.code != 0 || !strings.Contains(r.stdout, `"completed"`) {
			t.Fatalf("collect %s: exit %d %s %s", id, r.code, r.stdout, r.stderr)
		}
	}
	tare("workshop", "anonymize", exp)
	if r.code != 0 || !strings.Contains(r.stdout, `"drafts": 3`) {
		t.Fatalf("anonymize: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	for _, id := range []string{claude, codex, pi} {
		if strings.Contains(r.stdout+r.stderr, id) {
			t.Fatalf("anonymize names writer %s:\n%s%s", id, r.stdout, r.stderr)
		}
	}
	var key map[string]string
	readJSONFile(t, filepath.Join(exp, "evaluation", "identity-key.json"), &key)
	if len(key) != 3 {
		t.Fatalf("key %v", key)
	}
	for letter, id := range key {
		anon, err1 := os.ReadFile(filepath.Join(exp, "evaluation", "anon", letter+".md"))
		archived, err2 := os.ReadFile(filepath.Join(exp, "records", id, "artifacts", "scene.md"))
		if err1 != nil || err2 != nil || !bytes.Equal(anon, archived) {
			t.Fatalf("draft %s is not writer %s's archived output byte for byte (%v %v)", letter, id, err1, err2)
		}
	}
	// Sealed and unread: no size, nor the time, tokens and cost that track it; --sizes is
	// refused, and so is sealing again without --reseal.
	sizes := map[string]bool{}
	for _, id := range []string{claude, codex, pi} {
		if fi, err := os.Stat(filepath.Join(exp, "records", id, "artifacts", "scene.md")); err == nil {
			sizes[strconv.FormatInt(fi.Size(), 10)] = true
		}
	}
	tare("workshop", "report", exp)
	if r.code != 0 || strings.Contains(r.stdout, `"declared"`) || !strings.Contains(r.stdout, `"withheld": "the drafts are sealed`) ||
		strings.Contains(r.stdout, `"seconds": 0`) || strings.Contains(r.stdout, `"output": 1`) || !strings.Contains(r.stdout, `"output": null`) {
		t.Fatalf("report after the seal, before the reading, shows what pairs letters with writers:\n%s", r.stdout)
	}
	tare("workshop", "report", exp, "--table")
	for size := range sizes {
		if strings.Contains(r.stdout, "| "+size+" |") {
			t.Errorf("the sealed report --table shows a draft's size %s:\n%s", size, r.stdout)
		}
	}
	if tare("workshop", "report", exp, "--sizes"); r.code != 2 || !strings.Contains(r.stderr, "tare workshop reveal") {
		t.Errorf("report --sizes while sealed: exit %d %s", r.code, r.stderr)
	}
	if tare("workshop", "anonymize", exp); r.code != 2 || !strings.Contains(r.stderr, "--reseal") {
		t.Errorf("anonymize of a sealed experiment: exit %d %s", r.code, r.stderr)
	}
	// The reading done, reveal keeps it and opens the seal: it prints the key, so its output is
	// not among those the key must stay out of.
	reading := filepath.Join(t.TempDir(), "reading.md")
	os.WriteFile(reading, []byte("A: the stair is real. B: too long. C: the best ending.\n"), 0o644)
	if r.tare(t, "workshop", "reveal", exp, "--reading", reading); r.code != 0 || !strings.Contains(r.stdout, `"key"`) || !strings.Contains(r.stdout, "the stair is real") {
		t.Fatalf("reveal: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	tare("workshop", "report", exp)
	if r.code != 0 || !strings.Contains(r.stdout, `"declared"`) || strings.Contains(r.stdout, "withheld") {
		t.Fatalf("report after the reading withholds sizes:\n%s", r.stdout)
	}
	// What each writer ran with, as its own stream and session say, with the evidence; a
	// figure its agent does not report is unknown, never 0.
	var rep struct {
		Writers []struct {
			Writer            string `json:"writer"`
			EffortServed      string `json:"effort_served"`
			EffortEvidence    string `json:"effort_evidence"`
			Window            *int64 `json:"context_window"`
			WindowEvidence    string `json:"context_window_evidence"`
			Peak              *int64 `json:"peak_request"`
			Reasoning         *int64 `json:"reasoning"`
			ReasoningEvidence string `json:"reasoning_evidence"`
		} `json:"writers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, r.stdout)
	}
	for _, w := range rep.Writers {
		switch w.Writer {
		case codex: // asked medium, which codex's session confirms; its window and reasoning count
			if w.EffortServed != "medium" || w.Window == nil || *w.Window <= 0 || w.Reasoning == nil || !strings.Contains(w.ReasoningEvidence, "session") {
				t.Errorf("codex's report row: %+v", w)
			}
		case claude: // its result names the window; thinking is inside output, so reasoning is unknown
			if w.Window == nil || *w.Window <= 0 || w.Peak == nil || w.Reasoning != nil || !strings.HasPrefix(w.ReasoningEvidence, "unknown") || w.EffortServed != "unknown" {
				t.Errorf("claude's report row: %+v", w)
			}
		case pi: // asked high, which pi's session names as its thinking level; neither a window nor reasoning
			if w.EffortServed != "high" || w.Window != nil || !strings.HasPrefix(w.WindowEvidence, "unknown") || w.Reasoning != nil {
				t.Errorf("pi's report row: %+v", w)
			}
		}
	}
	// Claude's stream and session do not say the effort it used: its command line shows
	// it was asked with claude's own flag.
	var receipt struct{ Argv []string }
	readJSONFile(t, filepath.Join(exp, "records", claude, "receipt.json"), &receipt)
	if argv := strings.Join(receipt.Argv, " "); !strings.Contains(argv, "--effort high") {
		t.Errorf("claude was not asked its effort: %s", argv)
	}
	tare("workshop", "report", exp, "--table")
	if !strings.Contains(r.stdout, "| Window |") || !strings.Contains(r.stdout, "medium (asked medium)") {
		t.Errorf("report --table lacks the window or the effort served:\n%s", r.stdout)
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "| "+pi+" ") && (!strings.Contains(l, "| unknown |") || strings.Contains(l, "| 0 |")) {
			t.Errorf("pi's row does not say unknown where pi does not report (or says 0): %s", l)
		}
	}
	tare("workshop", "inspect", exp)
	// An archived output changed after collect is refused.
	art := filepath.Join(exp, "records", claude, "artifacts", "scene.md")
	orig, _ := os.ReadFile(art)
	os.WriteFile(art, append(orig, "An editor's line.\n"...), 0o644)
	if tare("workshop", "collect", exp, claude); r.code != 2 || !strings.Contains(r.stderr, "archived output integrity failure") {
		t.Fatalf("collect after the archive changed: exit %d %s", r.code, r.stderr)
	}
	os.WriteFile(art, orig, 0o644)
	// The key is on no command's stdout or stderr, nor in any file but its own.
	for _, out := range outputs {
		for letter, id := range key {
			for _, pair := range []string{`"` + letter + `": "` + id + `"`, letter + ".md " + id, id + " " + letter + ".md"} {
				if strings.Contains(out, pair) {
					t.Fatalf("the identity key (%s) is in a command's output:\n%s", pair, out)
				}
			}
		}
	}
	keyText, _ := os.ReadFile(filepath.Join(exp, "evaluation", "identity-key.json"))
	filepath.Walk(exp, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && p != filepath.Join(exp, "evaluation", "identity-key.json") {
			if data, _ := os.ReadFile(p); bytes.Contains(data, bytes.TrimSpace(keyText)) {
				t.Errorf("%s holds the identity key", p)
			}
		}
		return nil
	})
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("the workshop left %v", left)
	}
}

func readJSONFile(t *testing.T, p string, v any) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
}

// workshopSlowPlan has one codex writer whose model writes a partial draft, then takes two minutes.
const workshopSlowPlan = `
assignment = "Write a scene."
brief = "Read the notes."
[[files]]
path = "notes/a.md"
local_source = "a.md"
[[outputs]]
path = "drafts/scene.md"
min_bytes = 50
[[writers]]
id = "slow"
agent = "codex"
model = "gpt-5.1-codex"
`

const workshopSlowScript = `
[[turn]]
text = "Starting."
write = {path = "drafts/scene.md", content = "The first line of the scene, kept.\n"}

[[turn]]
delay = "2m"
text = "Too late."
`

func workshopSlowExp(t *testing.T, r *run) (string, string) {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("Notes.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "plan.toml"), []byte(workshopSlowPlan), 0o644)
	os.WriteFile(filepath.Join(dir, "slow.toml"), []byte(workshopSlowScript), 0o644)
	exp := filepath.Join(dir, "exp")
	if r.tare(t, "workshop", "prepare", filepath.Join(dir, "plan.toml"), exp); r.code != 0 {
		t.Fatalf("prepare: %s", r.stderr)
	}
	return exp, filepath.Join(dir, "slow.toml")
}

// TestWorkshopTimeoutKeepsPartialProse: a writer killed at the timeout keeps its partial
// draft, archived, and is failed with the reason.
func TestWorkshopTimeoutKeepsPartialProse(t *testing.T) {
	r := newRun(t, "")
	exp, script := workshopSlowExp(t, r)
	if r.tare(t, "workshop", "run", exp, "--timeout", "6s", "--script", script); r.code != 1 {
		t.Fatalf("run: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	var s struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	readJSONFile(t, filepath.Join(exp, "records", "slow", "state.json"), &s)
	if s.Status != "failed" || !strings.Contains(s.Error, "stopped at the timeout") {
		t.Fatalf("state %+v: want failed at the timeout", s)
	}
	kept, err := os.ReadFile(filepath.Join(exp, "records", "slow", "artifacts", "scene.md"))
	if err != nil || string(kept) != "The first line of the scene, kept.\n" {
		t.Fatalf("the partial draft is not archived: %q %v", kept, err)
	}
	// Not a quota wall: resume refuses and says to retry.
	if r.tare(t, "workshop", "resume", exp, "slow"); r.code != 2 || !strings.Contains(r.stderr, "no provider quota stop") || !strings.Contains(r.stderr, "retry") {
		t.Fatalf("resume of a timed-out writer: exit %d %s", r.code, r.stderr)
	}
}

// TestWorkshopCrashSafety: kill -9 of the tare running a writer leaves state inspect explains,
// a second launch is refused while the writer's process lives, and collect then retry act on
// it; no draft byte is lost.
func TestWorkshopCrashSafety(t *testing.T) {
	r := newRun(t, "")
	exp, script := workshopSlowExp(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tareBin, "workshop", "run", exp, "--timeout", "5m", "--script", script)
	cmd.Env = r.env()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	draft := filepath.Join(exp, "writers", "slow", "drafts", "scene.md")
	for {
		if fi, err := os.Stat(draft); err == nil && fi.Size() > 0 {
			break
		}
		select {
		case <-ctx.Done():
			cmd.Process.Kill()
			t.Fatal("the writer never wrote its first line")
		case <-time.After(100 * time.Millisecond):
		}
	}
	if r.tare(t, "workshop", "run", exp, "slow", "--script", script); r.code != 1 || !strings.Contains(r.stdout, "wait") {
		t.Fatalf("a second launch while the first lives: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	var s struct {
		Status string `json:"status"`
		PID    int    `json:"pid"`
	}
	readJSONFile(t, filepath.Join(exp, "records", "slow", "state.json"), &s)
	if s.Status != "running" || s.PID == 0 {
		t.Fatalf("state after kill -9: %+v, want running with the room's process on record", s)
	}
	// The room dies with the tare that ran it (its parent-death signal); wait for it.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := os.Stat("/proc/" + strconv.Itoa(s.PID)); err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.tare(t, "workshop", "inspect", exp); r.code != 0 || !strings.Contains(r.stdout, "interrupted: its process is gone") {
		t.Fatalf("inspect after kill -9 does not explain it: %s %s", r.stdout, r.stderr)
	}
	if r.tare(t, "workshop", "collect", exp, "slow"); r.code != 2 || !strings.Contains(r.stderr, "interrupted") {
		t.Fatalf("collect after kill -9: exit %d %s", r.code, r.stderr)
	}
	kept, err := os.ReadFile(filepath.Join(exp, "records", "slow", "artifacts", "scene.md"))
	if err != nil || string(kept) != "The first line of the scene, kept.\n" {
		t.Fatalf("a draft byte was lost: %q %v", kept, err)
	}
	if r.tare(t, "workshop", "retry", exp, "slow", "slow-2"); r.code != 0 {
		t.Fatalf("retry after the crash: exit %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(exp, "writers", "slow-2", "START.md")); err != nil {
		t.Fatal(err)
	}
}

// TestDemoWorkshop: tare demo workshop runs its experiment end to end offline: three writers
// completed (the quota one after its resume), the drafts sealed, and the report printed
// right after sealing withholding sizes, time, tokens and cost until the reading.
func TestDemoWorkshop(t *testing.T) {
	r := newRun(t, "")
	if r.tare(t, "demo", "workshop"); r.code != 0 {
		t.Fatalf("demo workshop: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := strings.Count(r.stdout, "| completed |"); n != 3 {
		t.Fatalf("demo workshop: %d writers completed, want 3:\n%s", n, r.stdout)
	}
	if !strings.Contains(r.stderr, "resuming codex-gpt-5.1-codex in its own session") || !strings.Contains(r.stderr, "3 drafts sealed as A, B, C") {
		t.Fatalf("demo workshop progress:\n%s", r.stderr)
	}
	// Sealed and unread: the demo's report pairs no letter with its writer by size, time,
	// tokens or cost, and says how to see them after the reading.
	if !strings.Contains(r.stdout, "Withheld: the drafts are sealed") || !strings.Contains(r.stdout, "tare workshop reveal") {
		t.Errorf("the sealed demo's report does not say what it withholds:\n%s", r.stdout)
	}
	var exp string
	for _, l := range strings.Split(r.stdout, "\n") {
		if v, ok := strings.CutPrefix(l, "experiment: "); ok {
			exp = v
		}
	}
	anon, err := os.ReadDir(filepath.Join(exp, "evaluation", "anon"))
	if err != nil || len(anon) != 3 {
		t.Fatalf("the demo's sealed drafts in %q: %v %v", exp, anon, err)
	}
	for _, a := range anon {
		fi, _ := a.Info()
		if size := fmt.Sprint(fi.Size()); strings.Contains(r.stdout, "| "+size+" |") {
			t.Errorf("the demo prints draft %s's size %s right after sealing:\n%s", a.Name(), size, r.stdout)
		}
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, "| completed |") && strings.Count(l, "| sealed ") < 8 {
			t.Errorf("a writer's row shows its time, tokens or cost while sealed: %s", l)
		}
	}
}

// TestWorkshopManualWriter: a writer by hand, pi attached on a pty in the writer's room on
// tare's model server: the operator tells it to start, it writes the draft, the operator
// leaves it, and the writer is collected; its terminal is on record and a second launch while
// it lives is refused.
func TestWorkshopManualWriter(t *testing.T) {
	r := newRun(t, "")
	exp := filepath.Join(t.TempDir(), "exp")
	td := filepath.Join(repoDir(), "demo", "workshop")
	if r.tare(t, "workshop", "prepare", filepath.Join(td, "plan.toml"), exp); r.code != 0 {
		t.Fatalf("prepare: %s", r.stderr)
	}
	const pi = "pi-tare-model"
	cmd := exec.Command(tareBin, "workshop", "manual", exp, pi, "--script", filepath.Join(td, "writer.toml"))
	cmd.Env = append(r.env(), "TERM=xterm-256color")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	scr := &screen{}
	go func() { _, _ = io.Copy(scr, tty) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		tty.Close()
	})
	// pi's footer (its context gauge; the writer's id also names tare-model): the editor is ready.
	scr.waitFor(t, "/200k", 1, 2*time.Minute)
	if r.tare(t, "workshop", "manual", exp, pi); r.code != 2 || !strings.Contains(r.stderr, "wait") {
		t.Fatalf("a second launch while the first lives: exit %d %s", r.code, r.stderr)
	}
	// No path in the message: pi's editor would open its path completion on one.
	io.WriteString(tty, "Begin the assignment now")
	scr.waitFor(t, "Begin the assignment now", 1, 30*time.Second)
	io.WriteString(tty, "\r")
	scr.waitFor(t, "The scene is in drafts/scene.md.", 1, 2*time.Minute)
	io.WriteString(tty, "\x04") // Ctrl-D: the operator leaves pi
	if code := exitCode(t, cmd, time.Minute); code != 0 {
		t.Fatalf("manual: exit %d; screen:\n%s", code, scr.buf.String())
	}
	var s struct {
		Status string `json:"status"`
		Manual bool   `json:"manual"`
	}
	readJSONFile(t, filepath.Join(exp, "records", pi, "state.json"), &s)
	if s.Status != "completed" || !s.Manual {
		t.Fatalf("state %+v: want the manual writer completed", s)
	}
	log, _ := os.ReadFile(filepath.Join(exp, "records", pi, "terminal.log"))
	if !bytes.Contains(log, []byte("Begin the assignment")) {
		t.Errorf("terminal.log does not hold the session (%d bytes)", len(log))
	}
	archived, _ := os.ReadFile(filepath.Join(exp, "records", pi, "artifacts", "scene.md"))
	if !bytes.Contains(archived, []byte("eighty-two steps")) {
		t.Errorf("the manual writer's draft is not archived: %q", archived)
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

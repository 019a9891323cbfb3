package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	charmlog "github.com/charmbracelet/log"
	"github.com/charmbracelet/x/exp/teatest"
	gossh "golang.org/x/crypto/ssh"

	"tare/config"
	"tare/workshop"
)

// manualWriterEnv makes this test binary `tare workshop manual`: EXP, WRITER, the model
// script and the state directory, one a line. The terminal pane runs it on its pty as the app
// runs tare; the code it runs is the command's own (workshop.Manual).
const manualWriterEnv = "TARE_TUI_TEST_MANUAL_WRITER"

func manualWriterMain(v string) int {
	f := strings.Split(v, "\n")
	cfg, err := writerConfig(f[3])
	if err == nil {
		var e *workshop.Exp
		if e, err = workshop.Load(f[0]); err == nil {
			o := workshop.RunOptions{Jobs: 1, Config: cfg, Scripts: map[string]string{"": f[2]}}
			var s *workshop.State
			s, err = workshop.Manual(context.Background(), e, f[1], o, OnTerminal(os.Stdin, os.Stdout), os.Stdout)
			if err == nil && s.Status != "completed" {
				err = fmt.Errorf("%s is %s", f[1], s.Status)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tare:", err)
		return 1
	}
	return 0
}

// writerConfig names this checkout's pinned pi, as the judge tests name claude.
func writerConfig(state string) (*config.Config, error) {
	cfg, err := config.Parse(nil, "none")
	if err != nil {
		return nil, err
	}
	cfg.StateDir = state
	wd, _ := os.Getwd()
	cfg.Agents["pi"] = config.Agent{Bin: filepath.Join(filepath.Dir(wd), "agents", "pi", "node_modules", ".bin", "pi")}
	return cfg, nil
}

// writerStub is the stub engine with the workshop's manual command: this test binary as
// tare workshop manual, on tare's model server with the demo's writer script.
type writerStub struct {
	*stubEngine
	state string
}

func (w writerStub) WorkshopManual(exp, writer, script string) (*exec.Cmd, error) {
	w.record("WorkshopManual", exp, writer, script)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), manualWriterEnv+"="+strings.Join([]string{exp, writer, script, w.state}, "\n"))
	return cmd, nil
}

// TestFlowWritersManualInTerminalPane: the Writers pane lists a prepared experiment below the
// state directory; m on the pi writer asks for a model script and runs the writer by hand in
// the terminal pane (the real pi CLI in its room, on tare's model server). The operator tells
// it to begin, leaves the pane (the pane shows the writer "by hand", followed from the
// writer's own state), comes back, exits pi: the writer is collected, its terminal.log kept;
// c collects it again after a confirmation; A seals the drafts, and the identity key
// appears on no screen the app drew.
func TestFlowWritersManualInTerminalPane(t *testing.T) {
	needRooms(t)
	state := t.TempDir()
	td := filepath.Join("..", "demo", "workshop")
	exp := filepath.Join(state, workshop.Dir, "exp")
	if _, err := workshop.Prepare(filepath.Join(td, "plan.toml"), exp); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs(filepath.Join(td, "writer.toml"))
	const pi = "pi-tare-model"

	stub := writerStub{newStub(), state}
	m := newModel(modelConfig{engine: stub, styles: asciiStyles(), now: time.Now, agents: []string{"pi"}, probes: true,
		workshop: true, stateDir: state})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(160, 40))
	var seen, all bytes.Buffer
	// waitLines is the package's waitLines with a deadline of its own, keeping all output.
	waitLines := func(d time.Duration, sets ...[]string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
			seen.Write(b)
			if !hasLines(seen.Bytes(), sets...) {
				return false
			}
			all.Write(seen.Bytes())
			seen.Reset()
			return true
		}, teatest.WithDuration(d), teatest.WithCheckInterval(50*time.Millisecond))
	}
	wait := func(d time.Duration, parts ...string) {
		t.Helper()
		waitLines(d, parts)
	}
	wait(10*time.Second, "exp", pi, "prepared")
	tm.Send(keyMsg("tab")) // runs → writers
	tm.Send(keyMsg("G"))   // the last writer: pi
	tm.Send(keyMsg("m"))
	wait(5*time.Second, "Write by hand: "+pi)
	tm.Type(script)
	tm.Send(keyMsg("ctrl+s"))
	wait(2*time.Minute, "writer "+pi+" · attached")
	wait(2*time.Minute, "/200k") // pi's footer: its editor is ready
	tm.Type("Begin the assignment now")
	wait(30*time.Second, "Begin the assignment now")
	tm.Send(keyMsg("enter"))
	wait(2*time.Minute, "The scene is in drafts/scene.md.")

	tm.Send(keyMsg("ctrl+]")) // leave pi to its room; the pane follows its state
	wait(10*time.Second, "exp", pi, "by hand")
	tm.Send(keyMsg("t")) // and back
	wait(10*time.Second, "writer "+pi+" · attached")
	tm.Send(keyMsg("ctrl+d")) // the operator leaves pi: the writer is collected
	wait(time.Minute, "writer "+pi+" · exited")
	tm.Send(keyMsg("esc"))
	wait(30*time.Second, "exp", pi, "completed")

	tm.Send(keyMsg("c"))
	wait(5*time.Second, "Collect "+pi+" of exp?")
	tm.Send(keyMsg("y"))
	wait(30*time.Second, pi+" collected: completed")

	tm.Send(keyMsg("A"))
	wait(5*time.Second, "Anonymize exp?")
	tm.Send(keyMsg("y"))
	// The status line and the sealed experiment's row can come in one frame.
	waitLines(30*time.Second, []string{"1 drafts sealed as A"}, []string{pi, "completed", "exp (s"})
	tm.Send(keyMsg("enter")) // the report: sizes now that it is sealed
	wait(10*time.Second, "Report · exp")

	tm.Send(keyMsg("esc"))
	tm.Send(keyMsg("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))

	rec := filepath.Join(exp, "records", pi)
	log, _ := os.ReadFile(filepath.Join(rec, "terminal.log"))
	if !bytes.Contains(log, []byte("Begin the assignment")) {
		t.Errorf("terminal.log does not hold the session (%d bytes)", len(log))
	}
	if a, _ := os.ReadFile(filepath.Join(rec, "artifacts", "scene.md")); !bytes.Contains(a, []byte("eighty-two steps")) {
		t.Errorf("the manual writer's draft is not archived: %q", a)
	}
	var key map[string]string
	data, err := os.ReadFile(filepath.Join(exp, workshop.KeyFile))
	if err != nil || json.Unmarshal(data, &key) != nil || key["A"] != pi {
		t.Fatalf("identity key %s: %v %q", workshop.KeyFile, err, data)
	}
	if l := keyShown(all.String(), key); l != "" {
		t.Errorf("a screen shows the identity key: %q", l)
	}
}

// sealedExperiment prepares the demo plan below state's workshop folder, collects two of its
// writers as external sessions (drafts written by hand into their workspaces) and seals
// them: the real collect and anonymize, and a real identity key.
func sealedExperiment(t *testing.T, state string) (exp string, key map[string]string) {
	t.Helper()
	exp = filepath.Join(state, workshop.Dir, "exp")
	if _, err := workshop.Prepare(filepath.Join("..", "demo", "workshop", "plan.toml"), exp); err != nil {
		t.Fatal(err)
	}
	e, err := workshop.Load(exp)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range e.WriterIDs()[:2] {
		// Drafts of 640 and 960 bytes: a size on a screen would name its writer.
		draft := filepath.Join(e.Work(id), e.Plan.Outputs[0].Path)
		if err := os.WriteFile(draft, bytes.Repeat([]byte("The stair had eighty-two steps. "), 20+10*i), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := workshop.Collect(e, id, &workshop.External{SessionID: "s-" + id, Model: "m", Provenance: "written by hand"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := workshop.Anonymize(e, workshop.SealOptions{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(exp, workshop.KeyFile))
	if err != nil || json.Unmarshal(data, &key) != nil || len(key) != 2 {
		t.Fatalf("identity key: %v %q", err, data)
	}
	return exp, key
}

// keyShown is a line of screen that pairs a letter of the key with its writer.
func keyShown(screen string, key map[string]string) string {
	for letter, id := range key {
		pair := regexp.MustCompile(`\b` + letter + `\b.{0,8}` + regexp.QuoteMeta(id) + `|` + regexp.QuoteMeta(id) + `.{0,8}\b` + letter + `\b`)
		for _, l := range strings.Split(screen, "\n") {
			if pair.MatchString(l) || strings.Contains(l, `"`+letter+`"`) {
				return l
			}
		}
	}
	return ""
}

// TestServeWritersPaneKeepsTheKey: over tare serve --ssh, a session's Writers pane lists a
// sealed experiment's writers and opens its report, which says what the seal withholds; no
// screen the session was sent pairs a letter with its writer.
func TestServeWritersPaneKeepsTheKey(t *testing.T) {
	charmlog.SetOutput(io.Discard)
	t.Cleanup(func() { charmlog.SetOutput(os.Stderr) })
	state := t.TempDir()
	_, key := sealedExperiment(t, state)
	operator := newKey(t)
	keys := filepath.Join(t.TempDir(), "authorized_keys")
	os.WriteFile(keys, gossh.MarshalAuthorizedKey(operator.PublicKey()), 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- serve(ctx, ln, ServeOptions{AuthorizedKeys: keys, StateDir: state, Engine: newStub(), Agents: []string{"pi"}, Log: log.New(io.Discard, "", 0)})
	}()
	t.Cleanup(func() { cancel(); <-served })
	hostKeyFile := filepath.Join(state, "ssh", "host_ed25519.pub")
	until(t, 10*time.Second, "no host key", func() bool { _, err := os.Stat(hostKeyFile); return err == nil })
	pub, _ := os.ReadFile(hostKeyFile)
	hostKey, _, _, _, err := gossh.ParseAuthorizedKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	s := openSession(t, ln.Addr().String(), operator, hostKey, "dumb")
	defer s.client.Close()
	until(t, 15*time.Second, "the sealed writers in the Writers pane", func() bool {
		return strings.Contains(s.screen(), "Writers") && strings.Count(s.screen(), "completed") >= 2
	})
	s.in.Write([]byte("\t"))
	s.in.Write([]byte("\r"))
	until(t, 15*time.Second, "the report", func() bool {
		return strings.Contains(s.screen(), "Report · exp") && strings.Contains(s.screen(), "| completed |")
	})
	// Sealed and unread: no size, and nothing that tracks one, pairs a letter with a writer.
	until(t, 15*time.Second, "the report's note on what the seal withholds", func() bool {
		return strings.Contains(strings.Join(strings.Fields(s.screen()), " "), "Withheld: the drafts are sealed")
	})
	for _, size := range []string{"640", "960"} {
		if strings.Contains(s.screen(), size) {
			t.Errorf("the sealed experiment's report shows a draft size (%s) before the reading:\n%s", size, s.screen())
		}
	}
	if l := keyShown(s.screen(), key); l != "" {
		t.Errorf("the session was sent the identity key: %q", l)
	}
}

// TestWriterReportWithholdsUntilReveal: the app's report of a sealed experiment shows no
// draft size, time, tokens or cost until the reading is recorded, and the sizes after.
func TestWriterReportWithholdsUntilReveal(t *testing.T) {
	exp, _ := sealedExperiment(t, t.TempDir())
	page := func() string {
		msg, ok := writerReport(context.Background(), newStub(), exp)().(readerMsg)
		if !ok || msg.err != nil {
			t.Fatalf("report: %+v", msg)
		}
		return msg.text
	}
	sealed := page()
	for _, size := range []string{"640", "960"} {
		if strings.Contains(sealed, size) {
			t.Errorf("the sealed report shows the draft size %s before the reading:\n%s", size, sealed)
		}
	}
	if !strings.Contains(sealed, "| sealed | sealed |") || !strings.Contains(sealed, "Withheld: the drafts are sealed") {
		t.Errorf("the sealed report does not say what it withholds:\n%s", sealed)
	}
	e, err := workshop.Load(exp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workshop.Unseal(e, "", true); err != nil {
		t.Fatal(err)
	}
	if shown := page(); !strings.Contains(shown, "| 640 |") || !strings.Contains(shown, "| 960 |") || strings.Contains(shown, "Withheld") {
		t.Errorf("the revealed report withholds the sizes:\n%s", shown)
	}
}

// writersApp is the app on a sealed experiment (sealedExperiment) with a stub engine whose
// workshop calls are the workshop's own; send hands it a message and runs what it returns
// until nothing is left. The test hands the pane its reads (no follower), and messages go to
// update, not Update: the clock's ticks are not these tests'.
func writersApp(t *testing.T) (exp string, m *model, stub writerStub, send func(tea.Msg)) {
	state := t.TempDir()
	exp, _ = sealedExperiment(t, state)
	stub = writerStub{newStub(), state}
	m = newModel(modelConfig{engine: stub, styles: asciiStyles(), now: time.Now, probes: true, workshop: true, stateDir: state})
	m.wf.close()
	m.wf = nil
	send = func(msg tea.Msg) {
		queue := []tea.Msg{msg}
		for len(queue) > 0 {
			msg, queue = queue[0], queue[1:]
			_, cmd := m.update(msg)
			queue = append(queue, run(cmd)...)
		}
	}
	send(tea.WindowSizeMsg{Width: 160, Height: 40})
	return exp, m, stub, send
}

// TestWritersRefusalsShownWhole: the Writers pane refuses, before asking anything, to resume
// a writer no quota wall stopped or to launch one that is not prepared, and collect's own
// refusal (a writer that has not run) comes back from the workshop: each on a page of its
// own, the reason and the advice whole. An archiving action asks first; n leaves all as it was.
func TestWritersRefusalsShownWhole(t *testing.T) {
	exp, m, stub, send := writersApp(t)
	press := func(k string) { send(keyMsg(k)) }
	send(loadWriters([]string{exp}))
	press("tab")
	press("G") // pi-tare-model: prepared
	refused := func(what string, parts ...string) {
		t.Helper()
		if m.page() != readerPage || m.reader.title != "Refused · "+what {
			t.Fatalf("%s: page %v, want the refusal", what, m.page())
		}
		text := m.reader.vp.View()
		for _, p := range parts {
			if !strings.Contains(strings.Join(strings.Fields(text), " "), p) {
				t.Errorf("%s: the refusal %q does not say %q", what, text, p)
			}
		}
		press("esc")
	}
	press("u")
	refused("resume pi-tare-model", "writer pi-tare-model is prepared", "provider quota wall or an expired login is resumed", "retry it as a new writer (R)")
	press("c")
	if m.confirm == nil || !strings.Contains(m.confirm.question, "Collect pi-tare-model of exp?") {
		t.Fatalf("collect did not ask first: %+v", m.confirm)
	}
	press("y")
	refused("collect pi-tare-model", "writer pi-tare-model has not run; run it first")
	press("g") // a completed writer
	press("r")
	refused("run claude-sonnet-4-5", "is completed; only a prepared writer is launched")
	press("A") // sealed already: the dialog asks to reseal and says the old key is kept
	if m.confirm == nil || !strings.Contains(m.confirm.question, "Reseal exp? It is sealed already") || !strings.Contains(m.confirm.question, "identity-key.N.json") {
		t.Fatalf("anonymize of a sealed experiment: %+v", m.confirm)
	}
	press("n")
	// Only collect's refusal is the engine's (the workshop's own); the others never reach it.
	if calls := stub.Calls(); len(calls) != 1 || calls[0].method != "WorkshopCollect" {
		t.Errorf("engine calls %v, want collect's only", calls)
	}
	if m.status != "nothing sealed" {
		t.Errorf("n on anonymize: status %q", m.status)
	}
}

// TestWriterRefusalEscapesTheWritersText: a refusal's reason can carry the writer's own text
// (a draft's name, its stream's error); the refusal page shows it escaped, never raw.
func TestWriterRefusalEscapesTheWritersText(t *testing.T) {
	m := newModel(modelConfig{engine: newStub(), styles: asciiStyles(), now: time.Now})
	m.update(tea.WindowSizeMsg{Width: 120, Height: 30})
	cmd := m.writerDone(writerDoneMsg{act: actCollect, id: "w1", err: errors.New("symlink in drafts/\x1b]52;c;cHduZWQ=\x07")})
	for _, msg := range run(cmd) {
		m.update(msg)
	}
	if m.page() != readerPage {
		t.Fatalf("page %v, want the refusal", m.page())
	}
	if v := m.reader.vp.View(); strings.ContainsAny(v, "\x07") || strings.Contains(v, "\x1b]52") || !strings.Contains(v, `\x1b]52`) {
		t.Fatalf("the refusal page shows the writer's escape raw: %q", v)
	}
}

// TestWritersRetryStagesThroughTheEngine: R on a writer asks the engine which id the retry
// takes (the writers on disk decide it), names it in the confirmation, and y stages it
// through the engine: the answer says which writer took which one's seat, and a second
// retry of the same writer takes the next free id.
func TestWritersRetryStagesThroughTheEngine(t *testing.T) {
	exp, m, stub, send := writersApp(t)
	press := func(k string) { send(keyMsg(k)) }
	const old = "claude-sonnet-4-5"
	press("tab")
	for _, want := range []string{old + "-retry", old + "-retry2"} {
		send(loadWriters([]string{exp}))
		selectRow(t, m.home.writers.t, exp+"\x00"+old)
		press("R")
		if m.confirm == nil || !strings.Contains(m.confirm.question, "as a new writer "+want+"?") {
			t.Fatalf("retry's confirmation does not name %s: %+v (status %q)", want, m.confirm, m.status)
		}
		press("y")
		if m.status != want+" staged in place of "+old+"; r runs it" {
			t.Errorf("after the retry: status %q", m.status)
		}
	}
	var staged []string
	for _, c := range stub.Calls() {
		if c.method == "WorkshopRetry" {
			staged = append(staged, strings.Join(c.args[1:], " "))
		}
	}
	if strings.Join(staged, ", ") != old+" "+old+"-retry, "+old+" "+old+"-retry2" {
		t.Errorf("the engine staged %q", staged)
	}
	e, err := workshop.Load(exp)
	if err != nil {
		t.Fatal(err)
	}
	if ids := strings.Join(e.WriterIDs(), " "); !strings.Contains(ids, old+"-retry2") {
		t.Errorf("writers on disk: %s", ids)
	}
}

package tui

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	charmlog "github.com/charmbracelet/log"
	gossh "golang.org/x/crypto/ssh"

	"tare/engine/journal"
)

// sshClient is one operator's ssh session on the app, reading its screen.
type sshClient struct {
	client *gossh.Client
	sess   *gossh.Session
	in     io.WriteCloser
	mu     sync.Mutex
	out    bytes.Buffer
}

func (c *sshClient) screen() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

func newKey(t testing.TB) gossh.Signer {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func dial(addr string, key gossh.Signer, hostKey gossh.PublicKey) (*gossh.Client, error) {
	return gossh.Dial("tcp", addr, &gossh.ClientConfig{
		User:            "operator",
		Auth:            []gossh.AuthMethod{gossh.PublicKeys(key)},
		HostKeyCallback: gossh.FixedHostKey(hostKey),
		Timeout:         5 * time.Second,
	})
}

func openSession(t testing.TB, addr string, key gossh.Signer, hostKey gossh.PublicKey, term string) *sshClient {
	t.Helper()
	client, err := dial(addr, key, hostKey)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	c := &sshClient{client: client, sess: sess}
	if err := sess.RequestPty(term, 30, 110, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	c.in, _ = sess.StdinPipe()
	out, _ := sess.StdoutPipe()
	go func() {
		buf := make([]byte, 32<<10)
		answered := 0
		for {
			n, err := out.Read(buf)
			c.mu.Lock()
			c.out.Write(buf[:n])
			// Answer the server's terminal queries as a terminal does: its background
			// colour (OSC 11) and its device attributes (DA1), which end the query.
			if q := bytes.Count(c.out.Bytes(), []byte("\x1b[c")); q > answered {
				answered = q
				c.in.Write([]byte("\x1b]11;rgb:1e1e/1e1e/1e1e\x1b\\\x1b[?62;22c"))
			}
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	return c
}

// Every authorized operator gets the app on the same state over ssh, each session with its
// own renderer (colours for one terminal, none for a dumb one); an unknown key is refused;
// a session that quits or drops leaves the runs as they were.
func TestServeOverSSH(t *testing.T) {
	// wish logs a program ended by its session to charm's default logger: not news here.
	charmlog.SetOutput(io.Discard)
	t.Cleanup(func() { charmlog.SetOutput(os.Stderr) })
	stateDir, cal, _ := demoState(t)
	journal := filepath.Join(cal, journal.JournalFile)
	before, _ := os.ReadFile(journal)

	operator, stranger := newKey(t), newKey(t)
	keys := filepath.Join(t.TempDir(), "authorized_keys")
	os.WriteFile(keys, append([]byte("# the operators\n"), gossh.MarshalAuthorizedKey(operator.PublicKey())...), 0o600)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stub := newStub()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- serve(ctx, ln, ServeOptions{AuthorizedKeys: keys, StateDir: stateDir, Engine: stub, Agents: []string{"claude"}, Project: demoProject, Log: log.New(io.Discard, "", 0)})
	}()
	hostKeyFile := filepath.Join(stateDir, "ssh", "host_ed25519.pub")
	until(t, 10*time.Second, "no host key was generated in the state directory", func() bool {
		_, err := os.Stat(hostKeyFile)
		return err == nil
	})
	pub, _ := os.ReadFile(hostKeyFile)
	hostKey, _, _, _, err := gossh.ParseAuthorizedKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()

	if _, err := dial(addr, stranger, hostKey); err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
		t.Fatalf("an unknown key got in (or failed otherwise): %v", err)
	}

	colour := openSession(t, addr, operator, hostKey, "xterm-256color")
	plain := openSession(t, addr, operator, hostKey, "dumb")
	for _, c := range []*sshClient{colour, plain} {
		deadline := time.Now().Add(15 * time.Second)
		for s := c.screen(); !strings.Contains(s, "Probes") || !strings.Contains(s, "calibrate-demo") || !strings.Contains(s, "tare: 0.00"); s = c.screen() {
			if time.Now().After(deadline) {
				t.Fatalf("the home screen did not come over ssh; the session shows %q", s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !strings.Contains(colour.screen(), "\x1b[38;5;") {
		t.Error("the xterm-256color session has no 256-colour styles")
	}
	if strings.Contains(plain.screen(), "\x1b[38;") {
		t.Error("the dumb session got colours")
	}

	// One operator quits with q, the other's connection drops.
	colour.in.Write([]byte("q"))
	waited := make(chan error, 1)
	go func() { waited <- colour.sess.Wait() }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("q did not end the ssh session")
	}
	colour.client.Close()
	plain.client.Close()

	// The server still serves, the runs are untouched and the engine was never asked.
	again := openSession(t, addr, operator, hostKey, "xterm")
	until(t, 15*time.Second, "no home screen after the others left", func() bool { return strings.Contains(again.screen(), "calibrate-demo") })
	again.client.Close()
	if after, _ := os.ReadFile(journal); !bytes.Equal(before, after) {
		t.Error("a session changed the run's journal")
	}
	if calls := stub.Calls(); len(calls) != 0 {
		t.Errorf("sessions called the engine: %v", calls)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop with its context")
	}
}

func TestServeRefusesWithoutAuthorizedKeys(t *testing.T) {
	for _, keys := range []string{"", filepath.Join(t.TempDir(), "missing")} {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		err := serve(context.Background(), ln, ServeOptions{AuthorizedKeys: keys, StateDir: t.TempDir(), Log: log.New(io.Discard, "", 0)})
		if err == nil || !strings.Contains(err.Error(), "fix:") {
			t.Errorf("keys %q: %v", keys, err)
		}
	}
}

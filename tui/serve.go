package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/ssh"
	"github.com/charmbracelet/wish"
	"github.com/charmbracelet/wish/activeterm"
	"github.com/charmbracelet/wish/bubbletea"
	"github.com/muesli/termenv"
)

// ServeOptions configure `tare serve --ssh ADDR`.
type ServeOptions struct {
	// Addr is where the ssh server listens, e.g. 127.0.0.1:2222.
	Addr string
	// AuthorizedKeys is an authorized_keys file: only its keys get in. It is read at each
	// login, so a key added or removed counts from the next connection.
	AuthorizedKeys string
	// StateDir is the state every session shows (and where the host key lives).
	StateDir string
	// HostKey is the server's private key; generated (ed25519) when missing. Default:
	// <state>/ssh/host_ed25519.
	HostKey string
	Engine  Engine
	Agents  []string
	// Project is the folder the sessions' probes act on: the probes pane shows its readings.
	Project string
	// Log receives connections and errors; default stderr (the server has no UI of its own).
	Log *log.Logger
	// pollOnly keeps the sessions polling, without inotify (the idle benchmark's baseline).
	pollOnly bool
}

// Serve gives every ssh session the app on the same state directory, each with its own
// program, renderer and colour profile, until ctx ends. A session that ends (or drops)
// takes nothing with it but its own view and terminal pane: runs belong to the engine.
func Serve(ctx context.Context, o ServeOptions) error {
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("tare serve --ssh %s: %v; fix: choose a free address", o.Addr, err)
	}
	return serve(ctx, ln, o)
}

func serve(ctx context.Context, ln net.Listener, o ServeOptions) error {
	if o.Log == nil {
		o.Log = log.New(os.Stderr, "tare serve: ", log.LstdFlags)
	}
	if o.StateDir == "" {
		ln.Close()
		return errors.New("tare serve: no state directory; fix: set state_dir in the config")
	}
	if o.AuthorizedKeys == "" {
		ln.Close()
		return errors.New("tare serve: no authorized keys file; fix: pass --authorized-keys FILE (one public key per line, as ~/.ssh/authorized_keys)")
	}
	if _, err := os.Stat(o.AuthorizedKeys); err != nil {
		ln.Close()
		return fmt.Errorf("tare serve: --authorized-keys %s: %v; fix: give a file of public keys (as ~/.ssh/authorized_keys)", o.AuthorizedKeys, err)
	}
	if o.HostKey == "" {
		o.HostKey = filepath.Join(o.StateDir, "ssh", "host_ed25519")
	}
	if err := os.MkdirAll(filepath.Dir(o.HostKey), 0o700); err != nil {
		ln.Close()
		return fmt.Errorf("tare serve: host key folder %s: %v", filepath.Dir(o.HostKey), err)
	}
	srv, err := wish.NewServer(
		wish.WithHostKeyPath(o.HostKey),
		wish.WithAuthorizedKeys(o.AuthorizedKeys),
		wish.WithMiddleware(
			bubbletea.MiddlewareWithProgramHandler(sessionProgram(o), termenv.Ascii),
			activeterm.Middleware(),
			logSessions(o.Log),
		),
	)
	if err != nil {
		ln.Close()
		return fmt.Errorf("tare serve: %v (host key %s)", err, o.HostKey)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	o.Log.Printf("listening on %s (keys from %s)", ln.Addr(), o.AuthorizedKeys)
	select {
	case err := <-errc:
		if errors.Is(err, ssh.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("tare serve: %v", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
		<-errc
		return nil
	}
}

// sessionFPS is the frame rate of an ssh session's renderer.
const sessionFPS = 20

// sessionProgram makes one session's program: its own renderer (the client's terminal and
// colour profile), its own model and its own bridge, stopped with the session.
func sessionProgram(o ServeOptions) bubbletea.ProgramHandler {
	return func(s ssh.Session) *tea.Program {
		ctx := s.Context()
		logger := log.New(io.Discard, "", 0)
		pty, _, _ := s.Pty()
		noColor := false
		for _, kv := range s.Environ() {
			if v, ok := strings.CutPrefix(kv, "NO_COLOR="); ok && v != "" {
				noColor = true
			}
		}
		m := newModel(modelConfig{
			ctx: ctx, engine: o.Engine, styles: sessionStyles(bubbletea.MakeRenderer(s), pty.Term, noColor), log: logger,
			agents: o.Agents, probes: true, project: o.Project, remote: true, workshop: true, stateDir: o.StateDir,
		})
		// A session's renderer wakes at its frame rate whatever the app shows: at the
		// default 60 a second, five idle sessions cost more than all the following of the
		// journals. sessionFPS frames still show a key within a frame, well under the
		// network's own delay.
		opts := append(bubbletea.MakeOptions(s), tea.WithAltScreen(), tea.WithMouseCellMotion(), tea.WithContext(ctx), tea.WithFPS(sessionFPS))
		p := tea.NewProgram(m, opts...)
		m.clock.pace = newPacer(p)
		var alive func(string) bool
		if o.Engine != nil {
			alive = o.Engine.Alive
		}
		w := newWatcher(o.StateDir, nil, alive, logger)
		w.noNotify = o.pollOnly
		b := newBridge(w, p.Send)
		go func() {
			b.run(ctx)
			// The session is over; once its program has returned, hang up its terminal pane.
			// (activeterm turns away sessions without a pty before this handler runs, so
			// every program made here is run.)
			p.Wait()
			m.close()
		}()
		return p
	}
}

// logSessions logs each session's start and end.
func logSessions(l *log.Logger) wish.Middleware {
	return func(next ssh.Handler) ssh.Handler {
		return func(s ssh.Session) {
			start := time.Now()
			l.Printf("%s@%s: session started", s.User(), s.RemoteAddr())
			next(s)
			l.Printf("%s@%s: session ended after %s", s.User(), s.RemoteAddr(), span(time.Since(start)))
		}
	}
}

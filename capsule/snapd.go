package capsule

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// SnapSocket is where `tare snap-watch` serves inside a room; `tare snap` asks it first.
const SnapSocket = "/tmp/.tare-snap.sock"

// WatchMain is the in-room command `tare snap-watch --store DIR [--base DIR] --work DIR
// [--socket PATH] -- CMD ARGS` (--store and --base as for tare snap): it watches the workspace with inotify from before CMD starts, serves
// snapshot requests on a unix socket, runs CMD (the agent) and exits with its code. A
// `tare snap` run by the agent's hook then costs what changed since the last capsule (the
// watcher's dirty paths, SnapWatched) instead of a walk of the whole workspace. Without a
// watcher (inotify refused) CMD still runs and every snap walks.
func WatchMain(args []string) int {
	flags := flag.NewFlagSet("tare snap-watch", flag.ContinueOnError)
	store := flags.String("store", "/tare-run", "the capsule store folder (with --base: the staging store)")
	base := flags.String("base", "", "the run's store, read only: --store stages over it")
	work := flags.String("work", "/work", "the workspace to watch")
	socket := flags.String("socket", SnapSocket, "where to serve snapshot requests")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	argv := flags.Args()
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "tare snap-watch: want a command after --")
		return 2
	}
	if stop, err := serveSnaps(*store, *base, *work, *socket); err != nil {
		fmt.Fprintf(os.Stderr, "tare snap-watch: %v; every capsule will walk the workspace\n", err)
	} else {
		defer stop()
	}
	return runChild(argv)
}

// serveSnaps opens the store, starts the watcher and serves requests until stop.
func serveSnaps(storeDir, base, work, socket string) (stop func(), err error) {
	s, err := openLayered(storeDir, base)
	if err != nil {
		return nil, err
	}
	w, err := NewWatcher(work)
	if err != nil {
		return nil, err
	}
	if err := s.keepSpares(); err != nil {
		w.Close()
		return nil, err
	}
	_ = os.Remove(socket)
	ln, err := net.Listen("unix", socket)
	if err != nil {
		w.Close()
		s.spares.close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex // one capsule at a time: each builds on the one before
	snapID := func(id string) error {
		mu.Lock()
		_, err := s.SnapWatched(ctx, w, id)
		mu.Unlock()
		if err == nil {
			// The files of the next capsule are made now, while the agent goes on.
			s.spares.refillLater()
		}
		return err
	}
	// Hooks ask through FIFOs first (hookfifo.go); without them they come to the socket.
	stopHooks, err := serveHooks(hookDir(socket), snapID)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tare snap-watch: %v; each hook starts tare snap to ask\n", err)
		stopHooks = func() {}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				id, err := bufio.NewReader(conn).ReadString('\n')
				if err != nil {
					return
				}
				if err := snapID(strings.TrimSpace(id)); err != nil {
					fmt.Fprintf(conn, "error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
					return
				}
				fmt.Fprintln(conn, "ok")
			}()
		}
	}()
	return func() {
		ln.Close()
		stopHooks()
		cancel()
		wg.Wait()
		w.Close()
		s.spares.close()
		os.Remove(socket)
	}, nil
}

// runChild runs argv with this process's stdio, passes on the signals a terminal or a
// supervisor sends, and returns its exit code (128+signal when a signal ended it).
func runChild(argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGWINCH)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "tare snap-watch: %v\n", err)
		return 127
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				_ = cmd.Process.Signal(sig)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return 1
	}
	return 0
}

// askWatcher asks a running snap-watch for capsule id; ok is false when none answers or it
// failed, and the caller then walks the workspace itself.
func askWatcher(socket, id string) bool {
	conn, err := net.DialTimeout("unix", socket, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	if _, err := fmt.Fprintln(conn, id); err != nil {
		return false
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.TrimSpace(reply) == "ok"
}

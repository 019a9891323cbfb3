package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tare/config"
	"tare/engine/journal"
	"tare/engine/run"
)

// TestWorkerOnANodeWithoutUserNamespaces: a node whose bwrap cannot create the room's
// namespaces ends its tail with no verdict, saying which node and why, with the fix; it does
// not run the agent (here, a bwrap that answers --version and refuses every room, as one
// does where unprivileged user namespaces are off).
func TestWorkerOnANodeWithoutUserNamespaces(t *testing.T) {
	dir := t.TempDir()
	bwrap := filepath.Join(dir, "bwrap")
	os.WriteFile(bwrap, []byte("#!/bin/sh\n[ \"$1\" = --version ] && { echo 'bubblewrap 0.8.0'; exit 0; }\n"+
		"echo 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces' >&2\nexit 1\n"), 0o755)
	x := filepath.Join(dir, "x")
	os.MkdirAll(x, 0o755)
	job := slurmJob{Spec: tailSpec{ID: "a-0", Side: journal.Side{Key: "a", Agent: "pi"}, How: "fresh"}, Recipe: &run.Recipe{},
		Config: &config.Config{Bwrap: bwrap, StateDir: dir}, Store: filepath.Join(dir, "store")}
	data, _ := json.Marshal(job)
	os.WriteFile(filepath.Join(x, "job.json"), data, 0o600)
	t.Setenv("SLURMD_NODENAME", "n7")
	if err := Worker(context.Background(), filepath.Join(x, "job.json")); err != nil {
		t.Fatal(err)
	}
	var res slurmResult
	data, err := os.ReadFile(filepath.Join(x, "result.json"))
	if err != nil || json.Unmarshal(data, &res) != nil {
		t.Fatalf("no result written: %v", err)
	}
	r := res.Result
	if r.Status != journal.StatusNoVerdict || r.Reason != ReasonNodeUnfit || !strings.Contains(r.AgentExit, "node n7") ||
		!strings.Contains(r.AgentExit, "namespaces") || !strings.Contains(r.AgentExit, "--exclude") {
		t.Fatalf("result %+v: want no verdict, node-unfit, naming node n7, the namespaces and the fix", r)
	}
	if _, err := os.Stat(filepath.Join(x, "worker")); err == nil {
		t.Fatalf("the worker went on to run the tail on an unfit node")
	}
}

// TestSlurmStates: squeue's lines are read by field, and only the states in which Slurm, not
// the agent, ended a job override the worker's result.
func TestSlurmStates(t *testing.T) {
	jobs := parseSqueue([]byte("12|RUNNING|n2|2026-11-30T22:00:00|2026-11-30T22:00:03\n13|PENDING|(Resources)|2026-11-30T22:00:01|N/A\n"))
	if j := jobs["12"]; j.State != "RUNNING" || j.Node != "n2" || j.waited(time.Now()) != 3*time.Second || !j.running() || j.done() {
		t.Errorf("job 12: %+v", j)
	}
	if j := jobs["13"]; j.Node != "" || j.running() || j.done() {
		t.Errorf("job 13: %+v", j)
	}
	for state, want := range map[string]journal.Reason{"OUT_OF_MEMORY": ReasonOutOfMemory, "TIMEOUT": ReasonTimeLimit, "NODE_FAIL": ReasonNodeFailure,
		"CANCELLED": ReasonCancelled, "COMPLETED": "", "FAILED": ""} {
		if r, _, ok := slurmVerdict(state); r != want || ok != (want != "") {
			t.Errorf("%s: %q %v, want %q", state, r, ok, want)
		}
	}
}

// TestQueueWaitIsNotRunTime: a tail that waited 30 s in a cluster's queue and ended 40 s
// after it started ran for 10 s in the report's times.
func TestQueueWaitIsNotRunTime(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)
	st := journal.Replay("run", []journal.Event{
		{Seq: 1, Time: t0, TailStarted: &journal.TailStarted{ID: "a-0", Side: "a", How: "fresh"}},
		{Seq: 2, Time: t0, Placed: &journal.Placed{Tail: "a-0", Job: "7", State: "pending"}},
		{Seq: 3, Time: t0.Add(30 * time.Second), Placed: &journal.Placed{Tail: "a-0", Job: "7", State: "running", Node: "n1", Waited: 30}},
		{Seq: 4, Time: t0.Add(40 * time.Second), TailFinished: &journal.TailFinished{ID: "a-0", Status: journal.StatusPassed, Passed: true}},
	})
	times, _ := sideTimes(st, "a")
	if len(times) != 1 || times[0] != 10*time.Second {
		t.Fatalf("run times %v, want [10s]", times)
	}
	if p := st.Tails["a-0"].Place; p == nil || p.Node != "n1" || p.State != "running" {
		t.Fatalf("place %+v", p)
	}
}

// TestCallbackAddrForwardsToTheModelServer: nodes that are other machines cannot dial tare's
// model server on loopback; with [cluster] callback_addr set to an address of this machine,
// a tail's upstream is a forwarder there, which reaches the loopback server for a worker
// that opens with the forward's token (through its end on the node's loopback), and for no
// one else: a connection without the token, or with another, is closed unanswered.
func TestCallbackAddrForwardsToTheModelServer(t *testing.T) {
	var ip string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			ip = n.IP.String()
			break
		}
	}
	if ip == "" {
		t.Fatal("this machine has no IPv4 address besides loopback to listen on")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	b := &slurmBackend{cluster: config.Cluster{CallbackAddr: ip}}
	addr, token, stop, err := b.reachable(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if host, _, _ := net.SplitHostPort(addr); host != ip || len(token) != 64 {
		t.Fatalf("upstream %s (token %q), want a forwarder on %s with a token", addr, token, ip)
	}
	echo := func(addr, hello string) (string, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(forwardWait + 5*time.Second))
		c.Write([]byte(hello + "ping\n"))
		got := make([]byte, 5)
		_, err = io.ReadFull(c, got)
		return string(got), err
	}
	other := strings.Repeat("0", 64)
	for _, hello := range []string{"GET /v1/models HTTP/1.1\r\nHost: tare\r\nUser-Agent: anyone on the network\r\nAccept: */*\r\n\r\n", forwardHello + other, forwardHello + token[:63]} {
		if got, err := echo(addr, hello); err == nil {
			t.Errorf("opening with %q, the forwarder relayed (%q): the model server is open to the network", hello, got)
		}
	}
	node, stopNode, err := nodeForward(addr, token)
	if err != nil {
		t.Fatal(err)
	}
	defer stopNode()
	if got, err := echo(node, ""); err != nil || got != "ping\n" {
		t.Fatalf("through the worker's end and the forwarder: %q %v", got, err)
	}
	// Another user of the node dialling the worker's end gets nothing: the token is added
	// only for the worker's own uid.
	dir, err := os.MkdirTemp("", "tare-echo-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "engine.test")
	data, err := os.ReadFile(os.Args[0])
	if err == nil {
		err = os.WriteFile(bin, data, 0o755)
	}
	if err != nil || os.Chmod(dir, 0o755) != nil {
		t.Fatalf("a copy of the test binary another user can run: %v", err)
	}
	stranger := exec.Command(bin)
	stranger.Env = []string{"TARE_TEST_ECHO_DIAL=" + node}
	stranger.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := stranger.CombinedOutput()
	if !strings.HasPrefix(string(out), "dialled\n") {
		t.Fatalf("the test could not dial as user nobody (this test runs as root, as CI does): %v %q", err, out)
	}
	if err == nil || strings.Contains(string(out), "ping") {
		t.Errorf("user nobody reached the model server through the worker's end: %v %q", err, out)
	}
	if same, tok, _, _ := (&slurmBackend{}).reachable(ln.Addr().String()); same != ln.Addr().String() || tok != "" {
		t.Fatalf("without callback_addr the upstream changed to %s (token %q)", same, tok)
	}
}

// echoDialMain dials addr, sends a line and exits 0 when it comes back: another user on a
// node, for TestCallbackAddrForwardsToTheModelServer.
func echoDialMain(addr string) int {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	defer c.Close()
	fmt.Println("dialled")
	c.SetDeadline(time.Now().Add(forwardWait + 5*time.Second))
	c.Write([]byte("ping\n"))
	got := make([]byte, 5)
	if _, err := io.ReadFull(c, got); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Print(string(got))
	return 0
}

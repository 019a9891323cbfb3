package sandbox

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

var churnKills = flag.Int("sandbox.churn", 8, "how many times TestKillWhileRoomsStart kills a process starting rooms (the closing note's figure: 200)")

// churnMain runs in a test child: three goroutines start and kill rooms without
// pause, so that a SIGKILL of this process lands in every phase of a room's
// start, the setup windows included.
func churnMain() int {
	marker := os.Getenv(markerEnv)
	for range 3 {
		go func() {
			for {
				r := Room{Workspace: os.Getenv(wsEnv), Argv: []string{"/bin/sh", "-c", "exec -a " + marker + "-cmd sleep 1000"}}
				if os.Getenv(mutateEnv) == "lifeline" {
					r.noLifeline = true
				}
				p, err := Start(context.Background(), r)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				_ = p.Kill()
				p.Wait()
			}
		}()
	}
	select {}
}

// TestKillWhileRoomsStart SIGKILLs a process that starts rooms back to back,
// at a random moment, and requires that nothing of its rooms outlives it but
// a room stranded in bwrap's own setup, which the next tare sweeps. Before
// rooms had a lifeline and bwrap armed its own parent-death signal, 4 kills
// in 100 left a bwrap blocked forever in a room's setup.
//
//	go test ./sandbox -run TestKillWhileRoomsStart -v -sandbox.churn=200
func TestKillWhileRoomsStart(t *testing.T) {
	requireBwrap(t)
	setStrandedAge(t, 0)
	left := map[string]int{}
	swept := 0
	for range *churnKills {
		marker := "tare-churn-" + randHex(6)
		t.Cleanup(func() { killMarker(marker) })
		cmd := exec.Command(testBinary(t), "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=churn", markerEnv+"="+marker, wsEnv+"="+t.TempDir())
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return len(markerProcs(marker)) > 0 }, "the child's first room")
		time.Sleep(time.Duration(50+rand.IntN(300)) * time.Millisecond) // a random moment to kill, not a wait for a result
		cmd.Process.Kill()
		cmd.Wait()
		// What the next tare's first room start does (see sweepStranded).
		swept += len(sweepStranded())
		for _, s := range waitGone(marker, dieDeadline) {
			pid, cmdline, _ := strings.Cut(s, " ")
			argv0, _, _ := strings.Cut(strings.Trim(cmdline, `"`), " ")
			wchan, _ := os.ReadFile("/proc/" + pid + "/wchan")
			left[argv0+" waiting in "+string(wchan)]++
		}
	}
	if len(left) > 0 {
		t.Fatalf("after %d kills, processes outlived the process that started their rooms (argv[0]: count): %v", *churnKills, left)
	}
	t.Logf("%d kills while rooms started: nothing outlived them (%d orphaned room(s) still in bwrap's setup swept as the next tare would)", *churnKills, swept)
}

// waitFor polls cond until it holds, failing the test after 10s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

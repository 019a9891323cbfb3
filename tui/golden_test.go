package tui

import (
	"fmt"
	"testing"

	"github.com/charmbracelet/x/exp/golden"
)

// The golden views: home, run and tail at 80x24 and 160x48, drawn with the ASCII profile
// from real journals (and a real capsule store for the diff). Regenerate with: go test ./tui -run TestGolden -update
func TestGoldenViews(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {160, 48}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("home_%dx%d", w, h), func(t *testing.T) {
			stateDir, _, crashed := demoState(t)
			stub := newStub()
			stub.setAlive(crashed, false)
			tm := newTestModel(t, stateDir, stub, w, h)
			golden.RequireEqual(t, []byte(tm.View()))
		})
		t.Run(fmt.Sprintf("run_%dx%d", w, h), func(t *testing.T) {
			stateDir, cal, _ := demoState(t)
			tm := newTestModel(t, stateDir, newStub(), w, h)
			tm.send(openRunMsg{cal})
			golden.RequireEqual(t, []byte(tm.View()))
		})
		t.Run(fmt.Sprintf("tail_%dx%d", w, h), func(t *testing.T) {
			// The diff is the real engine's, from real capsules of a-1.
			stateDir, cal, _ := demoState(t)
			demoStore(t, cal)
			stub := newStub()
			realDiff(stub)
			tm := newTestModel(t, stateDir, stub, w, h)
			tm.send(openRunMsg{cal})
			tm.send(openTailMsg{cal, "a-1"})
			selectRow(t, tm.tail.calls, "3")
			tm.key("d")
			golden.RequireEqual(t, []byte(tm.View()))
		})
	}
}

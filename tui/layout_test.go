package tui

import (
	"reflect"
	"testing"
)

func TestFrame(t *testing.T) {
	for _, tc := range []struct {
		w, h int
		want screen
	}{
		{80, 24, screen{rect{0, 0, 80, 1}, rect{0, 1, 80, 22}, rect{0, 23, 80, 1}}},
		{160, 48, screen{rect{0, 0, 160, 1}, rect{0, 1, 160, 46}, rect{0, 47, 160, 1}}},
		{10, 1, screen{rect{0, 0, 10, 1}, rect{0, 1, 10, 0}, rect{0, 1, 10, 0}}},
		{0, 0, screen{}},
	} {
		if got := frame(tc.w, tc.h); got != tc.want {
			t.Errorf("frame(%d,%d) = %+v, want %+v", tc.w, tc.h, got, tc.want)
		}
	}
}

func TestStack(t *testing.T) {
	area := rect{0, 1, 80, 22}
	for _, tc := range []struct {
		name string
		want []int
		got  []rect
	}{
		{"fixed then flex", []int{6, 0}, []rect{{0, 1, 80, 6}, {0, 7, 80, 16}}},
		{"two flex share, the last takes the rounding", []int{0, 3, 0}, []rect{{0, 1, 80, 9}, {0, 10, 80, 3}, {0, 13, 80, 10}}},
		{"fixed rows that do not fit shrink last first", []int{20, 10, 0}, []rect{{0, 1, 80, 20}, {0, 21, 80, 2}, {0, 23, 80, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stack(area, tc.want); !reflect.DeepEqual(got, tc.got) {
				t.Errorf("stack(%v) = %v, want %v", tc.want, got, tc.got)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	got := split(rect{2, 3, 101, 10}, 3, 2)
	want := []rect{{2, 3, 60, 10}, {62, 3, 41, 10}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("split = %v, want %v", got, want)
	}
}

func TestHomeLayout(t *testing.T) {
	body := rect{0, 1, 80, 22}
	p, r, w := homeLayout(body, 3, false)
	if p != (rect{0, 1, 80, 6}) || r != (rect{0, 7, 80, 16}) || w != (rect{}) {
		t.Errorf("3 agents: probes %v runs %v writers %v", p, r, w)
	}
	// Many agents: the probes pane stops at a third of the body.
	p, r, _ = homeLayout(body, 30, false)
	if p.H != 7 || r.Y != 8 || r.H != 15 {
		t.Errorf("30 agents: probes %v runs %v", p, r)
	}
	// The writers pane sits beside runs on a wide terminal...
	p, r, w = homeLayout(rect{0, 1, 160, 46}, 3, true)
	if r.Y != w.Y || r.H != w.H || r.X+r.W != w.X || w.X+w.W != 160 || p.W != 160 {
		t.Errorf("wide with writers: probes %v runs %v writers %v", p, r, w)
	}
	// ...and below it on a narrow one.
	_, r, w = homeLayout(body, 3, true)
	if r.X != w.X || r.W != 80 || w.W != 80 || r.Y+r.H != w.Y || w.Y+w.H != 23 {
		t.Errorf("narrow with writers: runs %v writers %v", r, w)
	}
}

func TestRunAndTailLayout(t *testing.T) {
	body := rect{0, 1, 80, 22}
	head, sum, tails := runLayout(body, 2)
	if head != (rect{0, 1, 80, 2}) || sum != (rect{0, 3, 80, 4}) || tails != (rect{0, 7, 80, 16}) {
		t.Errorf("calibrate with 2 sides: %v %v %v", head, sum, tails)
	}
	_, sum, tails = runLayout(body, 0)
	if sum.H != 0 || tails != (rect{0, 3, 80, 20}) {
		t.Errorf("a kind without a summary: %v %v", sum, tails)
	}
	head, calls, diff := tailLayout(body, false)
	if head.H != 3 || calls != (rect{0, 4, 80, 19}) || diff != (rect{}) {
		t.Errorf("tail: %v %v %v", head, calls, diff)
	}
	_, calls, diff = tailLayout(body, true)
	if calls.H+diff.H != 19 || diff.Y != calls.Y+calls.H {
		t.Errorf("tail with diff: %v %v", calls, diff)
	}
	if c := centered(body, 60, 8); c != (rect{10, 8, 60, 8}) {
		t.Errorf("centered = %v", c)
	}
	if c := centered(rect{0, 0, 20, 5}, 60, 8); c != (rect{0, 0, 20, 5}) {
		t.Errorf("centered clips: %v", c)
	}
}

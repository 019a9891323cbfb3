package tui

// rect is a cell rectangle of the screen.
type rect struct{ X, Y, W, H int }

// screen is where the three bands of every page go: a header line, the body, the footer.
type screen struct{ header, body, footer rect }

// frame splits the terminal into header, body and footer.
func frame(w, h int) screen {
	w, h = max(w, 0), max(h, 0)
	var s screen
	s.header = rect{0, 0, w, min(1, h)}
	s.footer = rect{0, max(h-1, s.header.H), w, min(1, max(h-1, 0))}
	s.body = rect{0, s.header.H, w, max(h-s.header.H-s.footer.H, 0)}
	return s
}

// stack splits area into rows, top to bottom. want[i] > 0 asks for that many rows (given
// while they fit); want[i] == 0 shares what is left with the other flexible rows.
func stack(area rect, want []int) []rect {
	out := make([]rect, len(want))
	left, flex := area.H, 0
	for _, n := range want {
		if n > 0 {
			left -= n
		} else {
			flex++
		}
	}
	// When the fixed rows do not fit, they shrink, last first, down to nothing.
	over := -left
	sizes := append([]int(nil), want...)
	for i := len(sizes) - 1; i >= 0 && over > 0; i-- {
		if sizes[i] > 0 {
			cut := min(sizes[i], over)
			sizes[i] -= cut
			over -= cut
		}
	}
	left = max(left, 0)
	y := area.Y
	for i, n := range sizes {
		if want[i] == 0 {
			n = left / flex
			if i == lastFlex(want) {
				n = left - (left/flex)*(flex-1)
			}
		}
		out[i] = rect{area.X, y, area.W, n}
		y += n
	}
	return out
}

func lastFlex(want []int) int {
	for i := len(want) - 1; i >= 0; i-- {
		if want[i] == 0 {
			return i
		}
	}
	return -1
}

// split divides area into columns by weight, left to right; the last takes the rounding.
func split(area rect, weights ...int) []rect {
	total := 0
	for _, w := range weights {
		total += w
	}
	out := make([]rect, len(weights))
	x := area.X
	for i, w := range weights {
		n := area.W * w / max(total, 1)
		if i == len(weights)-1 {
			n = area.X + area.W - x
		}
		out[i] = rect{x, area.Y, n, area.H}
		x += n
	}
	return out
}

// homeLayout places the home panes in the body: probes on top, sized to their rows (at
// most a third of the body), runs below. A writers pane, when the workshop adds one, sits
// beside runs on a wide terminal and below it on a narrow one.
func homeLayout(body rect, probeRows int, writers bool) (probes, runs, writersRect rect) {
	want := probeRows + 3 // borders and the column header
	want = max(min(want, body.H/3), min(4, body.H))
	rows := stack(body, []int{want, 0})
	probes, runs = rows[0], rows[1]
	if !writers {
		return probes, runs, rect{}
	}
	if body.W >= 120 {
		cols := split(runs, 3, 2)
		return probes, cols[0], cols[1]
	}
	rows = stack(runs, []int{0, 0})
	return probes, rows[0], rows[1]
}

// runLayout places a run view in the body: two lines of summary, the kind's own pane (the
// pass rates of a calibrate; later a cliff chart or a swap table) sized to its rows, and the
// tails table in the rest.
func runLayout(body rect, summaryRows int) (head, summary, tails rect) {
	if summaryRows == 0 {
		rows := stack(body, []int{min(2, body.H), 0})
		return rows[0], rect{body.X, rows[1].Y, body.W, 0}, rows[1]
	}
	want := max(min(summaryRows+2, body.H/2), min(3, body.H))
	rows := stack(body, []int{min(2, body.H), want, 0})
	return rows[0], rows[1], rows[2]
}

// tailLayout places the tail view: three lines of header, the tool calls, and the capsule
// diff below them when one is open (half the body).
func tailLayout(body rect, diff bool) (head, calls, diffRect rect) {
	if !diff {
		rows := stack(body, []int{min(3, body.H), 0})
		return rows[0], rows[1], rect{}
	}
	rows := stack(body, []int{min(3, body.H), 0, 0})
	return rows[0], rows[1], rows[2]
}

// centered is a w×h rectangle in the middle of area, clipped to it.
func centered(area rect, w, h int) rect {
	w, h = min(w, area.W), min(h, area.H)
	return rect{area.X + (area.W-w)/2, area.Y + (area.H-h)/2, w, h}
}

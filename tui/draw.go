package tui

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// fit cuts s to w cells (with an ellipsis) and pads it with spaces to exactly w.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n > w {
		s = ansi.Truncate(s, w, "…")
		n = ansi.StringWidth(s)
	}
	return s + strings.Repeat(" ", w-n)
}

// fitRight is fit with the text pushed to the right edge.
func fitRight(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n >= w {
		return fit(s, w)
	}
	return strings.Repeat(" ", w-n) + s
}

// block makes s exactly w×h: each line fitted, missing lines blank, extra lines dropped.
func block(s string, w, h int) []string {
	if h <= 0 {
		return nil
	}
	lines := strings.SplitN(s, "\n", h+1)
	out := make([]string, h)
	for i := range out {
		if i < len(lines) && i < h {
			out[i] = fit(lines[i], w)
		} else {
			out[i] = strings.Repeat(" ", max(w, 0))
		}
	}
	return out
}

// box draws a bordered pane of exactly w×h with its title set in the top border. A
// focused pane has a thick border, so focus shows in any colour profile.
func (s styles) box(title, body string, w, h int, focused bool) []string {
	if w < 4 || h < 2 {
		return block("", w, h)
	}
	b, bs, ts := lipgloss.RoundedBorder(), s.border, s.title
	if focused {
		b, bs, ts = lipgloss.ThickBorder(), s.borderFocused, s.titleFocused
	}
	inner := w - 2
	title = ansi.Truncate(title, max(inner-4, 0), "…")
	top := b.TopLeft + b.Top
	if title != "" {
		top = bs.Render(top+" ") + ts.Render(title) + bs.Render(" "+strings.Repeat(b.Top, max(inner-3-ansi.StringWidth(title), 0))+b.TopRight)
	} else {
		top = bs.Render(b.TopLeft + strings.Repeat(b.Top, inner) + b.TopRight)
	}
	out := make([]string, 0, h)
	out = append(out, top)
	left, right := bs.Render(b.Left), bs.Render(b.Right)
	for _, line := range block(body, inner, h-2) {
		out = append(out, left+line+right)
	}
	out = append(out, bs.Render(b.BottomLeft+strings.Repeat(b.Bottom, inner)+b.BottomRight))
	return out
}

// canvas is the screen being composed: blocks are placed at rectangles, later ones over
// earlier ones (a dialog over the body).
type canvas struct {
	w     int
	lines []string
}

func newCanvas(w, h int) *canvas {
	c := &canvas{w: w, lines: make([]string, h)}
	blank := strings.Repeat(" ", w)
	for i := range c.lines {
		c.lines[i] = blank
	}
	return c
}

// put places lines (each already r.W wide) with their top-left corner at r.
func (c *canvas) put(r rect, lines []string) {
	for i, line := range lines {
		y := r.Y + i
		if y < 0 || y >= len(c.lines) || i >= r.H {
			continue
		}
		if r.X == 0 && r.W >= c.w {
			c.lines[y] = fit(line, c.w)
			continue
		}
		cur := c.lines[y]
		c.lines[y] = ansi.Cut(cur, 0, r.X) + fit(line, r.W) + ansi.Cut(cur, r.X+r.W, c.w)
	}
}

func (c *canvas) String() string { return strings.Join(c.lines, "\n") }

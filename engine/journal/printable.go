package journal

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable is s safe to print on the operator's terminal: every control character but
// newline and tab (C0, DEL, C1) and every byte that is not UTF-8 is shown escaped, "\x1b" for
// ESC. Text an agent produced (its tool arguments, its answers, a check's output, a model
// name) would otherwise reach the terminal raw: an OSC 52 sequence sets the clipboard, ESC[2J
// clears the screen, a CR overwrites a line. Escaping rather than dropping shows that they
// were there. Printable(Printable(s)) == Printable(s).
func Printable(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// clean reports whether s has nothing Printable would change: the common case, kept cheap.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			return false
		}
		if c >= 0x80 {
			// C1 controls are U+0080-U+009F, encoded 0xc2 0x80-0x9f; and invalid UTF-8.
			r, n := utf8.DecodeRuneInString(s[i:])
			if (r == utf8.RuneError && n == 1) || (r >= 0x80 && r <= 0x9f) {
				return false
			}
			i += n - 1
		}
	}
	return true
}

// PrintableEvent is e with every string an agent or a check could have written made
// Printable: tool names and arguments, tail details, readings, reports, errors, model names.
// The raw bytes stay in the tail's stdout.jsonl; the journal, the bus and every view get
// these. Payloads are copied, never changed in place (the caller may hold them).
func PrintableEvent(e Event) Event {
	if t := e.ToolCall; t != nil && !(clean(t.Tool) && clean(t.Summary) && usageClean(t.Usage)) {
		c := *t
		c.Tool, c.Summary, c.Usage = Printable(c.Tool), Printable(c.Summary), printableUsage(c.Usage)
		e.ToolCall = &c
	}
	if t := e.TailFinished; t != nil && !(clean(t.Detail) && usageClean(t.Usage) && usageClean(t.CheckUsage) && t.Judge.clean()) {
		c := *t
		c.Detail, c.Usage, c.CheckUsage = Printable(c.Detail), printableUsage(c.Usage), printableUsage(c.CheckUsage)
		c.Judge = c.Judge.printable()
		e.TailFinished = &c
	}
	if p := e.Probed; p != nil && !(clean(p.Verdict) && clean(p.Text)) {
		c := *p
		c.Verdict, c.Text = Printable(c.Verdict), Printable(c.Text)
		e.Probed = &c
	}
	if p := e.Phase; p != nil && !clean(p.Name) {
		// A cliff's phase carries the check's last line about the recording.
		c := *p
		c.Name = Printable(c.Name)
		e.Phase = &c
	}
	if f := e.RunFinished; f != nil && !(clean(f.Report) && clean(f.Error)) {
		c := *f
		c.Report, c.Error = Printable(c.Report), Printable(c.Error)
		e.RunFinished = &c
	}
	return e
}

func usageClean(u Usage) bool {
	for _, m := range u.Unpriced {
		if !clean(m) {
			return false
		}
	}
	return clean(u.Model)
}

func printableUsage(u Usage) Usage {
	u.Model = Printable(u.Model)
	if len(u.Unpriced) > 0 {
		un := make([]string, len(u.Unpriced))
		for i, m := range u.Unpriced {
			un[i] = Printable(m)
		}
		u.Unpriced = un
	}
	return u
}

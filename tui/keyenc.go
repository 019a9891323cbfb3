package tui

import tea "github.com/charmbracelet/bubbletea"

// keyBytes is what a VT terminal sends for a key. appCursor is DECCKM (arrows as ESC O x);
// bracketed wraps a paste in the bracketed-paste markers the program asked for.
func keyBytes(k tea.KeyMsg, appCursor, bracketed bool) []byte {
	var s string
	switch k.Type {
	case tea.KeyRunes:
		s = string(k.Runes)
		if k.Paste && bracketed {
			s = "\x1b[200~" + s + "\x1b[201~"
		}
	case tea.KeySpace:
		s = " "
	case tea.KeyUp, tea.KeyDown, tea.KeyRight, tea.KeyLeft:
		c := map[tea.KeyType]byte{tea.KeyUp: 'A', tea.KeyDown: 'B', tea.KeyRight: 'C', tea.KeyLeft: 'D'}[k.Type]
		if appCursor {
			s = "\x1bO" + string(c)
		} else {
			s = "\x1b[" + string(c)
		}
	default:
		if k.Type >= 0 && k.Type <= 127 {
			// Control keys are their own byte (enter is CR, tab HT, backspace DEL, esc ESC).
			s = string([]byte{byte(k.Type)})
		} else {
			s = special[k.Type]
		}
	}
	if s == "" {
		return nil
	}
	if k.Alt && k.Type != tea.KeyEsc {
		s = "\x1b" + s
	}
	return []byte(s)
}

// special are the escape sequences of the keys that are not characters or arrows.
var special = map[tea.KeyType]string{
	tea.KeyShiftTab:   "\x1b[Z",
	tea.KeyHome:       "\x1b[H",
	tea.KeyEnd:        "\x1b[F",
	tea.KeyPgUp:       "\x1b[5~",
	tea.KeyPgDown:     "\x1b[6~",
	tea.KeyDelete:     "\x1b[3~",
	tea.KeyInsert:     "\x1b[2~",
	tea.KeyCtrlUp:     "\x1b[1;5A",
	tea.KeyCtrlDown:   "\x1b[1;5B",
	tea.KeyCtrlRight:  "\x1b[1;5C",
	tea.KeyCtrlLeft:   "\x1b[1;5D",
	tea.KeyShiftUp:    "\x1b[1;2A",
	tea.KeyShiftDown:  "\x1b[1;2B",
	tea.KeyShiftRight: "\x1b[1;2C",
	tea.KeyShiftLeft:  "\x1b[1;2D",
	tea.KeyCtrlHome:   "\x1b[1;5H",
	tea.KeyCtrlEnd:    "\x1b[1;5F",
	tea.KeyF1:         "\x1bOP",
	tea.KeyF2:         "\x1bOQ",
	tea.KeyF3:         "\x1bOR",
	tea.KeyF4:         "\x1bOS",
	tea.KeyF5:         "\x1b[15~",
	tea.KeyF6:         "\x1b[17~",
	tea.KeyF7:         "\x1b[18~",
	tea.KeyF8:         "\x1b[19~",
	tea.KeyF9:         "\x1b[20~",
	tea.KeyF10:        "\x1b[21~",
	tea.KeyF11:        "\x1b[23~",
	tea.KeyF12:        "\x1b[24~",
}

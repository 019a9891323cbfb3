package tui

import (
	"fmt"
	"time"

	"tare/engine/journal"
)

// stalledCell is a stalled tail's status: it needs the operator (x kills it) before its
// timeout would end it.
func stalledCell(t *journal.TailState) (cell, bool) {
	if t.Status != journal.StatusRunning || t.Stalled == nil {
		return cell{}, false
	}
	return cell{"stalled", bad}, true
}

// stalledNote is the stalled tail's detail: how long it has been silent against its pace.
func stalledNote(t *journal.TailState) string {
	return fmt.Sprintf("silent %s, past its pace of %s · x kills it", span(seconds(t.Stalled.Silent)), span(seconds(t.Stalled.Threshold)))
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

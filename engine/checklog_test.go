package engine

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tare/engine/journal"
)

// TestCheckOutputIsKept: a real codex tail on tare's model server, scored by a check that says
// why it fails on lines before its last (as go test and make do) and prints an escape
// sequence. The tail's folder keeps everything the check printed as check.log; result.json,
// report.json (tare calibrate --json) and the app's detail keep its last lines, made
// printable. Before, only "check exit 1: FAIL" was kept anywhere, and the reason was lost.
func TestCheckOutputIsKept(t *testing.T) {
	needRooms(t)
	check := `echo "--- FAIL: TestGreet (0.00s)"; echo "    greet_test.go:12: got Hello tare!, want hello, tare"; printf 'colour \033[31mred\033[0m\n'; echo FAIL; exit 1`
	dir, _, err := calibrateDemo(t, []string{"codex"}, 1, 1, check, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(dir, "tails", "a-0", CheckLogFile))
	if err != nil {
		t.Fatalf("the tail kept no check.log: %v", err)
	}
	if !bytes.Contains(log, []byte("greet_test.go:12: got Hello tare!, want hello, tare")) || !bytes.Contains(log, []byte("--- FAIL: TestGreet")) {
		t.Errorf("check.log lacks the check's reason:\n%s", log)
	}
	res, ok := readResult(filepath.Join(dir, "tails", "a-0"))
	if !ok || len(res.CheckLog) != 4 || !strings.Contains(res.CheckLog[1], "want hello, tare") || strings.ContainsRune(strings.Join(res.CheckLog, ""), '\x1b') {
		t.Errorf("result.json's check_log %q, want the check's four lines, printable", res.CheckLog)
	}
	data, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	var rep RunReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Tails) != 1 || rep.Tails[0].ID != "a-0" || len(rep.Tails[0].CheckLog) != 4 {
		t.Errorf("report.json's tails %+v, want a-0 with the check's last lines", rep.Tails)
	}
	d, err := journal.ReadTailDetail(dir, "a-0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.CheckLog, "want hello, tare") || strings.ContainsRune(d.CheckLog, '\x1b') {
		t.Errorf("the detail's check output %q, want its reason, printable", d.CheckLog)
	}
	files := strings.Join(journal.TailFiles(dir, "a-0"), " ")
	if !strings.Contains(files, CheckLogFile) {
		t.Errorf("the pager's files %s lack check.log", files)
	}
}

// A check that prints without end keeps its first and last part, and says how much it left
// out between them.
func TestCheckLogIsBounded(t *testing.T) {
	var l checkLog
	line := bytes.Repeat([]byte("x"), 99)
	line = append(line, '\n')
	for range 20000 { // 2 MB
		l.Write(line)
	}
	l.Write([]byte("the reason at the end\n"))
	out := l.Bytes()
	if len(out) > checkHead+checkKeep+200 {
		t.Errorf("check.log of a 2 MB output is %d bytes, want at most %d", len(out), checkHead+checkKeep+200)
	}
	if !bytes.HasSuffix(out, []byte("the reason at the end\n")) || !bytes.HasPrefix(out, line) {
		t.Errorf("check.log lost its first line or its end")
	}
	left := 2000000 + 22 - checkHead - checkKeep
	if !bytes.Contains(out, []byte("[tare: "+strconv.Itoa(left)+" bytes of the check's output left out here]")) {
		t.Errorf("check.log does not say how much it left out (%d bytes)", left)
	}
}

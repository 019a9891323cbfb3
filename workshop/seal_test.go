package workshop

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sealable prepares the demo plan and collects its first two writers as external sessions
// (drafts written into their workspaces) with drafts of 640 and 960 bytes: sizes that would
// name their writers.
func sealable(t *testing.T) *Exp {
	t.Helper()
	exp := filepath.Join(t.TempDir(), "exp")
	if _, err := Prepare(filepath.Join("..", "demo", "workshop", "plan.toml"), exp); err != nil {
		t.Fatal(err)
	}
	e, err := Load(exp)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range e.WriterIDs()[:2] {
		draft := filepath.Join(e.Work(id), e.Plan.Outputs[0].Path)
		if err := os.WriteFile(draft, bytes.Repeat([]byte("The stair had eighty-two steps. "), 20+10*i), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Collect(e, id, &External{SessionID: "s-" + id, Model: "m", Provenance: "written by hand"}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// TestSealedReportWithholdsUntilReveal: once sealed, the report (JSON and table) shows no
// draft size and none of the time, tokens or cost that track it, and --sizes is refused,
// until the reading is recorded; reveal keeps the reading, returns the key, and from then on
// the report shows the sizes.
func TestSealedReportWithholdsUntilReveal(t *testing.T) {
	e := sealable(t)
	if _, err := Anonymize(e, SealOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := MakeReport(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(r)
	for _, shown := range []string{string(data), r.Table()} {
		for _, size := range []string{"640", "960", `"declared"`} {
			if strings.Contains(shown, size) {
				t.Errorf("the sealed report shows %s before the reading:\n%s", size, shown)
			}
		}
	}
	if r.Withheld == "" || !strings.Contains(r.Table(), "Withheld: the drafts are sealed") || !strings.Contains(r.Table(), "tare workshop reveal "+e.Root) {
		t.Errorf("the sealed report does not say what it withholds and how to show it:\n%s", r.Table())
	}
	for _, w := range r.Writers {
		if w.Seconds != nil || w.Output != nil || w.Input != nil || w.CachedInput != nil || w.CostUSD != nil || w.PeakRequest != nil || w.Reasoning != nil {
			t.Errorf("writer %s: time, tokens or cost shown while sealed: %+v", w.Writer, w)
		}
	}
	yes := true
	if _, err := MakeReport(e, &yes); err == nil || !strings.Contains(err.Error(), "tare workshop reveal") {
		t.Errorf("--sizes while sealed and unread: %v, want refused, pointing to reveal", err)
	}
	var watched strings.Builder
	if err := Watch(context.Background(), e, &watched, true, true, time.Second); err == nil || !strings.Contains(err.Error(), "tare workshop reveal") || watched.Len() > 0 {
		t.Errorf("watch --words while sealed and unread: %v, want refused before anything is shown: %q", err, watched.String())
	}
	if _, err := Unseal(e, "", false); err == nil || !strings.Contains(err.Error(), "--reading FILE") {
		t.Errorf("reveal with neither a reading nor --without-reading: %v", err)
	}
	reading := filepath.Join(t.TempDir(), "reading.md")
	os.WriteFile(reading, []byte("A: taut. B: slack.\n"), 0o644)
	u, err := Unseal(e, reading, false)
	if err != nil {
		t.Fatal(err)
	}
	var key map[string]string
	raw, _ := os.ReadFile(filepath.Join(e.Root, KeyFile))
	json.Unmarshal(raw, &key)
	if len(u.Key) != 2 || u.Key["A"] != key["A"] || u.Reading != "A: taut. B: slack.\n" {
		t.Errorf("reveal: %+v, key on disk %v", u, key)
	}
	var kept Reveal
	if err := readJSON(filepath.Join(e.Root, RevealFile), &kept); err != nil || kept.Reading != u.Reading || kept.WithoutReading {
		t.Errorf("the reading is not kept with the seal: %+v %v", kept, err)
	}
	r, err = MakeReport(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	if table := r.Table(); r.Withheld != "" || !strings.Contains(table, "| 640 |") || !strings.Contains(table, "| 960 |") {
		t.Errorf("the revealed report withholds sizes:\n%s", table)
	}
}

// TestAnonymizeRefusesASealedExperiment: a second anonymize is refused unless --reseal, which
// keeps the old key (and its reveal record) under the next number and seals anew, the reading
// pending again. The key is the operator's alone on disk.
func TestAnonymizeRefusesASealedExperiment(t *testing.T) {
	e := sealable(t)
	if _, err := Anonymize(e, SealOptions{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(e.Root, KeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v %v, want 0600", fi.Mode(), err)
	}
	first, _ := os.ReadFile(filepath.Join(e.Root, KeyFile))
	if _, err := Anonymize(e, SealOptions{}); err == nil || !strings.Contains(err.Error(), "sealed already") || !strings.Contains(err.Error(), "--reseal") {
		t.Fatalf("anonymize of a sealed experiment: %v, want refused with --reseal as the fix", err)
	}
	if now, _ := os.ReadFile(filepath.Join(e.Root, KeyFile)); !bytes.Equal(now, first) {
		t.Fatal("a refused anonymize changed the key")
	}
	if _, err := Unseal(e, "", true); err != nil {
		t.Fatal(err)
	}
	s, err := Anonymize(e, SealOptions{Reseal: true})
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(e.Root, "evaluation", "identity-key.1.json")
	if kept, _ := os.ReadFile(old); s.OldKey != old || !bytes.Equal(kept, first) || !strings.Contains(s.Warning, "identity-key.1.json") {
		t.Errorf("reseal: %+v; the old key is not kept whole as %s", s, old)
	}
	if _, err := os.Stat(filepath.Join(e.Root, "evaluation", "reveal.1.json")); err != nil || s.OldReveal == "" {
		t.Errorf("reseal did not keep the old reveal record: %v", err)
	}
	if !e.ReadingPending() {
		t.Error("after a reseal the reading is not pending again")
	}
	if s, err := Anonymize(e, SealOptions{Reseal: true}); err != nil || filepath.Base(s.OldKey) != "identity-key.2.json" {
		t.Errorf("second reseal: %+v %v, want the old key as identity-key.2.json", s, err)
	}
}

// TestSealShuffleDrawsFromCryptoRand: the seal's order comes from crypto/rand, never from a
// seeded math/rand (a clock seed is recomputed from the anon folder's time), and every order
// of three drafts comes up about as often.
func TestSealShuffleDrawsFromCryptoRand(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "seal.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	crypto := false
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if strings.HasPrefix(p, "math/rand") {
			t.Errorf("seal.go imports %s: the letters could be recomputed from its seed", p)
		}
		crypto = crypto || p == "crypto/rand"
	}
	if !crypto {
		t.Error("seal.go does not draw from crypto/rand")
	}
	counts := map[string]int{}
	for range 6000 {
		s, err := shuffle([]string{"a", "b", "c"})
		if err != nil {
			t.Fatal(err)
		}
		counts[strings.Join(s, "")]++
	}
	for _, order := range []string{"abc", "acb", "bac", "bca", "cab", "cba"} {
		// 1000 expected, sd 29: far outside [850, 1150] only if the shuffle is biased.
		if n := counts[order]; n < 850 || n > 1150 {
			t.Errorf("order %s came up %d times of 6000: %v", order, n, counts)
		}
	}
}

// Once sealed, inspect shows no earlier attempt's file hashes: an attempt may hold the sealed
// draft's very bytes, whose sha256 is the anon letter's.
func TestInspectWithholdsAttemptHashesWhileSealed(t *testing.T) {
	e := sealable(t)
	id := e.WriterIDs()[0]
	s, err := e.State(id)
	if err != nil {
		t.Fatal(err)
	}
	art := filepath.Join(e.Record(id), "artifacts")
	if err := os.MkdirAll(art, 0o755); err != nil {
		t.Fatal(err)
	}
	draft, err := os.ReadFile(filepath.Join(e.Work(id), e.Plan.Outputs[0].Path))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(art, "draft.md"), draft, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := archiveAttempt(e, id, s, "a test"); err != nil {
		t.Fatal(err)
	}
	if err := e.saveState(id, s); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(draft)
	hash := hex.EncodeToString(sum[:])
	shown := func() string {
		out, err := Inspect(e, true)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(out)
		return string(data)
	}
	if !strings.Contains(shown(), hash) {
		t.Fatalf("before the seal inspect does not show the attempt's hashes: the test shows nothing")
	}
	if _, err := Anonymize(e, SealOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(shown(), hash) {
		t.Errorf("sealed, inspect shows the sha256 of a file holding the draft's bytes (%s)", hash)
	}
}

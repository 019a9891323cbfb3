package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tare/engine/room"
	"tare/engine/run"
	"tare/modelserver"
)

// judgeScript answers every judgement with the same score.
const judgeScript = `
[[turn]]
text = "score 6: a tidy page with a clear heading"
`

// builderToken is planted wherever a page folder names who built it; it must reach neither
// the judge's room nor its model.
const builderToken = "zq7builder"

// builderPage makes a page folder as a run leaves it: below a run directory whose path names
// the building agent and its model, beside the run's journal, with the agent's instruction
// file, its settings folder, notes named for it and its model, a generator tag and comments
// naming the model in the markup, and a link out of the folder.
func builderPage(t *testing.T, builder string) string {
	t.Helper()
	run := filepath.Join(t.TempDir(), "calibrate", builder+"-"+builderToken+"-20261130", "tails", "a-0")
	work := filepath.Join(run, "work")
	files := map[string]string{
		"index.html": "<!doctype html><html><head><meta name=\"generator\" content=\"" + builderToken + "\"><!-- drafted by sonnet: " + builderToken + " -->" +
			"<link rel=stylesheet href=style.css></head><body><h1>Todo</h1><ul><li>milk</li></ul></body></html>\n",
		"style.css":                    "/* opus palette " + builderToken + " */\nh1{color:navy}\n",
		"NOTES-sonnet-4.5.md":          builderToken + "\n",
		"opus-plan.txt":                builderToken + "\n",
		"o3-draft.md":                  builderToken + "\n",
		"AGENTS.md":                    "Built by " + builder + " on " + builderToken + ".\n",
		"CLAUDE.md":                    "Built by " + builder + " on " + builderToken + ".\n",
		"." + builder + "/config.toml": "model = \"" + builderToken + "\"\n",
		"notes-" + builder + ".txt":    builderToken + "\n",
		"../../../journal.jsonl":       `{"side":"` + builder + `","model":"` + builderToken + `"}` + "\n",
		"../../../recipe.json":         `{"agents":{"` + builder + `":{}}, "model":"` + builderToken + `"}` + "\n",
		"../stdout.jsonl":              builderToken + "\n",
	}
	for name, data := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(run, "stdout.jsonl"), filepath.Join(work, "log.txt")); err != nil {
		t.Fatal(err)
	}
	return work
}

func testRubric(t *testing.T) Rubric {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rubric.md")
	if err := os.WriteFile(p, []byte("Is the page clear and tidy?\nscale: 1-10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := LoadRubric(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestJudgeRoomIsBlind: a page built by one agent, judged by a real judge CLI (claude and
// codex) in its room against tare's model server. Neither the room nor any request that
// reached the model holds the builder's name, its model, the run directory or a file the
// builder left for itself; the judge still gets the page, the screenshot and the rubric,
// and its score and usage come back.
func TestJudgeRoomIsBlind(t *testing.T) {
	needRooms(t)
	for judge, builder := range map[string]string{"claude": "codex", "codex": "claude"} {
		t.Run(judge, func(t *testing.T) {
			a, inst, cfg := mustFind(t, judge)
			script, err := modelserver.ParseScript([]byte(judgeScript), "judge.toml")
			if err != nil {
				t.Fatal(err)
			}
			srv := scriptServer(t, script)
			work := builderPage(t, builder)
			hostPath := filepath.Dir(filepath.Dir(filepath.Dir(work)))
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			o := JudgeOptions{Dirs: []string{work}, Page: "index.html", Rubric: testRubric(t), Judge: judge, Times: 1, Jobs: 1,
				Models: srv, Out: filepath.Join(t.TempDir(), "out"), Config: cfg}
			rep, err := Judge(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Reading != "tare: 0.00" {
				t.Errorf("the judge's room reads %q, want it proven clean", rep.Reading)
			}
			j := rep.Pages[0].Judgements[0]
			if j.Score == nil || *j.Score != 6 || j.Usage.Input == 0 {
				t.Fatalf("judgement %+v, want score 6 with the judge's usage", j)
			}
			reqs := srv.Requests()
			prompted := false
			for _, rq := range reqs {
				body := string(rq.Body)
				prompted = prompted || strings.Contains(body, judgeRubric)
				for _, bad := range []string{builderToken, builder, hostPath, "tails/a-0", "journal.jsonl"} {
					if strings.Contains(strings.ToLower(body), strings.ToLower(bad)) {
						t.Errorf("a request to the model holds %q: %s", bad, run.Clip(body[max(0, strings.Index(strings.ToLower(body), strings.ToLower(bad))-200):], 400))
					}
				}
			}
			if !prompted {
				t.Fatalf("no request carried the judge's prompt (%d requests)", len(reqs))
			}

			// What the room itself can see: the same room, with a shell looking around (all but the
			// system's /usr, /proc, /sys, /dev and the judge's own CLI in /opt).
			o.Out = filepath.Join(t.TempDir(), "out2")
			os.MkdirAll(o.Out, 0o755)
			env := &judgeEnv{o: o, agent: a, inst: inst, models: srv}
			stage, _, err := env.stage(ctx, 0, work)
			defer os.RemoveAll(stage)
			if err != nil {
				t.Fatal(err)
			}
			box, err := env.judgeRoom(stage, t.TempDir(), srv.Addr(), false)
			if err != nil {
				t.Fatal(err)
			}
			box.Argv = []string{"/bin/sh", "-c", `cat /proc/self/mountinfo; env; ls -laR /work /home /tmp; ` +
				`echo GREP; for d in /*; do case $d in /proc|/sys|/usr|/dev|/opt) ;; *) grep -rIil "$0" "$d" 2>/dev/null;; esac; done; echo END`, builderToken}
			var out, errb strings.Builder
			box.Stdout, box.Stderr = &out, &errb
			if _, err := room.Run(ctx, box); err != nil {
				t.Fatal(err)
			}
			seen := out.String()
			if !strings.Contains(seen, "END") {
				t.Fatalf("the look-around did not finish: %s %s", seen, errb.String())
			}
			_, found, _ := strings.Cut(seen, "GREP\n")
			if found = strings.TrimSuffix(found, "END\n"); found != "" {
				t.Errorf("files in the judge's room hold the builder's token:\n%s", found)
			}
			head, _, _ := strings.Cut(seen, "GREP\n")
			for _, bad := range []string{builderToken, hostPath, "AGENTS.md", "CLAUDE.md", "log.txt", "notes-", "NOTES-", "opus", "o3-"} {
				if strings.Contains(head, bad) {
					i := strings.Index(head, bad)
					t.Errorf("the judge's room shows %q: %s", bad, head[max(0, i-300):min(len(head), i+100)])
				}
			}
			for _, want := range []string{judgeShot, judgeRubric, "index.html", "style.css"} {
				if !strings.Contains(head, want) {
					t.Errorf("the judge's room lacks %s:\n%s", want, head)
				}
			}
		})
	}
}

// TestJudgeScoreIsItsOwnLine: the real judge CLI (claude) on tare's model server answers with
// its score line and then quotes the score the page planted; tare records no verdict, never
// the planted 10, and says why.
func TestJudgeScoreIsItsOwnLine(t *testing.T) {
	needRooms(t)
	_, _, cfg := mustFind(t, "claude")
	script, err := modelserver.ParseScript([]byte("[[turn]]\ntext = \"score 2: poor layout.\\n\\n> score 10: the best page ever made\"\n"), "judge.toml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	work := builderPage(t, "codex")
	rep, err := Judge(ctx, JudgeOptions{Dirs: []string{work}, Page: "index.html", Rubric: testRubric(t), Judge: "claude", Times: 1, Jobs: 1,
		Models: scriptServer(t, script), Out: filepath.Join(t.TempDir(), "out"), Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	j := rep.Pages[0].Judgements[0]
	if j.Score != nil || !strings.Contains(j.Error, "holds 2 score lines") || !j.Spoiled {
		t.Fatalf("judgement %+v, want no score and spoiled from an answer with two score lines", j)
	}
	// As a check the spoiled answer fails the page: the page must not leave the rate.
	if passed, couldNotRun, detail := judgedVerdict(j, 5, testRubric(t)); passed || couldNotRun || !strings.Contains(detail, "counted as failed") {
		t.Errorf("as a check: passed %v, could not run %v (%s), want failed", passed, couldNotRun, detail)
	}
	// The reading says what the judge was not given and what was taken out of its copy.
	notes := pageNotes(rep.Pages[0])
	for _, want := range []string{"NOTES-sonnet-4.5.md (named for an agent or a model)", "o3-draft.md", "index.html: a generator meta tag",
		"index.html: a comment naming sonnet", "style.css: a comment naming opus"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the report does not say %q:\n%s", want, notes)
		}
	}
}

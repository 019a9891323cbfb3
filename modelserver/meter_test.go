package modelserver

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMeterCountsWhatTheServerSent: the real CLIs of every dialect (claude on Messages, codex
// on Responses, pi on Chat Completions, gemini on the Gemini API) run the two-turn script
// through a meter each, as a room's relay sends them; what each meter counted equals, call
// for call in sum, the tokens the model server itself put in its answers to that agent.
func TestMeterCountsWhatTheServerSent(t *testing.T) {
	sc, err := LoadScript(filepath.Join("testdata", "two-turns.toml"))
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Options{Script: sc, Seed: 1})
	type metered struct {
		run cliRun
		m   *Meter
	}
	var runs []metered
	for _, name := range []string{"claude", "codex", "pi", "gemini"} {
		addr, err := srv.Stream(name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewMeter(addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		url := "http://" + m.Addr()
		r := map[string]cliRun{
			"claude": claudeRun(agentBin(t, "claude"), url, "-p", cliPrompt),
			"codex":  codexRun(agentBin(t, "codex"), url, cliPrompt),
			"pi":     piRun(agentBin(t, "pi"), url, "tare-chat", "-p", cliPrompt),
			"gemini": geminiRun(agentBin(t, "gemini"), url, "-p", cliPrompt),
		}[name]
		r.name = name
		runs = append(runs, metered{r, m})
	}
	t.Run("agents", func(t *testing.T) {
		for _, r := range runs {
			t.Run(r.run.name, func(t *testing.T) {
				t.Parallel()
				newAgentHome(t, r.run).run(t, r.run.name, r.run.bin, r.run.args...)
			})
		}
	})
	for _, r := range runs {
		var own CallUsage
		calls := 0
		for _, q := range srv.Requests() {
			if q.Stream == r.run.name && q.InputTokens+q.OutputTokens > 0 {
				own.Input += int64(q.InputTokens)
				own.Output += int64(q.OutputTokens)
				calls++
			}
		}
		var got CallUsage
		for _, c := range r.m.Calls() {
			if c.Model == "" || c.Status != 200 {
				t.Errorf("%s: a metered call %+v names no model or did not succeed; the price needs the model", r.run.name, c)
			}
			got.Input, got.Output = got.Input+c.Input, got.Output+c.Output
			got.CacheRead, got.CacheWrite = got.CacheRead+c.CacheRead, got.CacheWrite+c.CacheWrite
		}
		if calls < 2 || got != own || len(r.m.Calls()) != calls {
			t.Errorf("%s: meter counted %d calls %+v; the server answered %d calls with %+v", r.run.name, len(r.m.Calls()), got, calls, own)
		}
	}
}

// TestMeterCapStopsEveryAgent: with a token cap the first call spends, every CLI gets its
// second call refused in its own dialect, reports the error and stops: no third call comes,
// and none of the refused ones reached the server.
func TestMeterCapStopsEveryAgent(t *testing.T) {
	sc, err := LoadScript(filepath.Join("testdata", "two-turns.toml"))
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Options{Script: sc, Seed: 1})
	for _, name := range []string{"claude", "codex", "pi", "gemini"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			addr, err := srv.Stream(name)
			if err != nil {
				t.Fatal(err)
			}
			m, err := NewMeter(addr, nil, &Budget{Name: "tail", MaxTokens: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			url := "http://" + m.Addr()
			r := map[string]cliRun{
				"claude": claudeRun(agentBin(t, "claude"), url, "-p", cliPrompt),
				"codex":  codexRun(agentBin(t, "codex"), url, cliPrompt),
				"pi":     piRun(agentBin(t, "pi"), url, "tare-chat", "-p", cliPrompt),
				"gemini": geminiRun(agentBin(t, "gemini"), url, "-p", cliPrompt),
			}[name]
			stdout, stderr, _ := newAgentHome(t, r).exec(t, name, r.bin, r.args...)
			through, refused := 0, 0
			for _, c := range m.Calls() {
				if c.OverBudget {
					refused++
				} else {
					through++
				}
			}
			if through != 1 || refused < 1 || m.OverBudget() == "" {
				t.Errorf("%s: %d calls through, %d refused; want 1 through and the next refused", name, through, refused)
			}
			if !strings.Contains(stdout+stderr, "over budget") {
				t.Errorf("%s did not report the refusal:\nstdout: %s\nstderr: %s", name, tail(stdout, 2000), tail(stderr, 2000))
			}
		})
	}
}

package modelserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// codeAssistRun is Gemini CLI headless with a Google login (an access token by env, so no
// token check leaves the machine) whose Code Assist endpoint is url.
func codeAssistRun(bin, url string) cliRun {
	settings := `{"security":{"auth":{"selectedType":"oauth-personal"}},"privacy":{"usageStatisticsEnabled":false},"model":{"name":"gemini-2.5-pro"}}`
	return cliRun{name: "gemini", bin: bin,
		args: []string{"--output-format", "stream-json", "--yolo", "--skip-trust", "-p", "Make the file."},
		env: append([]string{"CODE_ASSIST_ENDPOINT=" + url, "GOOGLE_GENAI_USE_GCA=true", "GOOGLE_CLOUD_ACCESS_TOKEN=ya29.tare-test",
			"GEMINI_CLI_NO_RELAUNCH=true", "GEMINI_CLI_SYSTEM_SETTINGS_PATH=/nonexistent/settings.json"}, baseEnv...),
		files: map[string]string{".gemini/settings.json": settings}}
}

// TestRealGeminiCLICodeAssist: Gemini CLI with a Google login talks to Code Assist; pointed at
// tare's model server (CODE_ASSIST_ENDPOINT) through a meter, it sets the user up, runs the
// script's shell call and final text, and the meter's count of each call equals the server's.
func TestRealGeminiCLICodeAssist(t *testing.T) {
	bin := agentBin(t, "gemini")
	sc := mustScript(t, `
[[turn]]
text = "Making the file."
shell = "echo tare-ok > made.txt"
[[turn]]
text = "All done."
`)
	var logBuf safeBuffer
	srv := startServer(t, Options{Script: sc, Log: &logBuf, Seed: 1})
	m, err := NewMeter(strings.TrimPrefix(srv.URL(), "http://"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r := codeAssistRun(bin, "http://"+m.Addr())
	a := newAgentHome(t, r)
	stdout, stderr, code := a.exec(t, "gemini", r.bin, r.args...)
	got, _ := os.ReadFile(filepath.Join(a.cwd, "made.txt"))
	if code != 0 || string(got) != "tare-ok\n" || !strings.Contains(stdout, "All done.") {
		t.Fatalf("gemini exit %d, made.txt %q\nstdout:\n%s\nstderr:\n%s\nserver log:\n%s", code, got, tail(stdout, 4000), tail(stderr, 3000), tail(logBuf.String(), 4000))
	}
	var in, out int64
	calls := 0
	for _, q := range srv.Requests() {
		switch q.Outcome {
		case "unmapped", "bad_request", "not_found":
			t.Errorf("request %s %s answered %q: %s", q.Method, q.Path, q.Outcome, q.Note)
		}
		if q.API == string(apiCodeAssist) {
			calls++
			in += int64(q.InputTokens)
			out += int64(q.OutputTokens)
		}
	}
	var mi, mo int64
	for _, c := range m.Calls() {
		if c.API != string(apiCodeAssist) || c.Model != "gemini-2.5-pro" {
			t.Errorf("metered call %+v: want a Code Assist call of gemini-2.5-pro", c)
		}
		mi += c.Input + c.CacheRead
		mo += c.Output
	}
	if calls < 2 || len(m.Calls()) != calls || mi != in || mo != out {
		t.Errorf("meter counted %d calls, %d in, %d out; the server answered %d, %d in, %d out", len(m.Calls()), mi, mo, calls, in, out)
	}
}

// TestCodeAssistCapStopsGemini: under a token cap the first Code Assist call spends, the meter
// refuses the next in Google's error shape, and Gemini CLI reports it and stops.
func TestCodeAssistCapStopsGemini(t *testing.T) {
	bin := agentBin(t, "gemini")
	srv := startServer(t, Options{Script: mustScript(t, `
[[turn]]
text = "Making the file."
shell = "echo tare-ok > made.txt"
[[turn]]
text = "All done."
`)})
	m, err := NewMeter(strings.TrimPrefix(srv.URL(), "http://"), nil, &Budget{Name: "tail", MaxTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r := codeAssistRun(bin, "http://"+m.Addr())
	stdout, stderr, code := newAgentHome(t, r).exec(t, "gemini", r.bin, r.args...)
	through, refused := 0, 0
	for _, c := range m.Calls() {
		if c.OverBudget {
			refused++
		} else {
			through++
		}
	}
	if through != 1 || refused != 1 || code == 0 {
		t.Errorf("exit %d, %d calls through, %d refused; want 1 through, the next refused, the run failed", code, through, refused)
	}
	if !strings.Contains(stdout+stderr, "tare: over budget: the tail's token cap (1) is spent") {
		t.Errorf("gemini did not report the refusal:\nstdout: %s\nstderr: %s", tail(stdout, 2000), tail(stderr, 2000))
	}
}

// TestMeterReadsCodeAssist: Code Assist's wrapped answers, streamed and whole, are read with
// the prompt's cached part as cache reads and the thoughts counted as output.
func TestMeterReadsCodeAssist(t *testing.T) {
	if modelCall("/v1internal:streamGenerateContent") != apiCodeAssist || modelCall("/v1internal:generateContent") != apiCodeAssist ||
		modelCall("/v1internal:countTokens") != "" || modelCall("/v1internal:loadCodeAssist") != "" {
		t.Fatalf("Code Assist's model calls are not told from its other methods")
	}
	usage := `"usageMetadata":{"promptTokenCount":1000,"cachedContentTokenCount":600,"candidatesTokenCount":50,"thoughtsTokenCount":30,"totalTokenCount":1080}`
	sse := "data: {\"response\":{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"a\"}]}}]},\"traceId\":\"t\"}\n\n" +
		"data: {\"response\":{\"candidates\":[],\"modelVersion\":\"gemini-2.5-pro\"," + usage + "},\"traceId\":\"t\"}\n\n"
	whole := `{"response":{"candidates":[],` + usage + `},"traceId":"t"}`
	for name, c := range map[string]struct {
		body string
		sse  bool
	}{"stream": {sse, true}, "whole": {whole, false}} {
		var call CallUsage
		readUsage(&call, []byte(c.body), c.sse)
		if call.Input != 400 || call.CacheRead != 600 || call.Output != 80 {
			t.Errorf("%s: read %+v; want 400 in, 600 cache read, 80 out (50 + 30 thoughts)", name, call)
		}
	}
}

// TestCodeAssistOnboarding: the setup answers read as Gemini CLI's setupUser reads them:
// loadCodeAssist offers the free tier as the default (what a CLI onboarding picks),
// onboardUser's operation is done at once and names the project the CLI then sends with every
// call, and a method the server does not know is Google's 404.
func TestCodeAssistOnboarding(t *testing.T) {
	srv := startServer(t, Options{})
	var load struct {
		AllowedTiers []struct {
			ID        string `json:"id"`
			IsDefault bool   `json:"isDefault"`
		} `json:"allowedTiers"`
	}
	resp := post(t, srv.URL()+"/v1internal:loadCodeAssist", `{"metadata":{"pluginType":"GEMINI"}}`)
	if err := json.NewDecoder(resp.Body).Decode(&load); err != nil || len(load.AllowedTiers) != 1 || !load.AllowedTiers[0].IsDefault || load.AllowedTiers[0].ID != "free-tier" {
		t.Fatalf("loadCodeAssist: %+v, %v; want the free tier as the default", load, err)
	}
	var op struct {
		Done     bool `json:"done"`
		Response struct {
			Project struct {
				ID string `json:"id"`
			} `json:"cloudaicompanionProject"`
		} `json:"response"`
	}
	resp = post(t, srv.URL()+"/v1internal:onboardUser", `{"tierId":"free-tier","metadata":{"pluginType":"GEMINI"}}`)
	if err := json.NewDecoder(resp.Body).Decode(&op); err != nil || !op.Done || op.Response.Project.ID == "" {
		t.Fatalf("onboardUser: %+v, %v; want a done operation naming the project", op, err)
	}
	resp = post(t, srv.URL()+"/v1internal:noSuchMethod", `{}`)
	var e struct {
		Error struct {
			Status string `json:"status"`
		} `json:"error"`
	}
	if json.NewDecoder(resp.Body).Decode(&e); resp.StatusCode != 404 || e.Error.Status != "NOT_FOUND" {
		t.Errorf("an unknown method: %d %+v; want Google's 404 NOT_FOUND", resp.StatusCode, e)
	}
}

// TestMeterReadsAnAltSSEStreamOfAnyType: a Code Assist stream (asked for with ?alt=sse) is read
// as events even when its answer is not typed text/event-stream.
func TestMeterReadsAnAltSSEStreamOfAnyType(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		io.WriteString(w, "data: {\"response\":{\"candidates\":[]},\"traceId\":\"t\"}\r\n\r\n"+
			"data: {\"response\":{\"usageMetadata\":{\"promptTokenCount\":70,\"candidatesTokenCount\":7}},\"traceId\":\"t\"}\r\n\r\n")
	}))
	defer up.Close()
	m, err := NewMeter(strings.TrimPrefix(up.URL, "http://"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	resp := post(t, "http://"+m.Addr()+"/v1internal:streamGenerateContent?alt=sse", `{"model":"gemini-2.5-pro","request":{}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if calls := m.Calls(); len(calls) != 1 || calls[0].Input != 70 || calls[0].Output != 7 || calls[0].Model != "gemini-2.5-pro" {
		t.Errorf("metered %+v; want one call of gemini-2.5-pro, 70 in, 7 out", calls)
	}
}

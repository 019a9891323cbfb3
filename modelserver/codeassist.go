package modelserver

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Google's Code Assist (cloudcode-pa.googleapis.com), which Gemini CLI talks to with a Google
// login (verified against @google/gemini-cli 0.61.0's code_assist/server.ts): POST
// {base}/v1internal:METHOD. The model calls (streamGenerateContent with ?alt=sse,
// generateContent) carry the Gemini API request inside {"model", "project",
// "user_prompt_id", "request": {...}}, the model in the body, not the path; each answer (each
// SSE event) wraps a GenerateContentResponse as {"response": {...}, "traceId"}. countTokens
// wraps its request as {"request": {"model": "models/NAME", "contents"}}. Before the first
// call the CLI sets the user up: loadCodeAssist (the user's tier and project; onboardUser when
// the user has none yet), then listExperiments, retrieveUserQuota, fetchAdminControls and,
// after each answer, recordCodeAssistMetrics. Errors are the Gemini API's
// {"error": {code, message, status}}.

const apiCodeAssist api = "code-assist"

// codeAssistProject is the Cloud project tare's model server gives its one user.
const codeAssistProject = "tare-model-server"

// codeAssistMethod is the METHOD of ".../v1internal:METHOD", ok false for any other path.
func codeAssistMethod(p string) (string, bool) {
	i := strings.LastIndex(p, "/v1internal:")
	if i < 0 {
		return "", false
	}
	m := p[i+len("/v1internal:"):]
	return m, m != "" && !strings.Contains(m, "/")
}

// isCodeAssistCall says whether p is a Code Assist model call (the meter's to count).
func isCodeAssistCall(p string) bool {
	m, ok := codeAssistMethod(p)
	return ok && (m == "streamGenerateContent" || m == "generateContent")
}

// freeTier is the tier tare's model server says its user is on: Gemini CLI proceeds with it
// as with any Google account's.
var freeTier = map[string]any{
	"id": "free-tier", "name": "Gemini Code Assist for individuals",
	"description": "tare model server", "userDefinedCloudaicompanionProject": false,
}

// codeAssist answers one Code Assist call.
func (s *Server) codeAssist(w *statusWriter, r *http.Request, rec *Request, method string, body []byte) {
	if r.Method != http.MethodPost && method != "getCodeAssistGlobalUserSetting" {
		s.notAllowed(w, r, rec, "POST")
		return
	}
	rec.Outcome = "setup"
	switch method {
	case "streamGenerateContent", "generateContent":
		rec.API = string(apiCodeAssist)
		var wrapped struct {
			Model   string          `json:"model"`
			Request json.RawMessage `json:"request"`
		}
		err := json.Unmarshal(body, &wrapped)
		var c *convo
		if err == nil {
			c, err = parseGemini(wrapped.Request)
		}
		if err != nil {
			rec.Outcome, rec.Note = "bad_request", err.Error()
			writeJSON(w, http.StatusBadRequest, geminiError(http.StatusBadRequest, "INVALID_ARGUMENT", "tare model server: "+err.Error()))
			return
		}
		c.model, c.stream = wrapped.Model, method == "streamGenerateContent"
		c.api, c.inputTokens = apiCodeAssist, estimateTokens(len(body))
		if k := conversationKey(r.Header); k != "" {
			c.key = k
		}
		s.answer(w, r, rec, c)
	case "countTokens":
		rec.Outcome = "count_tokens"
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": estimateTokens(len(body))})
	case "loadCodeAssist":
		// A user already set up on the free tier, in tare's project: no onboarding.
		writeJSON(w, http.StatusOK, map[string]any{
			"currentTier": freeTier, "allowedTiers": []any{withDefault(freeTier)},
			"cloudaicompanionProject": codeAssistProject,
		})
	case "onboardUser":
		// The long-running operation, done at once.
		writeJSON(w, http.StatusOK, map[string]any{"name": "operations/tare-onboard", "done": true,
			"response": map[string]any{"cloudaicompanionProject": map[string]any{"id": codeAssistProject, "name": codeAssistProject}}})
	case "listExperiments":
		writeJSON(w, http.StatusOK, map[string]any{"experimentIds": []any{}, "flags": []any{}})
	case "retrieveUserQuota":
		writeJSON(w, http.StatusOK, map[string]any{"buckets": []any{}})
	case "fetchAdminControls":
		writeJSON(w, http.StatusOK, map[string]any{"adminControlsApplicable": false})
	case "getCodeAssistGlobalUserSetting", "setCodeAssistGlobalUserSetting":
		writeJSON(w, http.StatusOK, map[string]any{"freeTierDataCollectionOptin": false})
	case "recordCodeAssistMetrics":
		writeJSON(w, http.StatusOK, map[string]any{})
	default:
		rec.Outcome = "not_found"
		writeJSON(w, http.StatusNotFound, geminiError(http.StatusNotFound, "NOT_FOUND",
			"tare model server: no Code Assist method "+method))
	}
}

func withDefault(tier map[string]any) map[string]any {
	t := map[string]any{"isDefault": true}
	for k, v := range tier {
		t[k] = v
	}
	return t
}

// codeAssistWrap is a GenerateContentResponse as Code Assist sends it.
func (m *reply) codeAssistWrap(r map[string]any) map[string]any {
	return map[string]any{"response": r, "traceId": m.respID}
}

func (m *reply) codeAssistBody() map[string]any {
	return m.codeAssistWrap(m.geminiBody())
}

func (m *reply) codeAssistEvents() []sseEvent {
	events := m.geminiEvents()
	for i := range events {
		events[i].data = m.codeAssistWrap(events[i].data.(map[string]any))
	}
	return events
}

// isCodeAssist says whether p is a Code Assist method path (".../v1internal:METHOD").
func isCodeAssist(p string) bool {
	_, ok := codeAssistMethod(p)
	return ok
}

// tokenInfo answers Google's OAuth token check (oauth2.googleapis.com/tokeninfo), which
// Gemini CLI makes on every start with a cached login before it trusts the token: a test
// room's unread tunnel to that host is sent here, so the real CLI starts on a login copy.
func (s *Server) tokenInfo(w *statusWriter, r *http.Request, rec *Request) {
	rec.Outcome = "setup"
	writeJSON(w, http.StatusOK, map[string]any{
		"azp": "tare", "aud": "tare", "sub": "0", "email": "tare@example.invalid",
		"scope":      "https://www.googleapis.com/auth/cloud-platform https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/userinfo.profile",
		"expires_in": 3599, "access_type": "offline",
	})
}

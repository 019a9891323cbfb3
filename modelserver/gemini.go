package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Google's Gemini API (generativelanguage.googleapis.com, as Gemini CLI's
// @google/genai SDK calls it): POST {base}/{version}/models/{model}:ACTION
// with ACTION streamGenerateContent (?alt=sse: bare "data:" events, each a
// whole GenerateContentResponse), generateContent (one such object) or
// countTokens. The model is in the path, not the body. Tools arrive as
// functionDeclarations with parametersJsonSchema (or the older parameters);
// a call is a functionCall part, its result a functionResponse part of the
// next user turn. Errors are {"error": {code, message, status}}.

const apiGemini api = "gemini"

// geminiAction splits ".../models/NAME:ACTION" into the model and the action; ok is false
// for any other path.
func geminiAction(p string) (model, action string, ok bool) {
	i := strings.LastIndex(p, "/models/")
	if i < 0 {
		return "", "", false
	}
	model, action, ok = strings.Cut(p[i+len("/models/"):], ":")
	return model, action, ok && model != "" && !strings.Contains(model, "/")
}

// gemini answers one Gemini API call.
func (s *Server) gemini(w *statusWriter, r *http.Request, rec *Request, model, action string, body []byte) {
	rec.API = string(apiGemini)
	if r.Method != http.MethodPost {
		s.notAllowed(w, r, rec, "POST")
		return
	}
	switch action {
	case "countTokens":
		rec.Outcome = "count_tokens"
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": estimateTokens(len(body))})
	case "streamGenerateContent", "generateContent":
		c, err := parseGemini(body)
		if err != nil {
			rec.Outcome, rec.Note = "bad_request", err.Error()
			writeJSON(w, http.StatusBadRequest, geminiError(http.StatusBadRequest, "INVALID_ARGUMENT", "tare model server: "+err.Error()))
			return
		}
		c.model, c.stream = model, action == "streamGenerateContent"
		c.api, c.inputTokens = apiGemini, estimateTokens(len(body))
		if k := conversationKey(r.Header); k != "" {
			c.key = k
		}
		s.answer(w, r, rec, c)
	default:
		rec.Outcome = "not_found"
		writeJSON(w, http.StatusNotFound, geminiError(http.StatusNotFound, "NOT_FOUND",
			"tare model server: no Gemini method "+action+" (it answers streamGenerateContent, generateContent and countTokens)"))
	}
}

// geminiFiller is the model text Gemini CLI puts in the history in place of a reply the
// model never gave, so that a resumed session's turns still alternate.
const geminiFiller = "[The previous response was interrupted before it completed.]"

// geminiPart is a part of a Gemini content; only what the server reads.
type geminiPart struct {
	Text             string          `json:"text"`
	FunctionCall     json.RawMessage `json:"functionCall"`
	FunctionResponse json.RawMessage `json:"functionResponse"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

func parseGemini(body []byte) (*convo, error) {
	var req struct {
		Contents          json.RawMessage `json:"contents"`
		SystemInstruction *geminiContent  `json:"systemInstruction"`
		Tools             []struct {
			FunctionDeclarations []struct {
				Name                 string         `json:"name"`
				Parameters           map[string]any `json:"parameters"`
				ParametersJSONSchema map[string]any `json:"parametersJsonSchema"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseMimeType   string         `json:"responseMimeType"`
			ResponseSchema     map[string]any `json:"responseSchema"`
			ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("generateContent request: %v", err)
	}
	var contents []geminiContent
	if len(req.Contents) > 0 && string(req.Contents) != "null" {
		if err := json.Unmarshal(req.Contents, &contents); err != nil {
			return nil, fmt.Errorf("generateContent request: contents: %v", err)
		}
	}
	c := &convo{}
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			schema := f.ParametersJSONSchema
			if schema == nil {
				schema = f.Parameters
			}
			c.tools = append(c.tools, offeredTool{name: f.Name, kind: "function", props: props(schema)})
		}
	}
	if g := req.GenerationConfig; g.ResponseMimeType == "application/json" {
		c.structured, c.schema = true, g.ResponseJSONSchema
		if c.schema == nil {
			c.schema = g.ResponseSchema
		}
	}
	var texts []string
	if req.SystemInstruction != nil {
		texts = append(texts, partsText(req.SystemInstruction.Parts))
	}
	inModel := false
	for i, m := range contents {
		if m.Role == "model" && len(m.Parts) == 1 && m.Parts[0].Text == geminiFiller {
			// Gemini CLI's stand-in for a turn the model never took (a session resumed
			// right after tool results): not a scripted turn.
			continue
		}
		if m.Role == "model" {
			if !inModel {
				c.turns++
			}
			inModel = true
		} else {
			inModel = false
		}
		if i < 3 {
			texts = append(texts, partsText(m.Parts))
		}
	}
	c.cwd = findCwd(texts...)
	c.history = hashOf(req.Contents)
	return c, nil
}

func partsText(parts []geminiPart) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Text != "" {
			b.WriteString(p.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// geminiParts are the answer's parts: the text, then one functionCall per call. Custom
// tools do not exist in this dialect, so their input travels as {"input": ...}.
func (m *reply) geminiParts(text string) []any {
	var parts []any
	if text != "" {
		parts = append(parts, map[string]any{"text": text})
	}
	for _, c := range m.calls {
		args := c.args
		if c.custom {
			args, _ = json.Marshal(map[string]string{"input": c.input})
		}
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": c.name, "args": args}})
	}
	return parts
}

func (m *reply) geminiUsage() map[string]any {
	return map[string]any{
		"promptTokenCount": m.in, "candidatesTokenCount": m.out, "totalTokenCount": m.in + m.out,
		"cachedContentTokenCount": 0,
	}
}

// geminiResponse is one GenerateContentResponse; the last one of a stream carries the
// finish reason and the usage.
func (m *reply) geminiResponse(parts []any, last bool) map[string]any {
	if parts == nil {
		parts = []any{}
	}
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	r := map[string]any{"candidates": []any{cand}, "modelVersion": m.model, "responseId": m.respID}
	if last {
		cand["finishReason"] = "STOP"
		r["usageMetadata"] = m.geminiUsage()
	}
	return r
}

func (m *reply) geminiBody() map[string]any {
	m.respID = newID("")
	return m.geminiResponse(m.geminiParts(m.text), true)
}

// geminiEvents are the stream: the text in pieces, then the calls with the finish reason
// and usage, as the real API sends them.
func (m *reply) geminiEvents() []sseEvent {
	m.respID = newID("")
	var events []sseEvent
	pieces := chunks(m.text, textChunk)
	for i, piece := range pieces {
		last := i == len(pieces)-1 && len(m.calls) == 0
		events = append(events, sseEvent{data: m.geminiResponse([]any{map[string]any{"text": piece}}, last)})
	}
	if len(m.calls) > 0 || len(pieces) == 0 {
		events = append(events, sseEvent{data: m.geminiResponse(m.geminiParts(""), true)})
	}
	return events
}

// geminiError is the API's error object.
func geminiError(code int, status, msg string) map[string]any {
	return map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status}}
}

// writeGeminiFailure answers an injected error as the Gemini API does: a spent quota is
// 429 RESOURCE_EXHAUSTED naming the quota, an overloaded model 503 UNAVAILABLE, an expired
// login 401 UNAUTHENTICATED.
func writeGeminiFailure(w http.ResponseWriter, kind ErrorKind) {
	if kind == ErrLogin {
		writeJSON(w, http.StatusUnauthorized, geminiError(http.StatusUnauthorized, "UNAUTHENTICATED",
			"Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."))
		return
	}
	if kind == ErrQuota {
		e := geminiError(http.StatusTooManyRequests, "RESOURCE_EXHAUSTED",
			"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.")
		e["error"].(map[string]any)["details"] = []any{
			map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
				"quotaMetric": "generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count",
				"quotaId":     "GenerateContentPaidTierInputTokensPerModelPerDay",
			}}},
		}
		writeJSON(w, http.StatusTooManyRequests, e)
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, geminiError(http.StatusServiceUnavailable, "UNAVAILABLE",
		"The model is overloaded. Please try again later."))
}

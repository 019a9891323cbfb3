package agent

import (
	"encoding/json"
	"strings"
)

// stopLine implements providerStopper for Gemini CLI: the result event that ended the run has
// status "error" and the provider's message, after Gemini CLI's own retries: "[API Error:
// terminated]" for a cut stream, the API's error for a spent quota (which it does not retry),
// an expired login (401 UNAUTHENTICATED) or an overload it gave up on.
func (Gemini) stopLine(line []byte) (bool, ProviderStop, bool) {
	var e geminiEvent
	if json.Unmarshal(line, &e) != nil || e.Type != "result" {
		return false, ProviderStop{}, false
	}
	if e.Status == "success" || e.Error == nil {
		return true, ProviderStop{}, false
	}
	stop, ok := geminiStop(e.Error.Message)
	return true, stop, ok
}

// stopStderr implements stderrStopper for Gemini CLI: without a result event, stderr's last
// line.
func (Gemini) stopStderr(msg string) (ProviderStop, bool) { return geminiStop(msg) }

func geminiStop(msg string) (ProviderStop, bool) {
	if msg = strings.TrimSpace(msg); msg == "" {
		return ProviderStop{}, false
	}
	// "[API Error: terminated]": the words inside are the provider's.
	inner := strings.TrimSuffix(strings.TrimPrefix(msg, "[API Error: "), "]")
	kind, ok := classifyStop(inner)
	if !ok {
		return ProviderStop{}, false
	}
	return ProviderStop{Kind: kind, Detail: clip(oneLine(msg), 200)}, true
}

package agent

import (
	"bytes"
	"encoding/json"
	"strings"
)

// providerStop implements providerStopper for Gemini CLI: the result event that ended the
// run has status "error" and the provider's message, after Gemini CLI's own retries: "[API
// Error: terminated]" for a cut stream, the API's error for a spent quota (which it does
// not retry) or an overload it gave up on. Without a result event, stderr's last line.
func (Gemini) providerStop(stdout, stderr []byte) (ProviderStop, bool) {
	msg, ended := "", false
	_ = eachJSON(bytes.NewReader(stdout), func(line []byte) error {
		var e geminiEvent
		if json.Unmarshal(line, &e) != nil || e.Type != "result" {
			return nil
		}
		ended, msg = true, ""
		if e.Status != "success" && e.Error != nil {
			msg = e.Error.Message
		}
		return nil
	})
	if !ended {
		msg = lastLine(stderr)
	}
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

package workshop

import (
	"fmt"
	"strings"
)

// efforts are the levels each agent's CLI takes for a writer's effort, as its pinned
// version's --help (or config) names them: a level it has no way to take is refused at
// prepare rather than run as the agent's default under the name asked.
var efforts = map[string][]string{
	// codex -c model_reasoning_effort=LEVEL
	"codex": {"minimal", "low", "medium", "high", "xhigh"},
	// claude --effort LEVEL
	"claude": {"low", "medium", "high", "xhigh", "max"},
	// pi --thinking LEVEL
	"pi": {"off", "minimal", "low", "medium", "high", "xhigh"},
}

// effortArgs are the agent's command-line arguments that ask for effort ("" asks none).
func effortArgs(agentName, effort string) []string {
	if effort == "" {
		return nil
	}
	switch agentName {
	case "codex":
		return []string{"-c", "model_reasoning_effort=" + effort}
	case "claude":
		return []string{"--effort", effort}
	case "pi":
		return []string{"--thinking", effort}
	}
	return nil
}

// checkEffort refuses an effort writer i's agent has no way to take.
func checkEffort(field, agentName, effort string) error {
	if effort == "" {
		return nil
	}
	levels, ok := efforts[agentName]
	if !ok {
		return fmt.Errorf("%s %q: %s takes no effort level from tare (its CLI has no flag for one); fix: leave effort out for this writer", field, effort, agentName)
	}
	for _, l := range levels {
		if l == effort {
			return nil
		}
	}
	return fmt.Errorf("%s %q: %s takes one of %s; fix: use one of those", field, effort, agentName, strings.Join(levels, ", "))
}

package config

import (
	"fmt"
	"time"

	"github.com/BurntSushi/toml"
)

// DefaultStallFloor is the least silence that makes a tail stalled, when [tails] names none.
const DefaultStallFloor = 60 * time.Second

// Tails is how tare watches its tails.
type Tails struct {
	// StallFloor is the least time without a model answer or a tool call that marks a tail
	// stalled, whatever its own pace ("60s"); a slower agent gets longer (see engine).
	StallFloor string `toml:"stall_floor"`
}

// Floor is StallFloor as a duration (DefaultStallFloor when unset).
func (t Tails) Floor() time.Duration {
	d, err := time.ParseDuration(t.StallFloor)
	if err != nil || t.StallFloor == "" {
		return DefaultStallFloor
	}
	return d
}

func (t Tails) validate(name string, data []byte) error {
	if t.StallFloor == "" {
		return nil
	}
	if d, err := time.ParseDuration(t.StallFloor); err != nil || d <= 0 {
		return fmt.Errorf("%s:%d: key tails.stall_floor: %q is not a positive duration; fix: write it like \"60s\" or \"2m\"",
			name, lineOf(data, toml.Key{"tails", "stall_floor"}), t.StallFloor)
	}
	return nil
}

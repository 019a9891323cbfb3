package taskset

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Config is what tare takes from task.toml.
//
// Used: [agent] timeout_sec (the tail's limit), [verifier] timeout_sec and env (how test.sh is
// run), [environment] build_timeout_sec, docker_image, cpus, memory_mb or memory, storage_mb or
// storage, and allow_internet (the room's network).
//
// Kept, not used: version or schema_version, [task] (name, description, authors, keywords)
// and [metadata], which is free-form by the format's design; [solution] is accepted and ignored.
// Other keys inside the known tables (Harbor adds some over versions, such as gpus or the
// verifier's user) are listed in Ignored so a caller can warn about them.
//
// Refused: any other top-level key or table, since a misspelt [verifer] would otherwise drop
// the verifier's timeout and env without a word.
type Config struct {
	// Version is the format version the task declares (version or schema_version).
	Version string
	// Task is the [task] table as written.
	Task map[string]any
	// Metadata is the [metadata] table as written.
	Metadata map[string]any
	// AgentTimeout is [agent] timeout_sec, or 0 when the task sets none.
	AgentTimeout time.Duration
	// VerifierTimeout is [verifier] timeout_sec, or 0 when the task sets none.
	VerifierTimeout time.Duration
	// VerifierEnv is [verifier] env, set for test.sh.
	VerifierEnv map[string]string
	// BuildTimeout is [environment] build_timeout_sec, or 0 when the task sets none.
	BuildTimeout time.Duration
	// Image is [environment] docker_image, a prebuilt image used instead of environment/.
	Image string
	// CPUs is [environment] cpus, or 0 when the task sets none.
	CPUs float64
	// MemoryMB is [environment] memory_mb (or memory, as "4G"), or 0 when the task sets none.
	MemoryMB int64
	// StorageMB is [environment] storage_mb (or storage), or 0 when the task sets none.
	StorageMB int64
	// AllowInternet is [environment] allow_internet; Harbor's default is true.
	AllowInternet bool
	// Ignored lists the keys inside known tables that tare does not use, as "table.key", sorted.
	Ignored []string
}

// rawConfig mirrors task.toml; numbers are any because TOML tells 120 from 120.0.
type rawConfig struct {
	Version       string         `toml:"version"`
	SchemaVersion string         `toml:"schema_version"`
	Task          map[string]any `toml:"task"`
	Metadata      map[string]any `toml:"metadata"`
	Solution      map[string]any `toml:"solution"`
	Agent         struct {
		TimeoutSec any `toml:"timeout_sec"`
	} `toml:"agent"`
	Verifier struct {
		TimeoutSec any               `toml:"timeout_sec"`
		Env        map[string]string `toml:"env"`
	} `toml:"verifier"`
	Environment struct {
		BuildTimeoutSec any    `toml:"build_timeout_sec"`
		DockerImage     string `toml:"docker_image"`
		CPUs            any    `toml:"cpus"`
		MemoryMB        any    `toml:"memory_mb"`
		Memory          string `toml:"memory"`
		StorageMB       any    `toml:"storage_mb"`
		Storage         string `toml:"storage"`
		AllowInternet   *bool  `toml:"allow_internet"`
	} `toml:"environment"`
}

// knownTables are the top-level keys of the format.
var knownTables = map[string]bool{
	"version": true, "schema_version": true, "task": true, "metadata": true,
	"solution": true, "agent": true, "verifier": true, "environment": true,
}

// parseConfig reads task.toml's text; path is only for messages.
func parseConfig(data []byte, path string) (*Config, error) {
	var raw rawConfig
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &Error{Path: path, Field: fmt.Sprintf("line %d", pe.Position.Line), Problem: pe.Message, Fix: "fix the TOML"}
		}
		return nil, &Error{Path: path, Problem: err.Error(), Fix: "fix the TOML"}
	}
	cfg := &Config{
		Version:       raw.Version,
		Task:          raw.Task,
		Metadata:      raw.Metadata,
		VerifierEnv:   raw.Verifier.Env,
		Image:         raw.Environment.DockerImage,
		AllowInternet: raw.Environment.AllowInternet == nil || *raw.Environment.AllowInternet,
	}
	if cfg.Version == "" {
		cfg.Version = raw.SchemaVersion
	}
	for _, k := range md.Undecoded() {
		top := k[0]
		if !knownTables[top] {
			return nil, &Error{Path: path, Field: top, Problem: "is not part of the task format", Fix: "remove it, or move it under [metadata]"}
		}
		if len(k) == 2 {
			cfg.Ignored = append(cfg.Ignored, k.String())
		}
	}
	sort.Strings(cfg.Ignored)

	if cfg.AgentTimeout, err = seconds(path, "agent.timeout_sec", raw.Agent.TimeoutSec); err != nil {
		return nil, err
	}
	if cfg.VerifierTimeout, err = seconds(path, "verifier.timeout_sec", raw.Verifier.TimeoutSec); err != nil {
		return nil, err
	}
	if cfg.BuildTimeout, err = seconds(path, "environment.build_timeout_sec", raw.Environment.BuildTimeoutSec); err != nil {
		return nil, err
	}
	if cfg.CPUs, err = positive(path, "environment.cpus", raw.Environment.CPUs); err != nil {
		return nil, err
	}
	if cfg.MemoryMB, err = megabytes(path, "environment.memory", raw.Environment.MemoryMB, raw.Environment.Memory); err != nil {
		return nil, err
	}
	if cfg.StorageMB, err = megabytes(path, "environment.storage", raw.Environment.StorageMB, raw.Environment.Storage); err != nil {
		return nil, err
	}
	return cfg, nil
}

// positive reads an optional positive finite number; absent is 0.
func positive(path, field string, v any) (float64, error) {
	var f float64
	switch n := v.(type) {
	case nil:
		return 0, nil
	case int64:
		f = float64(n)
	case float64:
		f = n
	default:
		return 0, &Error{Path: path, Field: field, Problem: fmt.Sprintf("is %#v, not a number", v), Fix: "write a positive number"}
	}
	if !(f > 0) || math.IsInf(f, 0) {
		return 0, &Error{Path: path, Field: field, Problem: fmt.Sprintf("is %v", v), Fix: "write a positive number"}
	}
	return f, nil
}

// seconds reads an optional timeout in seconds.
func seconds(path, field string, v any) (time.Duration, error) {
	f, err := positive(path, field, v)
	if err != nil {
		return 0, err
	}
	if f > float64(math.MaxInt64)/float64(time.Second) {
		return 0, &Error{Path: path, Field: field, Problem: fmt.Sprintf("is %v, too long", v), Fix: "write a timeout in seconds"}
	}
	return time.Duration(f * float64(time.Second)), nil
}

// megabytes reads a size given either as FIELD_mb (a number of megabytes) or as FIELD (a
// string such as "512M" or "4G"), the two spellings Harbor's versions use.
func megabytes(path, field string, mb any, size string) (int64, error) {
	if mb != nil && size != "" {
		return 0, &Error{Path: path, Field: field, Problem: "is given twice, as " + field + "_mb and " + field, Fix: "keep one"}
	}
	if mb != nil {
		f, err := positive(path, field+"_mb", mb)
		return int64(math.Ceil(f)), err
	}
	if size == "" {
		return 0, nil
	}
	bad := &Error{Path: path, Field: field, Problem: fmt.Sprintf("is %q", size), Fix: `write a size such as "512M" or "4G"`}
	s := strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(size)), "B")
	scale := 1.0 / (1 << 20) // plain bytes
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K':
			scale, s = 1.0/1024, s[:n-1]
		case 'M':
			scale, s = 1, s[:n-1]
		case 'G':
			scale, s = 1024, s[:n-1]
		case 'T':
			scale, s = 1024*1024, s[:n-1]
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f > 0) || math.IsInf(f*scale, 0) || f*scale > math.MaxInt64/2 {
		return 0, bad
	}
	return int64(math.Ceil(f * scale)), nil
}

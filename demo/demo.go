// Package demo is the experiment that ships with tare: a small project, a task, a check and
// a model script with a seeded branch, so `tare demo` shows a calibrate on tare's own model
// server, with no account, in a minute.
package demo

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed project model.toml cliff.toml swap.toml
var files embed.FS

// Task is the demo's prompt.
const Task = "Make greet.sh print exactly: hello, tare"

// Check passes when greet.sh prints the greeting.
const Check = `test "$(sh greet.sh)" = "hello, tare"`

// CliffStep is where the cliff demo's runs are lost: the tool call at step 4 (cliff.toml's
// fourth turn) sometimes puts greet.sh back as the template had it, and no later step fixes
// it again.
const CliffStep = 4

// CliffSeed is a seed whose recording of cliff.toml takes that branch, so the demo has a
// failed run to explain.
const CliffSeed = 13

// SwapSeed is a seed whose original a of swap.toml adds the settings file that breaks
// greet.sh and whose original b does not, so the workspace decides and the agent does not.
const SwapSeed = 5

// Paths are where Extract put the demo.
type Paths struct {
	// Project is the demo project's folder.
	Project string
	// Script is the model script for tare's model server.
	Script string
	// CliffScript is the model script of the cliff demo (see CliffStep).
	CliffScript string
	// SwapScript is the model script of the swap demo (see SwapSeed).
	SwapScript string
}

// Extract writes the demo project and its model script into dir, which must not exist yet.
func Extract(dir string) (Paths, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return Paths{}, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return Paths{}, fmt.Errorf("demo folder %s: %v", dir, err)
	}
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if filepath.Ext(p) == ".sh" {
			mode = 0o755
		}
		return os.WriteFile(dst, data, mode)
	})
	if err != nil {
		return Paths{}, err
	}
	return Paths{Project: filepath.Join(dir, "project"), Script: filepath.Join(dir, "model.toml"), CliffScript: filepath.Join(dir, "cliff.toml"),
		SwapScript: filepath.Join(dir, "swap.toml")}, nil
}

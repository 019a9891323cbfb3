package browser

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
)

// Main is `tare screenshot --exec CHROMIUM URL`, run inside the render room: it renders URL
// and writes the Shot as one JSON object on stdout (the room has no folder to write out to).
func Main(args []string) int {
	return run(args, os.Stdout, os.Stderr)
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tare screenshot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	exec := fs.String("exec", "", "the Chromium binary")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *exec == "" || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "tare screenshot: want --exec CHROMIUM and one URL")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), shotTimeout)
	defer cancel()
	shot, err := Shoot(ctx, *exec, fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "tare screenshot:", err)
		return 1
	}
	if err := json.NewEncoder(stdout).Encode(shot); err != nil {
		fmt.Fprintln(stderr, "tare screenshot:", err)
		return 1
	}
	return 0
}

package capsule

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// SnapMain is the in-room command `tare snap --store /tare-run [--base DIR] --work /work
// [--id ID]`: one capsule of the workspace. With --base, --store is the room's staging
// store over the run's store at DIR, read-only (OpenStage); the host imports it later.
// Without --id it reads a Claude Code PostToolUse hook input (JSON) on stdin and uses its
// tool_use_id. It prints nothing on stdout (hook output is shown to the agent) and exits 0
// when the capsule was written, even if some files could not be read (they are listed in
// the capsule record). On failure it prints one line on stderr and exits 1: Claude Code
// shows that to the operator and goes on, where exit 2 would feed it to the model.
func SnapMain(args []string) int {
	return snapMain(args, os.Stdin, os.Stderr)
}

// hookInput is the part of a Claude Code hook's stdin that tare snap needs.
type hookInput struct {
	ToolUseID string `json:"tool_use_id"`
	Event     string `json:"hook_event_name"`
}

// maxHookInput bounds what is read from stdin: a tool response can be large, the id is not.
const maxHookInput = 64 << 20

func snapMain(args []string, stdin io.Reader, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tare snap: "+format+"\n", a...)
		return 1
	}
	flags := flag.NewFlagSet("tare snap", flag.ContinueOnError)
	flags.SetOutput(stderr)
	store := flags.String("store", "/tare-run", "the capsule store folder (with --base: the staging store)")
	base := flags.String("base", "", "the run's store, read only: --store stages over it")
	work := flags.String("work", "/work", "the workspace to snapshot")
	id := flags.String("id", "", "the tool-use id (default: tool_use_id of the hook JSON on stdin)")
	socket := flags.String("socket", SnapSocket, "a tare snap-watch serving this workspace, asked first")
	if err := flags.Parse(args); err != nil {
		return 1
	}
	if flags.NArg() > 0 {
		return fail("unexpected argument %q; usage: tare snap --store DIR --work DIR [--id ID]", flags.Arg(0))
	}
	if *id == "" {
		var in hookInput
		if err := json.NewDecoder(io.LimitReader(stdin, maxHookInput)).Decode(&in); err != nil {
			return fail("read the hook input (JSON on stdin): %v; run from a PostToolUse hook or pass --id", err)
		}
		if in.ToolUseID == "" {
			return fail("the hook input (event %q) has no tool_use_id; run from a PostToolUse hook or pass --id", in.Event)
		}
		*id = in.ToolUseID
	}
	// A watcher that knows what changed makes the capsule cost only that; without one (or
	// if it fails) the walk below is the fallback, and gives the same capsule.
	if askWatcher(*socket, *id) {
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := openLayered(*store, *base)
	if err != nil {
		return fail("%v", err)
	}
	if _, err := s.Snap(ctx, *work, *id); err != nil {
		return fail("%v", err)
	}
	return 0
}

// openLayered opens dir as a store, or as a staging store over base when base is set.
func openLayered(dir, base string) (*Store, error) {
	if base != "" {
		return OpenStage(dir, base)
	}
	return Open(dir)
}

// HookCommand is the command line an agent's after-tool hook runs (through its shell, with
// the hook's JSON on stdin) to take a capsule. It asks the snap-watch serving socket with
// shell builtins first (hookLine: no program starts but the shell the agent runs anyway);
// failing that, it runs bin's snap with the staging store, the run's store it stages over,
// the workspace and the socket, which asks the watcher over the socket, then walks. The
// engine puts it in the agent's settings; BenchmarkHookStep runs this very line.
func HookCommand(bin, store, base, work, socket string) string {
	return hookLine(hookDir(socket)) + "exec " + strings.Join([]string{shellQuote(bin), "snap", "--store", shellQuote(store), "--base", shellQuote(base),
		"--work", shellQuote(work), "--socket", shellQuote(socket), "9<&-"}, " ")
}

// shellQuote quotes s for sh when it holds anything but path characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

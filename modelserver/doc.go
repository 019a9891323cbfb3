// Package modelserver is tare's own model server: a small HTTP server on
// loopback that speaks the four wire APIs the supported agents use, so
// that Claude Code, Codex CLI, pi and Gemini CLI run for real, offline,
// against a model whose answers are known in advance.
//
// It is what tare's probe, demos and integration tests talk to, and what
// `tare model-server` starts for users.
//
// # Endpoints
//
//	HEAD /, GET /                  200 (agents pre-warm the connection)
//	POST /v1/messages              Anthropic Messages (SSE when "stream": true, JSON otherwise;
//	                               ?beta=true tolerated) - Claude Code, pi anthropic-messages
//	POST /v1/messages/count_tokens {"input_tokens": N}
//	POST /v1/responses             OpenAI Responses (SSE or JSON) - Codex, pi openai-responses
//	POST /v1/chat/completions      OpenAI Chat Completions (SSE or JSON) - pi openai-completions
//	GET  /v1/models                one model, "tare-model"
//	POST /v1beta/models/M:streamGenerateContent?alt=sse, :generateContent
//	                               Gemini API (SSE "data:" events or JSON) - Gemini CLI
//	POST /v1beta/models/M:countTokens {"totalTokens": N}
//	POST /v1internal:streamGenerateContent?alt=sse, :generateContent
//	                               Code Assist (the Gemini API wrapped, model in the body) -
//	                               Gemini CLI on a Google login; its setup calls
//	                               (loadCodeAssist, onboardUser, ...) see codeassist.go
//	POST /tokeninfo                a Google token check (tests' stand-in for oauth2)
//
// Paths are matched by their ending, so a base URL with or without /v1
// works. Give Claude Code and pi's anthropic provider Server.URL(), and
// Codex and pi's OpenAI providers Server.URL()+"/v1".
//
// Every answer reports token usage estimated from sizes: input tokens are
// the request body's length / 4, output tokens the reply's text and tool
// arguments / 4. Anthropic usage is in message_start and message_delta,
// Responses usage in response.completed, Chat usage in the last chunk
// before "data: [DONE]". Agents compute cost from these numbers.
//
// # Modes
//
// Probe mode (Options.Script nil) records every request and answers every
// model call with the text "tare probe: recorded." and the end of the turn
// (stop_reason end_turn, status completed, finish_reason stop).
//
// Script mode replays a conversation script, described below.
//
// In both modes every request is kept (Server.Requests) and logged as one
// JSON object per line (Options.Log, Options.LogPath): time, method, path,
// headers with Authorization, X-Api-Key and Cookie values replaced by
// "<redacted>", the raw JSON body, the status, and for model calls the
// dialect, conversation key, turn, branch, attempt and outcome.
//
// # Script format
//
// A script is a TOML file with one [[turn]] table per assistant turn. One
// script drives every agent: actions are written in an agent-neutral
// form and mapped, per request, to the tools that request offers.
//
//	final = "All done."   # optional: text after the last turn (default "Done.")
//	seed = 42             # optional: branch seed; a non-zero Options.Seed wins
//
//	[[turn]]
//	text = "I'll create the file."            # assistant text, before any tool call
//	shell = "echo hi > a.txt"                 # or shell = ["cmd one", "cmd two"]
//	write = { path = "notes/a.txt", content = "hello\n" }
//
//	[[turn]]
//	text = "Done: a.txt and notes/a.txt exist."
//
// Keys of a turn:
//
//   - text: the assistant's text. A turn with text and no action ends the
//     agent's run (the CLI prints the text and exits); the next turn is
//     served when the conversation continues (a resume, a new prompt).
//   - shell: a command, or an array of commands, run with the agent's
//     shell tool: Claude Code Bash{command}, pi bash{command}, Codex
//     exec_command{cmd} (or shell_command{command}, or shell{command:
//     ["bash","-lc",cmd]} when that is what the request offers); failing
//     those, any function tool with a "command" or "cmd" parameter.
//   - write: a table {path, content}, or an array of them, or
//     [[turn.write]] tables. Claude Code gets Write{file_path, content}
//     with file_path absolute below the working directory named in the
//     request (its system prompt or Codex's environment context; /work,
//     the workspace in tare's rooms, when none is named); pi gets
//     write{path, content}; an agent without a write tool (Codex) gets its
//     shell tool with a quoted heredoc (printf when content does not end
//     in a newline), creating parent folders first.
//   - [[turn.tool]] with name = "X" and input = {...}: one exact tool call
//     with that input as its JSON arguments, for tools the neutral forms
//     do not cover. A Responses free-form tool (such as Codex's
//     apply_patch when it is offered as a custom tool) gets the input's
//     "input" string as its raw input.
//   - error = "quota" | "overloaded" | "drop" | "login", with error_times = N: the
//     first N attempts of this turn fail, later attempts answer normally;
//     error_times = 0 (or absent) fails every attempt. quota is HTTP 429
//     with the provider's body (Anthropic rate_limit_error, OpenAI
//     insufficient_quota); overloaded is Anthropic 529 overloaded_error,
//     OpenAI 503 server_error; drop starts the answer (half of the SSE
//     events, or half of a JSON body) and cuts the connection; login is
//     HTTP 401 for an expired login or a revoked key (Anthropic
//     authentication_error, OpenAI invalid_api_key, Gemini UNAUTHENTICATED).
//   - delay = "300ms": wait before answering (errors included).
//   - [[turn.branch]]: a weighted alternative, see below.
//
// Several actions in one turn become parallel tool calls in one assistant
// message, in the order shell, write, tool. Agents may run parallel calls
// in any order, so put steps that depend on each other in separate turns.
//
// Claude Code's Write refuses to overwrite a file it has not read in the
// session; overwrite existing files with shell, or read them first with a
// [[turn.tool]] Read.
//
// When an action cannot be mapped (no shell tool offered, say), the turn
// is answered with a text explaining why and the end of the turn, and
// the log records the outcome "unmapped".
//
// How the CLIs take injected errors (checked by this package's tests with
// Claude Code 2.1.197, Codex 0.171.0 and pi 0.73.1): Claude Code retries a
// 429 or a 529 and finishes; on a cut stream it either retries or ends its
// run in error ("Connection closed mid-response"), depending on how much of
// the stream it had read. Codex configured with request_max_retries = 0 and
// stream_max_retries = 0 stops at once ("Quota exceeded", "stream
// disconnected before completion"). pi retries a cut stream and finishes.
//
// # Branches
//
//	[[turn]]
//	text = "Tests pass."
//	shell = "make test"
//
//	[[turn.branch]]       # 30%: the same turn, but the provider is overloaded once
//	p = 0.3
//	error = "overloaded"
//	error_times = 1
//
//	[[turn.branch]]       # 20%: a different answer
//	p = 0.2
//	text = "Tests fail."
//	shell = "make test; exit 1"
//
// A branch holds the same keys as a turn (text, shell, write, tool, error,
// error_times, delay) plus p, its probability, 0 < p <= 1. The p's of a
// turn sum to at most 1. The remainder (1 - sum of p) goes to the turn's
// own content when it has text, an action or an error, and otherwise to
// the last branch; so a turn made only of branches whose p's sum to 0.99
// still always answers.
//
// A branch replaces the turn's text and actions if it sets either; a
// branch that sets neither answers with the turn's text and actions (so it
// can add just an error or a delay). A branch without a delay inherits the
// turn's. The turn's own error belongs to the plain turn only.
//
// # Turns, sessions and draws
//
// The turn served is the number of assistant turns already in the
// request's history (a run of assistant messages or output items that no
// user message or tool result interrupts counts once). So a resumed
// session continues where it stopped, retries repeat their turn, and any
// number of concurrent sessions never interfere. After the last turn the
// server answers with the final text and the end of the turn.
//
// The conversation key is the session id the client sends: Claude Code's
// X-Claude-Code-Session-Id header, Codex's session-id / thread-id, pi's
// session_id / x-session-affinity / x-client-request-id headers or its
// prompt_cache_key (pi's openai-responses provider sends one; its
// anthropic-messages provider does not, nor does openai-completions unless
// models.json sets compat.sendSessionAffinityHeaders).
//
// A branch is drawn from (seed, conversation key, turn): the same session
// always takes the same branch, across retries and resumes, and across
// server restarts with the same seed, while distinct sessions spread
// according to p. Without a key the draw comes from a sequence seeded by
// the seed; an identical retry of a keyless conversation (same history)
// keeps the branch it drew until it is answered without an error.
//
// A run's tails each talk to an address of their own (Server.Stream): its
// draws come from (seed, stream, turn), independent of every other stream
// and of the session id the CLI made up. Tails that resume one recorded
// session therefore sample like separate calls to a real model, and a run
// replays from its seed. Attempts for error_times are counted per
// conversation and turn.
//
// Side calls that are not the main conversation do not use the script and
// do not advance it: requests that offer no tools (Claude Code's title and
// summary calls) get a short text, and requests for structured output
// (Anthropic output_config.format, Responses text.format, Chat
// response_format of type json_schema) get a minimal JSON object valid for
// the schema.
//
// # Errors in scripts
//
// LoadScript and ParseScript check every key. A bad script gives one line
// naming the file, the line when known, the key and the fix, such as:
//
//	flaky.toml:12: turn 2, branch 1: key "p" = 1.5 is out of range; use a probability with 0 < p <= 1
//	flaky.toml:7: turn 1: unknown key "shel"; use one of text, shell, write, tool, error, error_times, delay, branch
//
// See testdata/every-feature.toml for a commented script using every key.
package modelserver

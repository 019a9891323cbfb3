package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"tare/sandbox/roomrelay"
)

// Host side of the relays: one unix socket per Relay in the room's temp
// folder (bound at SockDir). Each connection is either piped to the
// relay's Upstream, or read as an HTTP CONNECT request and tunnelled only
// when the target is in the relay's Allow list.

const (
	dialTimeout   = 10 * time.Second
	headerTimeout = 30 * time.Second
)

type hostRelays struct {
	lns    []net.Listener
	relays []Relay
	log    io.Writer

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool
	refused []string
	wg      sync.WaitGroup
	hosts   io.Writer // Room.HostLog
	// logged counts the host log's lines; past maxHostLines reaches are counted, not logged.
	logged, dropped int
}

// maxHostLines bounds a room's host log (about 1 MB): an agent reaching for hosts in a loop
// cannot fill the run's disk. The log says where it stopped and how many it left out.
const maxHostLines = 10000

// HostReach is one line of a room's host log: a host the room tried to reach, and whether
// its relay let it through.
type HostReach struct {
	Time    time.Time `json:"time"`
	Host    string    `json:"host"`
	Allowed bool      `json:"allowed"`
	// Via is the relay's port in the room.
	Via int `json:"via"`
	// Read is set when the relay ended the room's TLS to meter the requests (an Intercept),
	// instead of tunnelling them unread.
	Read bool `json:"read,omitempty"`
	// Note and Dropped are set on the lines that say the log is full (no Host): from there on
	// reaches are not logged, and the last line counts them.
	Note    string `json:"note,omitempty"`
	Dropped int    `json:"dropped,omitempty"`
}

// reach writes one line of the host log.
func (h *hostRelays) reach(rl Relay, host string, allowed, read bool) {
	if h.hosts == nil {
		return
	}
	r := HostReach{Time: time.Now().UTC(), Host: host, Allowed: allowed, Via: rl.Port, Read: read}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.logged >= maxHostLines {
		if h.dropped == 0 {
			h.writeReach(HostReach{Time: r.Time, Note: fmt.Sprintf("host log full at %d lines: later reaches are counted, not logged", maxHostLines)})
		}
		h.dropped++
		return
	}
	h.logged++
	h.writeReach(r)
}

// writeReach writes one line of the host log; h.mu is held.
func (h *hostRelays) writeReach(r HostReach) {
	line, _ := json.Marshal(r)
	_, _ = h.hosts.Write(append(line, '\n'))
}

// listenRelays binds every relay's socket before bwrap starts, so the room
// never sees a missing socket.
func listenRelays(dir string, relays []Relay, log io.Writer) (*hostRelays, error) {
	if err := checkIntercepts(relays); err != nil {
		return nil, err
	}
	h := &hostRelays{relays: relays, log: log, conns: map[net.Conn]struct{}{}}
	if h.log == nil {
		h.log = io.Discard
	}
	for _, rl := range relays {
		ln, err := net.Listen("unix", filepath.Join(dir, rl.sock()))
		if err != nil {
			h.stop()
			return nil, fmt.Errorf("room: relay for port %d: %v: set Room.TempDir to a short, writable path", rl.Port, err)
		}
		h.lns = append(h.lns, ln)
	}
	return h, nil
}

func (h *hostRelays) serve() {
	for i, ln := range h.lns {
		rl := h.relays[i]
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				if !h.track(c) {
					return
				}
				h.wg.Add(1)
				go func() {
					defer h.wg.Done()
					defer h.untrack(c)
					if rl.Allow != nil {
						h.proxy(c, rl)
					} else {
						h.forward(c, rl)
					}
				}()
			}
		}()
	}
}

// stop closes the listeners and every open connection, then waits for all
// relay goroutines.
func (h *hostRelays) stop() {
	h.mu.Lock()
	h.closed = true
	for _, ln := range h.lns {
		ln.Close()
	}
	for c := range h.conns {
		c.Close()
	}
	h.mu.Unlock()
	h.wg.Wait()
	h.mu.Lock()
	if h.dropped > 0 && h.hosts != nil {
		h.writeReach(HostReach{Time: time.Now().UTC(), Note: fmt.Sprintf("%d reaches after the first %d were not logged", h.dropped, maxHostLines), Dropped: h.dropped})
		h.dropped = 0
	}
	h.mu.Unlock()
}

// track registers c for stop; it closes c and reports false once stopping.
func (h *hostRelays) track(c net.Conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		c.Close()
		return false
	}
	h.conns[c] = struct{}{}
	return true
}

func (h *hostRelays) untrack(c net.Conn) {
	h.mu.Lock()
	delete(h.conns, c)
	h.mu.Unlock()
	c.Close()
}

func (h *hostRelays) logf(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(h.log, format+"\n", args...)
}

func (h *hostRelays) refusedList() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.refused...)
}

func (h *hostRelays) forward(c net.Conn, rl Relay) {
	h.reach(rl, rl.Upstream, true, false)
	up, err := net.DialTimeout("tcp", rl.Upstream, dialTimeout)
	if err != nil {
		h.logf("tare relay :%d: dial %s: %v", rl.Port, rl.Upstream, err)
		return
	}
	if !h.track(up) {
		return
	}
	defer h.untrack(up)
	pipe(c, c, up)
}

func (h *hostRelays) proxy(c net.Conn, rl Relay) {
	c.SetReadDeadline(time.Now().Add(headerTimeout))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
	if req.Method != http.MethodConnect {
		h.logf("tare relay :%d: refused plain-HTTP %s %s: only CONNECT to %s is allowed", rl.Port, req.Method, req.URL, strings.Join(rl.Allow, ", "))
		h.note(req.Method + " " + req.URL.String())
		h.reach(rl, req.Host, false, false)
		respond(c, http.StatusForbidden, "tare: plain-HTTP proxying is refused; use CONNECT to an allowed host:port\n")
		return
	}
	target := req.Host
	if !allowed(rl.Allow, target) {
		h.logf("tare relay :%d: refused CONNECT %s: not in the allow-list (%s)", rl.Port, target, strings.Join(rl.Allow, ", "))
		h.note(target)
		h.reach(rl, target, false, false)
		respond(c, http.StatusForbidden, "tare: "+target+" is not in this room's allow-list\n")
		return
	}
	ic := rl.interceptFor(target)
	h.reach(rl, target, true, ic != nil)
	if ic != nil {
		h.intercept(c, br, rl, ic)
		return
	}
	dial := rl.Dial
	if dial == nil {
		dial = func(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, dialTimeout) }
	}
	up, err := dial(target)
	if err != nil {
		h.logf("tare relay :%d: CONNECT %s: %v", rl.Port, target, err)
		respond(c, http.StatusBadGateway, "tare: "+err.Error()+"\n")
		return
	}
	if !h.track(up) {
		return
	}
	defer h.untrack(up)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	pipe(c, br, up)
}

func (h *hostRelays) note(s string) {
	h.mu.Lock()
	h.refused = append(h.refused, s)
	h.mu.Unlock()
}

func allowed(allow []string, target string) bool {
	for _, a := range allow {
		if strings.EqualFold(a, target) {
			return true
		}
	}
	return false
}

func respond(c net.Conn, code int, body string) {
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}

// closeWriter is a connection that can half-close (TCP and unix sockets).
type closeWriter interface{ CloseWrite() error }

// pipe is roomrelay.Pipe: the host side of a relay copies alike.
func pipe(a net.Conn, ar io.Reader, b net.Conn) { roomrelay.Pipe(a, ar, b) }

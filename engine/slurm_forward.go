package engine

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Nodes that are other machines cannot dial tare's model server on loopback, so tare
// forwards to it from [cluster] callback_addr. That address is on the network: anyone who
// reaches it would reach a model server that answers without a key. So the forwarder relays
// only connections that open with the forward's token (a random secret made per forward),
// and the worker on the node keeps the token out of the room: it listens on the node's
// loopback, and opens each of the room relay's connections to the forwarder with the token.

// forwardHello opens a connection to tare's forwarder: the word, then the 64-hex token.
const forwardHello = "TARE-FORWARD "

// forwardWait bounds how long the forwarder waits for a connection's token.
const forwardWait = 10 * time.Second

// reachable is the address the nodes dial for upstream (tare's model server on loopback),
// and the token it wants: itself and none when the nodes are this machine, else a forwarder
// on [cluster] callback_addr that refuses connections without the token.
func (b *slurmBackend) reachable(upstream string) (string, string, func(), error) {
	host := b.cluster.CallbackAddr
	if upstream == "" || host == "" {
		return upstream, "", func() {}, nil
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return upstream, "", func() {}, nil
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return "", "", nil, err
	}
	token := hex.EncodeToString(secret)
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", "", nil, fmt.Errorf("[cluster] callback_addr %s: listening there for the nodes: %v; fix: give an address of this machine the nodes reach", host, err)
	}
	go serveForward(ln, forwardTo(upstream, token))
	return ln.Addr().String(), token, func() { ln.Close() }, nil
}

// forwardTo opens each accepted connection's way to upstream: at once without a token, and
// with one only once the connection has opened with it.
func forwardTo(upstream, token string) func(net.Conn) (net.Conn, bool) {
	want := []byte(forwardHello + token)
	return func(c net.Conn) (net.Conn, bool) {
		if token != "" {
			got := make([]byte, len(want))
			_ = c.SetReadDeadline(time.Now().Add(forwardWait))
			if _, err := io.ReadFull(c, got); err != nil || subtle.ConstantTimeCompare(got, want) != 1 {
				return nil, false
			}
			_ = c.SetReadDeadline(time.Time{})
		}
		u, err := net.Dial("tcp", upstream)
		return u, err == nil
	}
}

// nodeForward is the worker's end: a listener on the node's loopback whose connections go
// to tare's forwarder at addr, each opened with token. The room's relay dials it.
func nodeForward(addr, token string) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listening on the node's loopback for the model's forward: %v", err)
	}
	go serveForward(ln, func(c net.Conn) (net.Conn, bool) {
		// The node's loopback is every user's on the node: only this worker's own uid (its
		// rooms' relays) gets the token added.
		if uid, err := loopbackPeerUID(c); err != nil || uid != os.Getuid() {
			return nil, false
		}
		u, err := net.DialTimeout("tcp", addr, forwardWait)
		if err != nil {
			return nil, false
		}
		if _, err := io.WriteString(u, forwardHello+token); err != nil {
			u.Close()
			return nil, false
		}
		return u, true
	})
	return ln.Addr().String(), func() { ln.Close() }, nil
}

// serveForward accepts on ln until it closes, relaying each connection both ways to the
// connection open gives it; one open refuses (false) is closed unanswered.
func serveForward(ln net.Listener, open func(net.Conn) (net.Conn, bool)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, ok := open(c)
			if !ok {
				return
			}
			defer u.Close()
			go func() { _, _ = io.Copy(u, c) }()
			_, _ = io.Copy(c, u)
		}()
	}
}

// loopbackPeerUID is the uid owning the other end of c, a TCP connection over IPv4 loopback,
// read from /proc/net/tcp: the line whose local address is c's remote one and whose remote
// address is c's local one.
func loopbackPeerUID(c net.Conn) (int, error) {
	local, ok1 := c.LocalAddr().(*net.TCPAddr)
	remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 || remote.IP.To4() == nil || local.IP.To4() == nil {
		return -1, fmt.Errorf("not a TCP connection over IPv4: %v", c.RemoteAddr())
	}
	hexAddr := func(a *net.TCPAddr) string {
		ip := a.IP.To4()
		return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port)
	}
	want, peer := hexAddr(remote), hexAddr(local)
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return -1, err
	}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 7 && f[1] == want && f[2] == peer {
			return strconv.Atoi(f[7])
		}
	}
	return -1, fmt.Errorf("no socket of this machine is the other end of %v", c.RemoteAddr())
}

package sandbox

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// Intercept is an allowed CONNECT target whose TLS the room's proxy ends itself, with Cert
// (a leaf of the caller's own CA, which the room was given to trust), handing the plain
// requests to Upstream: a loopback listener of the caller's (tare's meter), which meters
// them and encrypts them again towards the real host, verifying its certificate. It is how
// the relay reads a real provider's model calls; every other allowed target stays an opaque
// tunnel, and the room is refused a leaf for any name but Host's.
type Intercept struct {
	// Host is the "host:port" read, one of the relay's Allow.
	Host string
	// Cert is the leaf presented to the room for Host, with its private key.
	Cert tls.Certificate
	// Upstream is the "127.0.0.1:PORT" the decrypted connection is piped to.
	Upstream string
}

// checkIntercepts refuses an Intercept the proxy could not honour: a host outside the
// relay's Allow (reading would widen the allow-list), no leaf, or no upstream.
func checkIntercepts(relays []Relay) error {
	for i, rl := range relays {
		for j, ic := range rl.Intercept {
			switch {
			case rl.Allow == nil:
				return fmt.Errorf("room: Relays[%d].Intercept[%d]: only a CONNECT proxy (Allow) can intercept", i, j)
			case !allowed(rl.Allow, ic.Host):
				return fmt.Errorf("room: Relays[%d].Intercept[%d]: %s is not in the relay's Allow; intercept only allowed hosts", i, j, ic.Host)
			case len(ic.Cert.Certificate) == 0 || ic.Cert.PrivateKey == nil:
				return fmt.Errorf("room: Relays[%d].Intercept[%d]: %s has no leaf certificate with its key", i, j, ic.Host)
			case ic.Upstream == "":
				return fmt.Errorf("room: Relays[%d].Intercept[%d]: %s has no Upstream to hand its requests to", i, j, ic.Host)
			}
		}
	}
	return nil
}

// interceptFor is the relay's Intercept of target, or nil: the target is tunnelled.
func (rl Relay) interceptFor(target string) *Intercept {
	for i := range rl.Intercept {
		if strings.EqualFold(rl.Intercept[i].Host, target) {
			return &rl.Intercept[i]
		}
	}
	return nil
}

// bufferedConn reads through r, which may hold bytes the CONNECT request's reader took
// past the request (a client that sends its ClientHello without waiting for the 200).
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (b bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// CloseWrite passes a half-close on to the socket (the TLS layer's own close_notify is
// sent by tls.Conn).
func (b bufferedConn) CloseWrite() error {
	if cw, ok := b.Conn.(closeWriter); ok {
		return cw.CloseWrite()
	}
	return errors.New("no half-close")
}

// intercept answers the CONNECT, ends the room's TLS with ic's leaf (for ic's name only),
// and pipes the plain stream to ic.Upstream.
func (h *hostRelays) intercept(c net.Conn, br *bufio.Reader, rl Relay, ic *Intercept) {
	name, _, err := net.SplitHostPort(ic.Host)
	if err != nil {
		name = ic.Host
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// One HTTP/1.1 stream per connection: the meter reads requests in order, and every
		// model client speaks it.
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			// The leaf is for the CONNECT target alone: a client asking for another name in
			// the same tunnel gets no certificate of tare's CA for it.
			if hello.ServerName != "" && !strings.EqualFold(hello.ServerName, name) {
				return nil, fmt.Errorf("tare relay: no certificate for %q in a tunnel to %s", hello.ServerName, ic.Host)
			}
			return &ic.Cert, nil
		},
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	tc := tls.Server(bufferedConn{Conn: c, r: br}, cfg)
	c.SetDeadline(time.Now().Add(headerTimeout))
	if err := tc.Handshake(); err != nil {
		h.logf("tare relay :%d: TLS with the room for %s failed: %v (the room must trust tare's CA)", rl.Port, ic.Host, err)
		return
	}
	c.SetDeadline(time.Time{})
	up, err := net.DialTimeout("tcp", ic.Upstream, dialTimeout)
	if err != nil {
		h.logf("tare relay :%d: %s: meter at %s: %v", rl.Port, ic.Host, ic.Upstream, err)
		return
	}
	if !h.track(up) {
		return
	}
	defer h.untrack(up)
	pipe(tc, tc, up)
}

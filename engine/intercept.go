package engine

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"tare/engine/room"
	"tare/modelserver"
	"tare/sandbox"
)

// A room on a real provider reaches it through its CONNECT proxy. To meter and cap those
// calls the way tare's model server's are, the proxy reads them: for the adapter's model API
// hosts only, it ends the room's TLS with a leaf of a CA made for that room (its key never
// leaves tare's memory; the room is given the certificate to trust), hands the plain
// requests to a meter, and the meter sends them on over a new TLS connection that verifies
// the provider's certificate against the host's system roots. Every other allowed host (a
// login's token refresh) stays an opaque tunnel. This is the operator's own tool reading the
// agent's API traffic, as any metering proxy does; the room declares it.

// Where the room finds tare's CA: alone (Node-based CLIs add it to their own roots) and in a
// copy of the host's bundle (OpenSSL-based ones, such as Codex, read that instead).
const (
	roomCAFile     = sandbox.HomeDir + "/.tare/ca.pem"
	roomBundleFile = sandbox.HomeDir + "/.tare/ca-bundle.pem"
)

// caEnv are the variables that point the CLIs at the room's CA: Node (pi, Gemini CLI) and
// Bun (Claude Code) add NODE_EXTRA_CA_CERTS to their roots; OpenSSL (Codex, git, curl)
// reads SSL_CERT_FILE; Codex also reads CODEX_CA_CERTIFICATE for its own client.
var caEnv = map[string]string{
	"NODE_EXTRA_CA_CERTS":  roomCAFile,
	"SSL_CERT_FILE":        roomBundleFile,
	"CODEX_CA_CERTIFICATE": roomBundleFile,
}

// systemBundles are where hosts keep their CA bundle (Go's crypto/x509 list for Linux).
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// testUpstream, set only by this package's tests, sends an intercepted host's connections
// to another address and verifies them against other roots: tare's model server over TLS
// with a test CA stands in for a real provider. Nothing outside the tests can reach it.
var testUpstream struct {
	addrs map[string]string
	roots *x509.CertPool
	// trust is the stand-in's CA in PEM, which the room then trusts besides its own: the
	// allowed hosts it tunnels unread (a login's token check) reach the stand-in as well.
	trust []byte
}

// tunnelDial is how a room's proxy reaches the hosts it tunnels: nil (directly) but in this
// package's tests, which send them to the stand-in.
func tunnelDial() func(addr string) (net.Conn, error) {
	addrs := testUpstream.addrs
	if addrs == nil {
		return nil
	}
	return func(addr string) (net.Conn, error) {
		if a, ok := addrs[addr]; ok {
			addr = a
		}
		return net.DialTimeout("tcp", addr, 10*time.Second)
	}
}

// providerTransport carries a meter's requests to the real provider: direct, and verifying
// each host's certificate against the system roots (never skipped).
func providerTransport() *http.Transport {
	d := &net.Dialer{Timeout: 10 * time.Second}
	addrs, roots := testUpstream.addrs, testUpstream.roots
	return &http.Transport{
		Proxy: nil, // the same way out as the room's tunnels: straight from this host
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if a, ok := addrs[addr]; ok {
				addr = a
			}
			return d.DialContext(ctx, network, addr)
		},
		TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
		IdleConnTimeout:     90 * time.Second,
	}
}

// roomCA is the CA a metered real-provider room trusts, made for that room alone and
// constrained to the names it intercepts.
type roomCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newRoomCA(hosts []string) (*roomCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("interception CA: %w", err)
	}
	var names []string
	for _, h := range hosts {
		names = append(names, hostName(h))
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "tare metering CA (one room)", Organization: []string{"tare"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		// Even a leaked key could sign for nothing but this room's model hosts.
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         names,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("interception CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("interception CA: %w", err)
	}
	return &roomCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// leaf is the certificate the room's proxy presents for host ("host:port").
func (ca *roomCA) leaf(host string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hostName(host)},
		DNSNames:     []string{hostName(host)},
		NotBefore:    ca.cert.NotBefore,
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("leaf for %s: %w", host, err)
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

// hostName is a "host:port"'s host.
func hostName(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// systemBundle is the host's CA bundle, which the room's own copy extends.
func systemBundle() ([]byte, error) {
	for _, p := range systemBundles {
		if data, err := os.ReadFile(p); err == nil && len(data) > 0 {
			return data, nil
		}
	}
	return nil, fmt.Errorf("no CA bundle on this host (looked at %s); install ca-certificates so the metered room can reach its provider's other hosts", strings.Join(systemBundles, ", "))
}

// interceptRoom makes a real-provider room's proxy read the calls to its model hosts through
// a meter charging the caps (when capped) and gives the room the CA to trust them. It
// returns the meter, or nil when the room has no proxy or its agent names no model host
// (its calls stay unread and unmetered).
func (env *tailEnv) interceptRoom(room *sandbox.Room, setup *room.Setup, capped bool) (*modelserver.Meter, error) {
	i := slices.IndexFunc(room.Relays, func(rl sandbox.Relay) bool { return rl.Allow != nil })
	if i < 0 {
		return nil, nil
	}
	var hosts []string
	for _, h := range setup.ModelHosts {
		if slices.Contains(room.Relays[i].Allow, h) {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return nil, nil
	}
	bundle, err := systemBundle()
	if err != nil {
		return nil, err
	}
	ca, err := newRoomCA(hosts)
	if err != nil {
		return nil, err
	}
	m, err := modelserver.NewProviderMeter(hosts, providerTransport(), CostOf, env.budgets(capped)...)
	if err != nil {
		return nil, err
	}
	rl := &room.Relays[i]
	rl.Dial = tunnelDial()
	for _, h := range hosts {
		leaf, err := ca.leaf(h)
		if err != nil {
			m.Close()
			return nil, err
		}
		rl.Intercept = append(rl.Intercept, sandbox.Intercept{Host: h, Cert: leaf, Upstream: m.Addr()})
	}
	trusted := append(append([]byte(nil), ca.pem...), testUpstream.trust...)
	room.Files = append(room.Files,
		sandbox.File{Path: roomCAFile, Data: trusted, Mode: 0o644},
		sandbox.File{Path: roomBundleFile, Data: append(append(append([]byte(nil), bundle...), '\n'), trusted...), Mode: 0o644})
	if room.Env == nil {
		room.Env = map[string]string{}
	}
	names := make([]string, 0, len(caEnv))
	for k, v := range caEnv {
		room.Env[k] = v
		if setup.EnvNames != nil {
			setup.EnvNames[k] = true
		}
		names = append(names, k)
	}
	slices.Sort(names)
	sum := sha256.Sum256(ca.cert.Raw)
	setup.Declared = append(setup.Declared, fmt.Sprintf(
		"tls: tare's relay reads the model calls to %s to meter them (a CA made for this room, SHA-256 %x, constrained to those names, its key kept on the host; the room trusts it through ~/.tare/ca.pem and ~/.tare/ca-bundle.pem, named by %s); other allowed hosts are tunnelled unread",
		strings.Join(hosts, ", "), sum[:8], strings.Join(names, ", ")))
	return m, nil
}

package sandbox

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testLeaf is a CA and a leaf for name signed by it.
func testLeaf(t *testing.T, name string) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ = x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, NotBefore: ca.NotBefore, NotAfter: ca.NotAfter}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &leafKey.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, tls.Certificate{Certificate: [][]byte{der, caDER}, PrivateKey: leafKey}
}

// TestProxyInterceptsOnlyItsModelHost: a CONNECT proxy reading one allowed host. A client
// trusting the proxy's CA reaches the meter (the Upstream) through the read host; asking the
// same tunnel for another name gets no leaf; another allowed host is tunnelled unread (its
// own certificate reaches the client, not the proxy's); a host off the list is refused.
func TestProxyInterceptsOnlyItsModelHost(t *testing.T) {
	meter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "read %s %s", r.Host, r.URL.Path)
	}))
	defer meter.Close()
	tunnelled := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tunnelled") }))
	defer tunnelled.Close()
	_, tunnelPort, _ := net.SplitHostPort(tunnelled.Listener.Addr().String())

	roots, leaf := testLeaf(t, "localhost")
	model, other := "localhost:443", "localhost:"+tunnelPort
	dir := t.TempDir()
	rl := Relay{Port: 4001, Allow: []string{model, other}, Intercept: []Intercept{{Host: model, Cert: leaf, Upstream: meter.Listener.Addr().String()}}}
	h, err := listenRelays(dir, []Relay{rl}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.serve()
	defer h.stop()

	connect := func(target string) (net.Conn, string) {
		c, err := net.Dial("unix", filepath.Join(dir, rl.sock()))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		return c, resp.Status
	}
	get := func(c net.Conn, name string, pool *x509.CertPool) (string, error) {
		tc := tls.Client(c, &tls.Config{ServerName: name, RootCAs: pool})
		defer tc.Close()
		if err := tc.Handshake(); err != nil {
			return "", err
		}
		fmt.Fprintf(tc, "GET /v1/messages HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", name)
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil {
			return "", err
		}
		b, _ := io.ReadAll(resp.Body)
		return string(b), nil
	}

	c, _ := connect(model)
	if body, err := get(c, "localhost", roots); err != nil || body != "read localhost /v1/messages" {
		t.Errorf("read host: %q, %v; want the meter's answer", body, err)
	}
	c, _ = connect(model)
	// The proxy refuses (a remote error), rather than sending a leaf the client rejects.
	if _, err := get(c, "api.example.com", roots); err == nil || !strings.Contains(err.Error(), "remote error") {
		t.Errorf("another name in the read host's tunnel: %v; want the proxy to refuse the handshake", err)
	}
	c, status := connect(other)
	if body, err := get(c, "localhost", roots); err == nil {
		t.Errorf("tunnelled host answered %q through a leaf of the proxy's CA; want its own certificate", body)
	}
	c, _ = connect(other)
	upstream := x509.NewCertPool()
	upstream.AddCert(tunnelled.Certificate())
	if body, err := get(c, "example.com", upstream); err != nil || body != "tunnelled" {
		t.Errorf("tunnelled host: %q, %v (%s); want its own answer, unread", body, err, status)
	}
	if _, status = connect("evil.example:443"); !strings.HasPrefix(status, "403") {
		t.Errorf("host off the list: %s; want 403", status)
	}
}

// TestInterceptMustBeAllowed: a room cannot read a host its proxy does not allow (reading
// would widen the allow-list), nor one without a leaf.
func TestInterceptMustBeAllowed(t *testing.T) {
	_, leaf := testLeaf(t, "localhost")
	for _, rl := range []Relay{
		{Port: 4001, Allow: []string{"a:443"}, Intercept: []Intercept{{Host: "b:443", Cert: leaf, Upstream: "127.0.0.1:1"}}},
		{Port: 4001, Allow: []string{"a:443"}, Intercept: []Intercept{{Host: "a:443", Upstream: "127.0.0.1:1"}}},
		{Port: 4001, Upstream: "127.0.0.1:1", Intercept: []Intercept{{Host: "a:443", Cert: leaf, Upstream: "127.0.0.1:1"}}},
	} {
		if h, err := listenRelays(t.TempDir(), []Relay{rl}, nil); err == nil {
			h.stop()
			t.Errorf("relay %+v accepted; want refused", rl.Intercept)
		}
	}
}

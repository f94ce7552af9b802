package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/source/amy"
	"github.com/amp-exporter/amp-exporter/store"
)

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "amy-proxy-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestAmyProxyServesTLS: with proxy.web_config_file the proxy speaks TLS
// only, so bearer tokens never cross the network in clear text.
func TestAmyProxyServesTLS(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "upstream saw "+r.URL.Path)
	}))
	defer upstream.Close()
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	webCfg := filepath.Join(dir, "web.yml")
	os.WriteFile(webCfg, []byte("tls_server_config:\n  cert_file: "+certFile+"\n  key_file: "+keyFile+"\n"), 0o600)
	addr := freeAddr(t)
	cfg := &config.Config{Amy: []config.AmyUpstream{{Name: "prod", BaseURL: upstream.URL,
		Proxy: config.AmyProxy{ListenAddress: addr, WebConfigFile: webCfg}}}}
	log := slog.New(slog.DiscardHandler)
	store := store.NewAmyStore(store.NewLabelCap(100, nil), nil)
	proxies, err := proxiesFor(cfg, store, log)
	if err != nil || len(proxies) != 1 {
		t.Fatalf("proxies: %v %d", err, len(proxies))
	}
	done := make(chan error, 1)
	go func() { done <- proxies[0].serve(16, log) }()
	defer func() { proxies[0].server.Close(); <-done }()
	tlsClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	var resp *http.Response
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err = tlsClient.Get("https://" + addr + "/v1/turns")
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("https through the proxy: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "upstream saw /v1/turns" {
		t.Fatalf("proxied answer %q", b)
	}
	plain := &http.Client{Timeout: 10 * time.Second}
	if resp, err := plain.Get("http://" + addr + "/v1/turns"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "upstream saw") {
			t.Fatal("the proxy answered plain HTTP")
		}
	}
}

func TestAmyProxyRefusesBasicAuth(t *testing.T) {
	dir := t.TempDir()
	webCfg := filepath.Join(dir, "web.yml")
	os.WriteFile(webCfg, []byte("basic_auth_users:\n  alice: $2y$10$abcdefghijklmnopqrstuv\n"), 0o600)
	cfg := &config.Config{Amy: []config.AmyUpstream{{Name: "prod", BaseURL: "http://127.0.0.1:1",
		Proxy: config.AmyProxy{ListenAddress: "127.0.0.1:0", WebConfigFile: webCfg}}}}
	log := slog.New(slog.DiscardHandler)
	store := store.NewAmyStore(store.NewLabelCap(100, nil), nil)
	_, err := proxiesFor(cfg, store, log)
	if err == nil || !strings.Contains(err.Error(), "basic_auth_users") {
		t.Fatalf("basic auth on the proxy: %v", err)
	}
}

// TestAmyProxyStreamsOutliveTheReadTimeout: the proxy's read timeout bounds
// reading requests, not a long event stream answering one (net/http
// cancels a request whose connection read deadline passes mid-handler).
// It waits on a stream of ~800 ms: alongside the other tests that wait.
func TestAmyProxyStreamsOutliveTheReadTimeout(t *testing.T) {
	t.Parallel()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 1; i <= 8; i++ {
			fmt.Fprintf(w, "id: %d\nevent: phase\ndata: {}\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}))
	defer upstream.Close()
	addr := freeAddr(t)
	cfg := &config.Config{Amy: []config.AmyUpstream{{Name: "prod", BaseURL: upstream.URL,
		Proxy: config.AmyProxy{ListenAddress: addr}}}}
	log := slog.New(slog.DiscardHandler)
	store := store.NewAmyStore(store.NewLabelCap(100, nil), nil)
	proxies, err := proxiesFor(cfg, store, log)
	if err != nil {
		t.Fatal(err)
	}
	proxies[0].server.ReadTimeout = 200 * time.Millisecond // the stream lasts ~800ms
	done := make(chan error, 1)
	go func() { done <- proxies[0].serve(16, log) }()
	defer func() { proxies[0].server.Close(); <-done }()
	var resp *http.Response
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err = http.Get("http://" + addr + "/v1/turns/t1/events")
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(b), "event: phase"); n != 8 {
		t.Fatalf("the client got %d of 8 events through the proxy", n)
	}
}

// proxiesFor builds the proxies of cfg with an amy source of their own.
func proxiesFor(cfg *config.Config, st *store.AmyStore, log *slog.Logger) ([]amyProxy, error) {
	src := amy.NewSource(st, amy.SourceOptions{Logger: log})
	if err := src.Apply(cfg); err != nil {
		return nil, err
	}
	return amyProxies(cfg, src, hostNames{})
}

package crash_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Ways a child cluster's API server misbehaves.
const (
	// childHangs accepts TCP connections and never answers.
	childHangs = "hang"
	// childGarbage accepts connections and answers random bytes (no TLS,
	// no HTTP), then closes them.
	childGarbage = "garbage"
	// childGarbageHTTP speaks TLS and HTTP and answers every request with
	// 200 and a body that is not Kubernetes JSON.
	childGarbageHTTP = "garbage-http"
)

var badChildKinds = []string{childHangs, childGarbage, childGarbageHTTP}

// badChild is a misbehaving API server on loopback.
type badChild struct {
	kind string
	url  string
	// ca is the PEM certificate of a TLS server; none for raw listeners,
	// whose handshakes fail either way.
	ca   []byte
	stop func()
}

// startBadChild starts a server of kind; it stops at the end of the test.
func startBadChild(t testing.TB, kind string) *badChild {
	t.Helper()
	if kind == childGarbageHTTP {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`}{"kind": 42, not json at all` + "\x00\xff"))
		}))
		srv.StartTLS()
		b := &badChild{kind: kind, url: srv.URL, stop: srv.Close,
			ca: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
		t.Cleanup(b.stop)
		return b
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if kind == childGarbage {
				go func() {
					buf := make([]byte, 512)
					_, _ = rand.Read(buf)
					_, _ = c.Write(buf)
					_ = c.Close()
				}()
				continue
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }() // read, never answer
		}
	}()
	b := &badChild{kind: kind, url: "https://" + ln.Addr().String(), stop: func() {
		select {
		case <-done:
			return
		default:
			close(done)
		}
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	}}
	t.Cleanup(b.stop)
	return b
}

// kubeconfig reaches the server as an administrator would.
func (b *badChild) kubeconfig() []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: bad
  cluster:
    server: %s%s
users:
- name: admin
  user:
    token: not-checked
contexts:
- name: bad
  context:
    cluster: bad
    user: admin
current-context: bad
`, b.url, caData(b.ca))
}

// caData is the kubeconfig line of a CA certificate, if any.
func caData(ca []byte) string {
	if len(ca) == 0 {
		return ""
	}
	return "\n    certificate-authority-data: " + base64.StdEncoding.EncodeToString(ca)
}

package childcluster

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// proxy forwards TCP connections to an API server; cut makes the server
// unreachable (refusing new connections and closing open ones), restore
// reconnects it on the same address.
type proxy struct {
	addr, target string

	mu    sync.Mutex
	l     net.Listener
	conns []net.Conn
	wg    sync.WaitGroup
}

func startProxy(t *testing.T, host string) *proxy {
	t.Helper()
	u, err := url.Parse(host)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: "127.0.0.1:0", target: u.Host}
	p.restore(t)
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) restore(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p.mu.Lock()
	p.l, p.addr = l, l.Addr().String()
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			p.wg.Go(func() { _, _ = io.Copy(out, in); _ = out.Close() })
			p.wg.Go(func() { _, _ = io.Copy(in, out); _ = in.Close() })
		}
	})
}

func (p *proxy) cut() {
	p.mu.Lock()
	if p.l != nil {
		_ = p.l.Close()
		p.l = nil
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

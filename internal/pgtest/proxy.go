package pgtest

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// Proxy forwards TCP to the server a database URL names until Stop: then
// every connection through it is cut and its port refuses new ones, as a
// database that became unreachable does, while the server itself runs on
// for the other tests.
type Proxy struct {
	// URL is the database URL through the proxy.
	URL string

	ln      net.Listener
	mu      sync.Mutex
	open    []net.Conn
	stopped bool
}

// NewProxy starts a proxy in front of url (a DB URL: postgres://user@host:port/db...),
// stopped at t's cleanup.
func NewProxy(t testing.TB, url string) *Proxy {
	t.Helper()
	rest := url[strings.Index(url, "@")+1:]
	target := rest[:strings.Index(rest, "/")]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, URL: strings.Replace(url, target, ln.Addr().String(), 1)}
	t.Cleanup(p.Stop)
	go p.serve(target)
	return p
}

func (p *Proxy) serve(target string) {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.stopped {
			c.Close()
			s.Close()
		}
		p.open = append(p.open, c, s)
		p.mu.Unlock()
		go func() { io.Copy(s, c); s.Close() }()
		go func() { io.Copy(c, s); c.Close() }()
	}
}

// Stop cuts every connection and closes the port.
func (p *Proxy) Stop() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	for _, c := range p.open {
		c.Close()
	}
	p.open = nil
}

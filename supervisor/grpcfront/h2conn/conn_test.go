package h2conn

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc/peer"
)

// TestSetOfFindsTheConnectionByItsPeer: a stream's context carries the
// address its connection reports (gRPC's peer), and Set.Of finds that
// connection's Entry from it without formatting the address or taking
// the Set's lock: no allocation per RPC (before issue 33 it looked the
// address up by its string: 3 allocations here). The address still
// prints as the client's.
func TestSetOfFindsTheConnectionByItsPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	set := NewSet(0)
	l := NewListener(ln, 4, set, 0, func() *Wire { return nil })
	defer l.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, ok := c.(*rpcConn)
	if !ok {
		t.Fatalf("the listener gave a %T, want its rpcConn", c)
	}
	if got, want := c.RemoteAddr().String(), client.LocalAddr().String(); got != want {
		t.Errorf("the connection's remote address prints %q, want the client's %q", got, want)
	}
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: c.RemoteAddr()})
	if e := set.Of(ctx); e == nil || e != rc.entry {
		t.Fatalf("Of gave %p, want the connection's Entry %p", e, rc.entry)
	}
	if n := testing.AllocsPerRun(100, func() { set.Of(ctx) }); n != 0 {
		t.Errorf("Of allocates %.0f times per stream, want none", n)
	}
	plain := peer.NewContext(context.Background(), &peer.Peer{Addr: client.LocalAddr()})
	if e := set.Of(plain); e != rc.entry {
		t.Errorf("Of of a peer address by its string gave %p, want the Entry %p", e, rc.entry)
	}
}

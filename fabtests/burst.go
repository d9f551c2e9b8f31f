package fabtests

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// testBurst is the burst group: Config.Burst clients at once against one
// endpoint, with the provider's default settings. Over FI_EP_MSG every
// client connects to one passive endpoint at the same moment, and every
// one must be accepted (no reject, no refused connect the server never
// saw); over FI_EP_RDM every peer's first send goes to one endpoint at
// the same moment, and none may fail: fi.EAGAIN while a provider
// connects is the only answer allowed besides success.
func testBurst(t *testing.T, s *suite) {
	n := s.cfg.Burst
	if n == 0 {
		n = 100
	}
	s.run(t, "msg", func(t *testing.T) {
		l := s.listen(t)
		clients := make([]*peer, n)
		for i := range clients {
			clients[i] = s.client(t, l, epOpts{})
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = c.cm.Connect(l.name, binary.LittleEndian.AppendUint32(nil, uint32(i)))
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "client %d of %d: connect", i, n)
		}
		seen := make([]bool, n)
		servers := make([]*peer, 0, n)
		for range n {
			req := l.connReq(t, s)
			require.Len(t, req.Data, 4, "a connection request's private data")
			i := binary.LittleEndian.Uint32(req.Data)
			require.Less(t, int(i), n, "a connection request from no client of the burst")
			require.False(t, seen[i], "client %d's request arrived twice", i)
			seen[i] = true
			srv := s.server(t, l, req, epOpts{})
			require.NoError(t, srv.cm.Accept(nil), "accept client %d", i)
			servers = append(servers, srv)
		}
		for i, c := range clients {
			ev, e := s.event(t, c.eq)
			if e != nil {
				t.Fatalf("client %d of %d: %v (prov_errno %d): a burst of %d connects must all be accepted", i, n, e.Err, e.ProvErrno, n)
			}
			_, ok := ev.(*eq.Connected)
			require.True(t, ok, "client %d: got %T, want *eq.Connected", i, ev)
		}
		for _, srv := range servers {
			expectEvent[*eq.Connected](t, s, srv.eq)
		}
		requireNoEvent(t, l.eq)
	})

	s.run(t, "rdm", func(t *testing.T) {
		roles := []string{"hub"}
		for i := range n {
			roles = append(roles, fmt.Sprintf("peer %d", i+1))
		}
		m := s.rdm(t, rdmOpts{}, roles...)
		hub := m.peers[0]
		for i := 1; i <= n; i++ {
			m.insertPeer(t, i, 0)
		}
		rbufs := make([][]byte, n)
		for i := range rbufs {
			rbufs[i] = make([]byte, 8)
			require.NoError(t, hub.msg(t).Recv(rbufs[i], hub.desc(t, rbufs[i]), fi.AddrUnspec, nil))
		}
		sbufs := make([][]byte, n+1)
		pending := make([]int, 0, n)
		for i := 1; i <= n; i++ {
			sbufs[i] = binary.LittleEndian.AppendUint64(nil, uint64(i))
			pending = append(pending, i)
		}
		ctx := s.ctx(t)
		for len(pending) > 0 {
			left := pending[:0]
			for _, i := range pending {
				x := m.peers[i]
				err := x.msg(t).Send(sbufs[i], x.desc(t, sbufs[i]), m.addr[i][0], nil)
				if errors.Is(err, fi.EAGAIN) {
					left = append(left, i)
					continue
				}
				require.NoError(t, err, "%s: first send to the hub, one of %d at once (only fi.EAGAIN may delay it)", x.role, n)
			}
			pending = left
			if len(pending) == 0 {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%d of %d first sends still fi.EAGAIN after %v", len(pending), n, s.cfg.Timeout)
			}
			m.poll(t)
			runtime.Gosched()
		}
		got := make([]bool, n+1)
		for _, e := range m.completions(t, hub, n) {
			require.Equal(t, 8, e.c.Len)
		}
		for _, b := range rbufs {
			i := binary.LittleEndian.Uint64(b)
			require.True(t, i >= 1 && int(i) <= n && !got[i], "message %d arrived twice or from nowhere", i)
			got[i] = true
		}
		for i := 1; i <= n; i++ {
			e := m.take(t, m.peers[i], 1)[0]
			require.Nil(t, e.err, "%s: its first send to the hub ended in an error entry: %v", m.peers[i].role, e.err)
		}
	})
}

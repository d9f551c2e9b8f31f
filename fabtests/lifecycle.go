package fabtests

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// The close, concurrency and badinput groups (fi_endpoint(3)'s close
// rules, FI_THREAD_SAFE, and what a provider does with wrong arguments),
// for connected (FI_EP_MSG) and reliable unconnected (FI_EP_RDM)
// endpoints, whichever the provider offers.

// endpointKinds runs f once for each endpoint type the provider offers,
// with a function that opens a connected two-endpoint setup of it: the
// endpoints, how to send from the first to the second, and how to poll
// both.
func (s *suite) endpointKinds(t *testing.T, f func(t *testing.T, open func(t *testing.T) *duo)) {
	t.Run("msg", func(t *testing.T) {
		f(t, func(t *testing.T) *duo {
			p := s.pair(t, epOpts{})
			return &duo{
				a: p.client, b: p.server, dest: fi.AddrUnspec,
				poll: func(t testing.TB) { p.poll(t) },
				take: func(t testing.TB, x *peer, n int) []cqEntry { return p.take(t, s, x, n) },
			}
		})
	})
	t.Run("rdm", func(t *testing.T) {
		f(t, func(t *testing.T) *duo {
			m := s.rdmPair(t, rdmOpts{})
			a, b := m.peers[0], m.peers[1]
			if !s.cfg.Faults { // a warm-up message could be lost to them
				m.warm(t, 0, 1)
			}
			return &duo{
				a: a.peer, b: b.peer, dest: m.addr[0][1],
				poll: func(t testing.TB) { m.poll(t) },
				take: func(t testing.TB, x *peer, n int) []cqEntry {
					r := b
					if x == a.peer {
						r = a
					}
					var out []cqEntry
					for _, e := range m.take(t, r, n) {
						out = append(out, e.cqEntry)
					}
					return out
				},
			}
		})
	})
}

// duo is two endpoints that can talk: a sends to b at dest.
type duo struct {
	a, b *peer
	dest fi.Addr
	poll func(t testing.TB)
	take func(t testing.TB, x *peer, n int) []cqEntry
}

// testClose checks close ordering: fi.EBUSY while objects are bound, a
// second Close and calls after Close give fi.EBADF, and operations still
// posted when an endpoint closes complete with fi.ECANCELED error entries.
func testClose(t *testing.T, s *suite) {
	s.run(t, "busy-then-ebadf", func(t *testing.T) {
		s.endpointKinds(t, func(t *testing.T, open func(t *testing.T) *duo) {
			d := open(t)
			x := d.b
			err := x.domain.Close()
			requireCoded(t, err)
			require.ErrorIs(t, err, fi.EBUSY, "closing a domain with an endpoint open")
			err = x.cq.Close()
			require.ErrorIs(t, err, fi.EBUSY, "closing a CQ bound to an open endpoint")
			require.NoError(t, x.ep.Close())
			require.ErrorIs(t, x.ep.Close(), fi.EBADF, "a second Close")
			buf := make([]byte, 8)
			if m, ok := x.ep.(ep.Msg); ok {
				err := m.Recv(buf, nil, fi.AddrUnspec, nil)
				require.Error(t, err, "Recv on a closed endpoint")
				require.ErrorIs(t, err, fi.EBADF, "Recv on a closed endpoint")
			}
		})
	})
	s.run(t, "posted-receives-cancelled", func(t *testing.T) {
		s.endpointKinds(t, func(t *testing.T, open func(t *testing.T) *duo) {
			d := open(t)
			x := d.b
			m := msgOf(t, x)
			const n = 4
			rbuf := make([]byte, 64*n)
			rdesc := x.desc(t, rbuf)
			for i := range n {
				require.NoError(t, m.Recv(rbuf[64*i:64*(i+1)], rdesc, fi.AddrUnspec, i))
			}
			require.NoError(t, x.ep.Close())
			got := d.take(t, x, n)
			seen := map[any]bool{}
			for _, e := range got {
				require.NotNil(t, e.err, "a receive pending at Close completes with an error entry, got %+v", e.c)
				require.Equal(t, fi.ECANCELED, e.err.Err, "the receive's error")
				seen[e.err.Context] = true
			}
			require.Len(t, seen, n, "every posted receive was cancelled once")
		})
	})
}

// testConcurrency checks FI_THREAD_SAFE: many goroutines posting to one
// endpoint, and Close racing posts.
func testConcurrency(t *testing.T, s *suite) {
	s.run(t, "many-senders", func(t *testing.T) {
		s.endpointKinds(t, func(t *testing.T, open func(t *testing.T) *duo) {
			d := open(t)
			if d.a.info.DomainAttr.Threading != fi.ThreadSafe {
				t.Skipf("domain threading is %v, not FI_THREAD_SAFE", d.a.info.DomainAttr.Threading)
			}
			const senders, each = 8, 16
			mb := msgOf(t, d.b)
			// One registered region per side (FI_MR_LOCAL), a slice of it
			// per message.
			const slot = 16
			rbuf := make([]byte, senders*each*slot)
			rdesc := d.b.desc(t, rbuf)
			bufs := make([][]byte, senders*each)
			for i := range bufs {
				bufs[i] = rbuf[i*slot : (i+1)*slot]
				require.NoError(t, mb.Recv(bufs[i], rdesc, fi.AddrUnspec, i))
			}
			sbuf := make([]byte, senders*each*slot)
			sdesc := d.a.desc(t, sbuf)
			ma := msgOf(t, d.a)
			var wg sync.WaitGroup
			var failed atomic.Value
			for g := range senders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := range each {
						i := (g*each + k) * slot
						msg := fmt.Appendf(sbuf[i:i], "%02d:%02d", g, k)
						for {
							err := ma.Send(msg, sdesc, d.dest, nil)
							if err == nil {
								break
							}
							if !errors.Is(err, fi.EAGAIN) {
								failed.Store(err)
								return
							}
						}
					}
				}()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			recv := d.take(t, d.b, senders*each)
			<-done
			if err, _ := failed.Load().(error); err != nil {
				t.Fatalf("Send from a goroutine: %v", err)
			}
			d.take(t, d.a, senders*each)
			last := map[int]int{}
			for _, e := range recv {
				require.Nil(t, e.err)
				var g, k int
				_, err := fmt.Sscanf(string(bufs[e.c.Context.(int)][:e.c.Len]), "%02d:%02d", &g, &k)
				require.NoError(t, err)
				if prev, ok := last[g]; ok {
					require.Greater(t, k, prev, "sender %d's messages arrive in order", g)
				}
				last[g] = k
			}
			require.Len(t, last, senders, "every sender's messages arrived")
		})
	})
	s.run(t, "close-racing-posts", func(t *testing.T) {
		s.endpointKinds(t, func(t *testing.T, open func(t *testing.T) *duo) {
			d := open(t)
			ma := msgOf(t, d.a)
			x := []byte("x")
			xdesc := d.a.desc(t, x)
			var wg sync.WaitGroup
			stop := make(chan struct{})
			var bad atomic.Value
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						err := ma.Send(x, xdesc, d.dest, nil)
						if err != nil && !errors.Is(err, fi.EAGAIN) {
							if fi.Code(err) == fi.EOTHER {
								bad.Store(err)
							}
							if errors.Is(err, fi.EBADF) {
								return
							}
						}
					}
				}()
			}
			d.poll(t)
			require.NoError(t, d.a.ep.Close(), "Close while other goroutines post")
			close(stop)
			wg.Wait()
			if err, _ := bad.Load().(error); err != nil {
				t.Fatalf("a post racing Close failed without an fi.Errno: %v", err)
			}
		})
	})
}

// testBadInput checks that wrong arguments give errors with an fi.Errno
// and change nothing: zero-length and nil buffers are valid messages;
// too many segments, oversize injects and unknown addresses are not.
func testBadInput(t *testing.T, s *suite) {
	s.run(t, "zero-length", func(t *testing.T) {
		s.endpointKinds(t, func(t *testing.T, open func(t *testing.T) *duo) {
			d := open(t)
			mb, ma := msgOf(t, d.b), msgOf(t, d.a)
			require.NoError(t, mb.Recv(nil, nil, fi.AddrUnspec, "nil-recv"))
			require.NoError(t, ma.Send(nil, nil, d.dest, "nil-send"))
			got := d.take(t, d.b, 1)
			require.Nil(t, got[0].err)
			require.Equal(t, "nil-recv", got[0].c.Context)
			require.Zero(t, got[0].c.Len)
			require.Equal(t, "nil-send", d.take(t, d.a, 1)[0].c.Context)
		})
	})
	s.run(t, "too-many-segments", func(t *testing.T) {
		s.endpointKinds(t, func(t *testing.T, open func(t *testing.T) *duo) {
			d := open(t)
			limit := d.a.info.TxAttr.IOVLimit
			if limit <= 0 || limit > 64 {
				t.Skipf("tx iov_limit %d", limit)
			}
			iov := make([][]byte, limit+1)
			for i := range iov {
				iov[i] = []byte{byte(i)}
			}
			err := msgOf(t, d.a).SendV(iov, nil, d.dest, nil)
			requireCoded(t, err)
			require.ErrorIs(t, err, fi.EINVAL, "SendV with iov_limit+1 segments")
			err = msgOf(t, d.b).RecvV(iov, nil, fi.AddrUnspec, nil)
			require.ErrorIs(t, err, fi.EINVAL, "RecvV with iov_limit+1 segments")
		})
	})
	s.run(t, "oversize-inject", func(t *testing.T) {
		s.endpointKinds(t, func(t *testing.T, open func(t *testing.T) *duo) {
			d := open(t)
			n := d.a.info.TxAttr.InjectSize
			if n <= 0 {
				t.Skip("the provider offers no inject")
			}
			err := msgOf(t, d.a).Inject(make([]byte, n+1), d.dest)
			requireCoded(t, err)
			require.ErrorIs(t, err, fi.EINVAL, "Inject of inject_size+1 bytes")
			d.poll(t)
			d.b.poll(t)
		})
	})
	s.run(t, "unknown-address", func(t *testing.T) {
		m := s.rdmPair(t, rdmOpts{})
		err := m.peers[0].msg(t).Send([]byte("x"), nil, fi.Addr(12345), nil)
		requireCoded(t, err)
		require.NotErrorIs(t, err, fi.EAGAIN, "an fi.Addr the AV never gave is an error, not a retry")
		_, err = m.peers[0].av.Insert([][]byte{nil}, 0)
		requireCoded(t, err)
	})
}

package ep_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// activeStates are the states a ConnState can be in.
var activeStates = []ep.CMState{
	ep.CMIdle, ep.CMConnecting, ep.CMReqReceived, ep.CMAccepting, ep.CMConnected,
	ep.CMShutdownLocal, ep.CMShutdownRemote, ep.CMDisconnected, ep.CMRejected,
	ep.CMFailed, ep.CMClosed,
}

// connStateIn returns a ConnState driven into s through the public API.
func connStateIn(tb testing.TB, s ep.CMState) *ep.ConnState {
	tb.Helper()
	c := new(ep.ConnState)
	noErr := func(err error) { tb.Helper(); require.NoError(tb, err) }
	connected := func() {
		noErr(c.Connect())
		noErr(c.Established())
	}
	switch s {
	case ep.CMIdle:
	case ep.CMConnecting:
		noErr(c.Connect())
	case ep.CMReqReceived:
		noErr(c.RequestReceived())
	case ep.CMAccepting:
		noErr(c.RequestReceived())
		noErr(c.Accept())
	case ep.CMConnected:
		connected()
	case ep.CMShutdownLocal:
		connected()
		_, err := c.Shutdown()
		noErr(err)
	case ep.CMShutdownRemote:
		connected()
		c.PeerGone()
	case ep.CMDisconnected:
		connected()
		_, err := c.Shutdown()
		noErr(err)
		c.PeerGone()
	case ep.CMRejected:
		noErr(c.Connect())
		noErr(c.Rejected())
	case ep.CMFailed:
		noErr(c.Connect())
		noErr(c.Failed())
	case ep.CMClosed:
		_, err := c.Close()
		noErr(err)
	default:
		tb.Fatalf("no path to state %v", s)
	}
	require.Equal(tb, s, c.State())
	return c
}

// want is the outcome of one call in one state: the error code (SUCCESS
// for nil), the state after, and whether an eq.Shutdown is due.
type want struct {
	code  fi.Errno
	after ep.CMState
	emit  bool
}

func TestConnStateTransitions(t *testing.T) {
	ok := func(after ep.CMState) want { return want{after: after} }
	emit := func(after ep.CMState) want { return want{after: after, emit: true} }
	fail := func(code fi.Errno, s ep.CMState) want { return want{code: code, after: s} }
	const (
		idle  = ep.CMIdle
		conn  = ep.CMConnecting
		req   = ep.CMReqReceived
		acc   = ep.CMAccepting
		est   = ep.CMConnected
		shl   = ep.CMShutdownLocal
		shr   = ep.CMShutdownRemote
		disc  = ep.CMDisconnected
		rej   = ep.CMRejected
		fld   = ep.CMFailed
		clsd  = ep.CMClosed
		badst = fi.EOPBADSTATE
	)
	ops := []struct {
		name string
		call func(*ep.ConnState) (emit bool, err error)
		want map[ep.CMState]want
	}{
		{
			name: "RequestReceived",
			call: func(c *ep.ConnState) (bool, error) { return false, c.RequestReceived() },
			want: map[ep.CMState]want{
				idle: ok(req), conn: fail(badst, conn), req: fail(badst, req), acc: fail(badst, acc),
				est: fail(badst, est), shl: fail(badst, shl), shr: fail(badst, shr), disc: fail(badst, disc),
				rej: fail(badst, rej), fld: fail(badst, fld), clsd: fail(fi.EBADF, clsd),
			},
		},
		{
			name: "Connect",
			call: func(c *ep.ConnState) (bool, error) { return false, c.Connect() },
			want: map[ep.CMState]want{
				idle: ok(conn), conn: fail(fi.EALREADY, conn), req: fail(fi.EINVAL, req),
				acc: fail(fi.EALREADY, acc), est: fail(fi.EISCONN, est), shl: fail(badst, shl),
				shr: fail(badst, shr), disc: fail(badst, disc), rej: fail(badst, rej),
				fld: fail(badst, fld), clsd: fail(fi.EBADF, clsd),
			},
		},
		{
			name: "Accept",
			call: func(c *ep.ConnState) (bool, error) { return false, c.Accept() },
			want: map[ep.CMState]want{
				idle: fail(fi.EINVAL, idle), conn: fail(fi.EINVAL, conn), req: ok(acc),
				acc: fail(fi.EALREADY, acc), est: fail(fi.EISCONN, est), shl: fail(badst, shl),
				shr: fail(badst, shr), disc: fail(badst, disc), rej: fail(badst, rej),
				fld: fail(badst, fld), clsd: fail(fi.EBADF, clsd),
			},
		},
		{
			name: "Established",
			call: func(c *ep.ConnState) (bool, error) { return false, c.Established() },
			want: map[ep.CMState]want{
				idle: fail(badst, idle), conn: ok(est), req: fail(badst, req), acc: ok(est),
				est: fail(badst, est), shl: fail(badst, shl), shr: fail(badst, shr),
				disc: fail(badst, disc), rej: fail(badst, rej), fld: fail(badst, fld),
				clsd: fail(fi.EBADF, clsd),
			},
		},
		{
			name: "Rejected",
			call: func(c *ep.ConnState) (bool, error) { return false, c.Rejected() },
			want: map[ep.CMState]want{
				idle: fail(badst, idle), conn: ok(rej), req: fail(badst, req), acc: fail(badst, acc),
				est: fail(badst, est), shl: fail(badst, shl), shr: fail(badst, shr),
				disc: fail(badst, disc), rej: fail(badst, rej), fld: fail(badst, fld),
				clsd: fail(fi.EBADF, clsd),
			},
		},
		{
			name: "Failed",
			call: func(c *ep.ConnState) (bool, error) { return false, c.Failed() },
			want: map[ep.CMState]want{
				idle: fail(badst, idle), conn: ok(fld), req: fail(badst, req), acc: ok(fld),
				est: fail(badst, est), shl: fail(badst, shl), shr: fail(badst, shr),
				disc: fail(badst, disc), rej: fail(badst, rej), fld: fail(badst, fld),
				clsd: fail(fi.EBADF, clsd),
			},
		},
		{
			name: "Shutdown",
			call: func(c *ep.ConnState) (bool, error) { return c.Shutdown() },
			want: map[ep.CMState]want{
				idle: fail(fi.ENOTCONN, idle), conn: emit(shl), req: fail(fi.ENOTCONN, req),
				acc: emit(shl), est: emit(shl), shl: ok(shl), shr: ok(disc), disc: ok(disc),
				rej: fail(fi.ENOTCONN, rej), fld: fail(fi.ENOTCONN, fld), clsd: fail(fi.EBADF, clsd),
			},
		},
		{
			name: "PeerGone",
			call: func(c *ep.ConnState) (bool, error) { return c.PeerGone(), nil },
			want: map[ep.CMState]want{
				idle: ok(idle), conn: emit(shr), req: ok(req), acc: emit(shr), est: emit(shr),
				shl: ok(disc), shr: ok(shr), disc: ok(disc), rej: ok(rej), fld: ok(fld),
				clsd: ok(clsd),
			},
		},
		{
			name: "Close",
			call: func(c *ep.ConnState) (bool, error) {
				before := c.State()
				prev, err := c.Close()
				if err == nil && prev != before {
					return false, fmt.Errorf("Close returned prev %v, want %v", prev, before)
				}
				return false, err
			},
			want: map[ep.CMState]want{
				idle: ok(clsd), conn: ok(clsd), req: ok(clsd), acc: ok(clsd), est: ok(clsd),
				shl: ok(clsd), shr: ok(clsd), disc: ok(clsd), rej: ok(clsd), fld: ok(clsd),
				clsd: fail(fi.EBADF, clsd),
			},
		},
	}
	for _, op := range ops {
		require.Len(t, op.want, len(activeStates), "%s: table must cover every state", op.name)
		for _, before := range activeStates {
			w, found := op.want[before]
			require.True(t, found, "%s: no row for %v", op.name, before)
			t.Run(fmt.Sprintf("%s/from=%v", op.name, before), func(t *testing.T) {
				c := connStateIn(t, before)
				gotEmit, err := op.call(c)
				if w.code == fi.SUCCESS {
					require.NoError(t, err)
				} else {
					require.ErrorIs(t, err, w.code)
					require.Equal(t, w.code, fi.Code(err))
					require.True(t, strings.HasPrefix(err.Error(), "ep: "), "message %q", err.Error())
				}
				require.Equal(t, w.emit, gotEmit, "emit Shutdown event")
				require.Equal(t, w.after, c.State())
			})
		}
	}
}

func TestConnStateErrorMessageNamesOpAndState(t *testing.T) {
	c := connStateIn(t, ep.CMConnected)
	require.EqualError(t, c.Connect(), "ep: connect: endpoint is connected: "+fi.EISCONN.Error())
	_, err := connStateIn(t, ep.CMIdle).Shutdown()
	require.EqualError(t, err, "ep: shutdown: endpoint is idle: "+fi.ENOTCONN.Error())
}

func TestConnStateCanSend(t *testing.T) {
	tests := map[ep.CMState]error{
		ep.CMIdle:           fi.ENOTCONN,
		ep.CMConnecting:     fi.ENOTCONN,
		ep.CMReqReceived:    fi.ENOTCONN,
		ep.CMAccepting:      fi.ENOTCONN,
		ep.CMConnected:      nil,
		ep.CMShutdownLocal:  fi.ESHUTDOWN,
		ep.CMShutdownRemote: fi.ESHUTDOWN,
		ep.CMDisconnected:   fi.ESHUTDOWN,
		ep.CMRejected:       fi.ENOTCONN,
		ep.CMFailed:         fi.ENOTCONN,
		ep.CMClosed:         fi.EBADF,
	}
	require.Len(t, tests, len(activeStates))
	for _, s := range activeStates {
		t.Run(s.String(), func(t *testing.T) {
			c := connStateIn(t, s)
			// A bare Errno, not a wrapped one: the data path does not allocate.
			require.Equal(t, tests[s], c.CanSend())
			allocs := testing.AllocsPerRun(100, func() { _ = c.CanSend() })
			require.Zero(t, allocs)
		})
	}
}

func TestCMStateString(t *testing.T) {
	seen := map[string]ep.CMState{}
	for _, s := range append(activeStates, ep.CMListening) {
		name := s.String()
		require.NotEmpty(t, name)
		require.NotContains(t, name, "CMState(", "state %d has no name", int(s))
		prev, dup := seen[name]
		require.False(t, dup, "%v and %d share the name %q", prev, int(s), name)
		seen[name] = s
	}
	require.Equal(t, "CMState(99)", ep.CMState(99).String())
	require.Equal(t, "CMState(-1)", ep.CMState(-1).String())
}

// TestConnStateOneShutdownEvent races local Shutdown against PeerGone
// (and repeats of both) on many endpoints: each endpoint must get exactly
// one eq.Shutdown, whoever wins.
func TestConnStateOneShutdownEvent(t *testing.T) {
	const (
		endpoints = 64
		callers   = 8 // goroutines per side per endpoint
	)
	for _, start := range []ep.CMState{ep.CMConnecting, ep.CMAccepting, ep.CMConnected} {
		t.Run(start.String(), func(t *testing.T) {
			states := make([]*ep.ConnState, endpoints)
			emits := make([]atomic.Int32, endpoints)
			for i := range states {
				states[i] = connStateIn(t, start)
			}
			var wg sync.WaitGroup
			errs := make(chan error, endpoints*callers)
			for i, c := range states {
				for range callers {
					wg.Go(func() {
						emit, err := c.Shutdown()
						if err != nil {
							errs <- err
						}
						if emit {
							emits[i].Add(1)
						}
					})
					wg.Go(func() {
						if c.PeerGone() {
							emits[i].Add(1)
						}
					})
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			for i, c := range states {
				require.Equal(t, int32(1), emits[i].Load(), "endpoint %d", i)
				require.Equal(t, ep.CMDisconnected, c.State(), "endpoint %d", i)
			}
		})
	}
}

// TestConnStateShutdownDuringConnect checks the race a provider sees when
// the user shuts down an endpoint whose connection reply is in flight:
// one eq.Shutdown, and the late reply is dropped.
func TestConnStateShutdownDuringConnect(t *testing.T) {
	c := connStateIn(t, ep.CMConnecting)
	emit, err := c.Shutdown()
	require.NoError(t, err)
	require.True(t, emit)
	require.ErrorIs(t, c.Established(), fi.EOPBADSTATE)
	require.ErrorIs(t, c.Rejected(), fi.EOPBADSTATE)
	require.ErrorIs(t, c.Failed(), fi.EOPBADSTATE)
	require.False(t, c.PeerGone())
	require.Equal(t, ep.CMDisconnected, c.State())
	require.Equal(t, fi.ESHUTDOWN, c.CanSend())
}

func TestCheckCMData(t *testing.T) {
	const max = 16
	tests := []struct {
		name string
		data []byte
		ok   bool
	}{
		{"nil", nil, true},
		{"empty", []byte{}, true},
		{"max", make([]byte, max), true},
		{"max+1", make([]byte, max+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ep.CheckCMData(tt.data, max)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, fi.EINVAL)
			require.ErrorContains(t, err, "ep: private data of 17 bytes exceeds the provider's CM data size 16")
		})
	}
	t.Run("zero size allows only no data", func(t *testing.T) {
		require.NoError(t, ep.CheckCMData(nil, 0))
		require.ErrorIs(t, ep.CheckCMData([]byte{1}, 0), fi.EINVAL)
	})
}

package ep

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// CMState is the connection-management state of an endpoint (fi_cm(3)).
// libfabric keeps it inside each provider; gofabric shares one machine,
// ConnState for active endpoints and Backlog for passive ones, so that
// every provider reports the same errors for the same misuse. Each state
// names its counterpart in the InfiniBand CM state machine (IBA vol. 1,
// 12.9.6-12.9.7).
type CMState int32

// Connection-management states.
const (
	// CMIdle: opened, not connecting (IB: Idle). The zero value.
	CMIdle CMState = iota
	// CMConnecting: Connect was called, the request is sent and the reply
	// awaited (IB: REQ Sent, REP Wait).
	CMConnecting
	// CMReqReceived: the endpoint was opened from a connection request
	// (eq.ConnReq's Info) and Accept has not been called (IB: REQ Rcvd).
	CMReqReceived
	// CMAccepting: Accept was called, the reply is sent and the peer's
	// confirmation awaited (IB: REP Sent).
	CMAccepting
	// CMConnected: the connection is up and eq.Connected was reported
	// (IB: Established).
	CMConnected
	// CMShutdownLocal: Shutdown was called (IB: DREQ Sent).
	CMShutdownLocal
	// CMShutdownRemote: the peer disconnected or the connection was lost
	// (IB: DREQ Rcvd).
	CMShutdownRemote
	// CMDisconnected: both sides are done, after a local and a remote
	// shutdown in either order (IB: TimeWait).
	CMDisconnected
	// CMRejected: the peer rejected our connection request (IB: a REJ
	// received in REP Wait, which IB returns to Idle; here, because
	// fi_connect may be called once per endpoint, it is final).
	CMRejected
	// CMFailed: the connection attempt failed: refused, timed out,
	// unreachable (IB: Timeout).
	CMFailed
	// CMListening: a passive endpoint is listening (IB: Listen).
	CMListening
	// CMClosed: the endpoint is closed (fi_close); every later call fails
	// with fi.EBADF.
	CMClosed
)

var cmStateNames = [...]string{
	CMIdle:           "idle",
	CMConnecting:     "connecting",
	CMReqReceived:    "request received",
	CMAccepting:      "accepting",
	CMConnected:      "connected",
	CMShutdownLocal:  "shut down locally",
	CMShutdownRemote: "shut down by the peer",
	CMDisconnected:   "disconnected",
	CMRejected:       "rejected",
	CMFailed:         "failed",
	CMListening:      "listening",
	CMClosed:         "closed",
}

// String returns the state's name in lower case, as it appears in error
// messages ("ep: connect: endpoint is connected").
func (s CMState) String() string {
	if s >= 0 && int(s) < len(cmStateNames) {
		return cmStateNames[s]
	}
	return fmt.Sprintf("CMState(%d)", int32(s))
}

// Stater is implemented by endpoints that report their
// connection-management state: MSG endpoints and passive endpoints.
type Stater interface {
	// CMState returns the endpoint's current state.
	CMState() CMState
}

// State returns the connection-management state of an endpoint or a
// passive endpoint (gofabric's own; libfabric keeps it inside the
// provider). It is a snapshot: events on the endpoint's EQ move it on.
// It returns fi.ENOSYS with the reason for endpoints without one
// (connectionless endpoints, providers that do not report it).
func State(x any) (CMState, error) {
	s, ok := x.(Stater)
	if !ok {
		return 0, errors.Wrapf(fi.ENOSYS, "ep: state: %T has no connection state", x)
	}
	return s.CMState(), nil
}

// ConnState is the connection state machine of a connection-oriented
// active endpoint (the state a libfabric provider keeps in its fid_ep for
// fi_connect, fi_accept and fi_shutdown; fi_cm(3)). Providers call one
// method at each step, before acting on it, and act only when it returns
// nil:
//
//   - user calls: Connect, Accept, Shutdown, Close (fi_connect, fi_accept,
//     fi_shutdown, fi_close), and CanSend before each data transfer;
//   - protocol events: RequestReceived when the endpoint is opened from a
//     connection request, Established, Rejected, Failed and PeerGone.
//
// An error from a user call goes back to the user. An error from a
// protocol-event method means the endpoint has moved on (it was shut down
// or closed meanwhile): the provider drops the event and writes nothing to
// the event queue. This is how each endpoint gets exactly one terminal
// event: eq.Connected then one eq.Shutdown, or one error event, or (when
// Shutdown cuts a connection attempt short) one eq.Shutdown.
//
// Every error has an fi.Errno in its chain; the codes are listed on each
// method. The zero value is an endpoint in CMIdle. A ConnState is safe for
// concurrent use and must not be copied after first use.
type ConnState struct {
	// mu serialises transitions: every write of state, and each
	// read-decide-write sequence, happens with mu held.
	mu sync.Mutex
	// state holds a CMState. It is written only with mu held and read
	// without it by State and CanSend, which stay lock-free for the data
	// path.
	state atomic.Int32
}

// State returns the current state.
func (c *ConnState) State() CMState { return CMState(c.state.Load()) }

func (c *ConnState) set(s CMState) { c.state.Store(int32(s)) }

// stateErr is the error for op attempted in state s: code for the open
// states, fi.EBADF once closed.
func stateErr(code fi.Errno, op string, s CMState) error {
	if s == CMClosed {
		code = fi.EBADF
	}
	return errors.Wrapf(code, "ep: %s: endpoint is %s", op, s)
}

// RequestReceived marks an endpoint just opened from a connection request,
// the Info of an eq.ConnReq event (fi_endpoint with info->handle set):
// CMIdle → CMReqReceived. In any other state it returns fi.EOPBADSTATE
// (fi.EBADF once closed).
func (c *ConnState) RequestReceived() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.State()
	if s != CMIdle {
		return stateErr(fi.EOPBADSTATE, "request received", s)
	}
	c.set(CMReqReceived)
	return nil
}

// Connect records a call to fi_connect: CMIdle → CMConnecting. fi_cm(3)
// allows fi_connect once in an endpoint's lifetime, so every other state
// fails, with the code connect(2) gives where one applies:
//
//   - CMConnecting, CMAccepting: fi.EALREADY (a connection is in progress);
//   - CMConnected: fi.EISCONN;
//   - CMReqReceived: fi.EINVAL (the endpoint belongs to a connection
//     request and is connected with Accept);
//   - CMShutdownLocal, CMShutdownRemote, CMDisconnected, CMRejected,
//     CMFailed: fi.EOPBADSTATE (the endpoint's one connection is over);
//   - CMClosed: fi.EBADF.
//
// The C tcp provider answers every one of these with -FI_EINVAL; the
// distinct codes say what went wrong.
func (c *ConnState) Connect() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s := c.State(); s {
	case CMIdle:
		c.set(CMConnecting)
		return nil
	case CMConnecting, CMAccepting:
		return stateErr(fi.EALREADY, "connect", s)
	case CMConnected:
		return stateErr(fi.EISCONN, "connect", s)
	case CMReqReceived:
		return errors.Wrap(fi.EINVAL, "ep: connect: endpoint was opened from a connection request; use Accept")
	default:
		return stateErr(fi.EOPBADSTATE, "connect", s)
	}
}

// Accept records a call to fi_accept: CMReqReceived → CMAccepting. Other
// states fail:
//
//   - CMIdle, CMConnecting: fi.EINVAL (the endpoint was not opened from a
//     connection request; the C tcp provider's answer too);
//   - CMAccepting: fi.EALREADY;
//   - CMConnected: fi.EISCONN;
//   - CMShutdownLocal, CMShutdownRemote, CMDisconnected, CMRejected,
//     CMFailed: fi.EOPBADSTATE;
//   - CMClosed: fi.EBADF.
func (c *ConnState) Accept() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s := c.State(); s {
	case CMReqReceived:
		c.set(CMAccepting)
		return nil
	case CMIdle, CMConnecting:
		return errors.Wrap(fi.EINVAL, "ep: accept: endpoint was not opened from a connection request")
	case CMAccepting:
		return stateErr(fi.EALREADY, "accept", s)
	case CMConnected:
		return stateErr(fi.EISCONN, "accept", s)
	default:
		return stateErr(fi.EOPBADSTATE, "accept", s)
	}
}

// Established records that the connection is up, on the connecting side
// (the peer accepted) or the accepting side (the peer confirmed):
// CMConnecting or CMAccepting → CMConnected. On nil the provider writes
// eq.Connected. Any other state returns fi.EOPBADSTATE (fi.EBADF once
// closed): the attempt was shut down meanwhile and the provider drops the
// event.
func (c *ConnState) Established() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s := c.State(); s {
	case CMConnecting, CMAccepting:
		c.set(CMConnected)
		return nil
	default:
		return stateErr(fi.EOPBADSTATE, "established", s)
	}
}

// Rejected records that the peer rejected our connection request:
// CMConnecting → CMRejected. On nil the provider writes an *eq.EQError
// with fi.ECONNREFUSED and the reject's private data as ErrData
// (fi_cm(3)). Any other state returns fi.EOPBADSTATE (fi.EBADF once
// closed), and the provider drops the reject.
func (c *ConnState) Rejected() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.State()
	if s != CMConnecting {
		return stateErr(fi.EOPBADSTATE, "rejected", s)
	}
	c.set(CMRejected)
	return nil
}

// Failed records that the connection attempt failed for a reason the
// provider knows (refused, timed out, unreachable; rdma_cm's
// RDMA_CM_EVENT_CONNECT_ERROR and UNREACHABLE), on either side:
// CMConnecting or CMAccepting → CMFailed. On nil the provider writes an
// *eq.EQError with that reason's code. Any other state returns
// fi.EOPBADSTATE (fi.EBADF once closed), and the provider writes nothing.
func (c *ConnState) Failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s := c.State(); s {
	case CMConnecting, CMAccepting:
		c.set(CMFailed)
		return nil
	default:
		return stateErr(fi.EOPBADSTATE, "failed", s)
	}
}

// Shutdown records a call to fi_shutdown and reports whether the provider
// must write an eq.Shutdown event to this endpoint's event queue:
//
//   - CMConnecting, CMAccepting, CMConnected → CMShutdownLocal, true: the
//     local side's one eq.Shutdown (the C tcp provider reports FI_SHUTDOWN
//     locally too, and also when a connection attempt is cut short);
//   - CMShutdownRemote → CMDisconnected, false: the peer's disconnect
//     already produced this endpoint's event;
//   - CMShutdownLocal, CMDisconnected: false, nil: a repeated Shutdown does
//     nothing, as in the C tcp provider;
//   - CMIdle, CMReqReceived, CMRejected, CMFailed: fi.ENOTCONN, as
//     shutdown(2) on a socket that never connected (the C tcp provider
//     returns success and does nothing; the error shows the mistake);
//   - CMClosed: fi.EBADF.
func (c *ConnState) Shutdown() (emitShutdown bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s := c.State(); s {
	case CMConnecting, CMAccepting, CMConnected:
		c.set(CMShutdownLocal)
		return true, nil
	case CMShutdownRemote:
		c.set(CMDisconnected)
		return false, nil
	case CMShutdownLocal, CMDisconnected:
		return false, nil
	default:
		return false, stateErr(fi.ENOTCONN, "shutdown", s)
	}
}

// PeerGone records that the peer disconnected (its fi_shutdown or
// fi_close) or the connection was lost, and reports whether the provider
// must write an eq.Shutdown event (fi_cm(3): FI_SHUTDOWN is generated when
// the peer disconnects or closes abruptly):
//
//   - CMConnecting, CMAccepting, CMConnected → CMShutdownRemote, true. A
//     provider that knows why an attempt failed (refused, timed out) calls
//     Failed instead, for an error event;
//   - CMShutdownLocal → CMDisconnected, false: Shutdown already produced
//     this endpoint's event;
//   - any other state: false, no change (a repeated notice, such as a
//     reset after an orderly close, or one arriving after Close).
//
// Shutdown and PeerGone, in any order and from any goroutines, yield
// exactly one true between them.
func (c *ConnState) PeerGone() (emitShutdown bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.State() {
	case CMConnecting, CMAccepting, CMConnected:
		c.set(CMShutdownRemote)
		return true
	case CMShutdownLocal:
		c.set(CMDisconnected)
	}
	return false
}

// Close records fi_close: any state → CMClosed. It returns the state the
// endpoint was in, so that the provider knows what to tear down (a
// connection to abort in CMConnecting, CMAccepting or CMConnected; a
// request to reject in CMReqReceived). No event is written for a closed
// endpoint. A second Close returns fi.EBADF.
func (c *ConnState) Close() (prev CMState, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.State()
	if s == CMClosed {
		return s, stateErr(fi.EBADF, "close", s)
	}
	c.set(CMClosed)
	return s, nil
}

// CanSend reports whether data transfers may be posted now (fi_cm(3):
// not before FI_CONNECTED). It is for the data path: it takes no lock,
// does not allocate, and returns nil or a bare fi.Errno:
//
//   - CMConnected: nil;
//   - CMShutdownLocal, CMShutdownRemote, CMDisconnected: fi.ESHUTDOWN;
//   - CMClosed: fi.EBADF;
//   - any other state: fi.ENOTCONN.
//
// Receive buffers may be posted in any state but CMClosed (fi_cm(3)), so
// there is no CanRecv.
func (c *ConnState) CanSend() error {
	switch c.State() {
	case CMConnected:
		return nil
	case CMShutdownLocal, CMShutdownRemote, CMDisconnected:
		return fi.ESHUTDOWN
	case CMClosed:
		return fi.EBADF
	default:
		return fi.ENOTCONN
	}
}

// CheckCMData checks private data for fi_connect, fi_accept or fi_reject
// against the provider's CM data size max (FI_OPT_CM_DATA_SIZE, the CM
// interface's CMDataSize). fi_cm(3) lets providers truncate longer data
// silently; gofabric refuses it instead, with fi.EINVAL (which is also the
// C tcp provider's answer), because data the peer never sees in full is a
// bug the caller wants to hear about. nil and empty data always pass.
func CheckCMData(data []byte, max int) error {
	if len(data) > max {
		return errors.Wrapf(fi.EINVAL, "ep: private data of %d bytes exceeds the provider's CM data size %d", len(data), max)
	}
	return nil
}

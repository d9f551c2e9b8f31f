package eq

import (
	"errors"
	"fmt"

	"github.com/gofabric/gofabric/fi"
)

// EventType is an EQ event number (FI_NOTIFY, FI_CONNREQ...; fi_eq(3)).
type EventType uint32

// Event types, libfabric 1.17 values.
const (
	EventNotify       EventType = iota // FI_NOTIFY
	EventConnReq                       // FI_CONNREQ
	EventConnected                     // FI_CONNECTED
	EventShutdown                      // FI_SHUTDOWN
	EventMRComplete                    // FI_MR_COMPLETE
	EventAVComplete                    // FI_AV_COMPLETE
	EventJoinComplete                  // FI_JOIN_COMPLETE
)

var eventNames = [...]string{"FI_NOTIFY", "FI_CONNREQ", "FI_CONNECTED", "FI_SHUTDOWN",
	"FI_MR_COMPLETE", "FI_AV_COMPLETE", "FI_JOIN_COMPLETE"}

// String returns libfabric's name of the event type, as fi_tostr does for
// FI_TYPE_EQ_EVENT.
func (t EventType) String() string {
	if int(t) < len(eventNames) {
		return eventNames[t]
	}
	return fmt.Sprintf("Unknown (%d)", uint32(t))
}

// Event is an event read from an event queue. The concrete types are
// *ConnReq, *Connected, *Shutdown, *JoinComplete, *MRComplete, *AVComplete
// and *Notify; error events are reported as *EQError through ReadErr.
type Event interface {
	// Type returns the event's number.
	Type() EventType
	// Source returns the object the event is about (the fid of the entry).
	Source() fi.Fid
}

// ConnReq is an FI_CONNREQ event (struct fi_eq_cm_entry): a connection
// request arrived on a passive endpoint. Info.Handle names the request:
// open an endpoint from Info and Accept on it, or pass Info.Handle to the
// passive endpoint's Reject.
type ConnReq struct {
	// Fid is the passive endpoint the request arrived on.
	Fid fi.Fid
	// Info describes the requested connection; Info.Handle is the request.
	Info *fi.Info
	// Data is the private data the connecting side sent.
	Data []byte
}

// Connected is an FI_CONNECTED event (struct fi_eq_cm_entry): the endpoint
// Fid is connected. On the connecting side Data holds the private data of
// the peer's Accept.
type Connected struct {
	Fid  fi.Fid
	Info *fi.Info
	Data []byte
}

// Shutdown is an FI_SHUTDOWN event: the connection of endpoint Fid is
// closed, by either side or by the peer's failure. Each endpoint gets at
// most one.
type Shutdown struct {
	Fid fi.Fid
}

// JoinComplete is an FI_JOIN_COMPLETE event: the multicast join of group
// Fid has completed.
type JoinComplete struct {
	Fid     fi.Fid
	Context any
}

// MRComplete is an FI_MR_COMPLETE event: an asynchronous memory
// registration completed.
type MRComplete struct {
	Fid     fi.Fid
	Context any
}

// AVComplete is an FI_AV_COMPLETE event: an asynchronous AV insert
// completed; Data is the number of addresses inserted.
type AVComplete struct {
	Fid     fi.Fid
	Context any
	Data    uint64
}

// Notify is an FI_NOTIFY event, or any event an application writes with a
// type of its own (struct fi_eq_entry).
type Notify struct {
	Kind    EventType
	Fid     fi.Fid
	Context any
	Data    uint64
}

// Type implements Event.
func (*ConnReq) Type() EventType { return EventConnReq }

// Type implements Event.
func (*Connected) Type() EventType { return EventConnected }

// Type implements Event.
func (*Shutdown) Type() EventType { return EventShutdown }

// Type implements Event.
func (*JoinComplete) Type() EventType { return EventJoinComplete }

// Type implements Event.
func (*MRComplete) Type() EventType { return EventMRComplete }

// Type implements Event.
func (*AVComplete) Type() EventType { return EventAVComplete }

// Type implements Event.
func (n *Notify) Type() EventType { return n.Kind }

// Source implements Event.
func (e *ConnReq) Source() fi.Fid { return e.Fid }

// Source implements Event.
func (e *Connected) Source() fi.Fid { return e.Fid }

// Source implements Event.
func (e *Shutdown) Source() fi.Fid { return e.Fid }

// Source implements Event.
func (e *JoinComplete) Source() fi.Fid { return e.Fid }

// Source implements Event.
func (e *MRComplete) Source() fi.Fid { return e.Fid }

// Source implements Event.
func (e *AVComplete) Source() fi.Fid { return e.Fid }

// Source implements Event.
func (e *Notify) Source() fi.Fid { return e.Fid }

// EQError is an error event (struct fi_eq_err_entry), returned by
// EventQueue.ReadErr after Read reported fi.EAVAIL. It unwraps to Err, so
// errors.Is(e, fi.ECONNREFUSED) works.
type EQError struct {
	// Fid is the object the error is about.
	Fid     fi.Fid
	Context any
	Data    uint64
	// Err is the error code (fi_eq_err_entry.err).
	Err fi.Errno
	// ProvErrno is the provider's own error number, 0 if none.
	ProvErrno int
	// ErrData is provider data; for a rejected connection it holds the
	// private data the peer passed to Reject.
	ErrData []byte
	// Reason says why a connection attempt or a connection failed, the
	// same on every provider (gofabric's own; fi_eq_err_entry has no
	// such field, and C providers leave it to prov_errno, which keeps the
	// provider's own code here too). ReasonUnknown for other errors.
	Reason ConnReason
}

// Error returns the error's text.
func (e *EQError) Error() string {
	s := "eq error: " + e.Err.Error()
	if e.ProvErrno != 0 {
		s = fmt.Sprintf("%s (prov_errno %d)", s, e.ProvErrno)
	}
	if e.Reason != ReasonUnknown {
		s += ": " + e.Reason.String()
	}
	return s
}

// ConnReason is why a connection attempt or an established connection
// ended in an error event (EQError.Reason). It is the same on every
// provider; the provider's own code stays in EQError.ProvErrno (a
// socket errno on tcp, an IB CM reject reason on verbs).
type ConnReason uint8

// Connection failure reasons, each with the error code it comes with.
const (
	// ReasonUnknown: not a connection failure, or one the provider
	// cannot tell apart.
	ReasonUnknown ConnReason = iota
	// ReasonRejected: the peer's application refused the request
	// (fi_reject); EQError.ErrData holds its private data, possibly
	// none. fi.ECONNREFUSED.
	ReasonRejected
	// ReasonNoListener: nothing listens at the address (a TCP reset to
	// the connect; IB's "invalid service ID"). fi.ECONNREFUSED.
	ReasonNoListener
	// ReasonBacklogFull: the listener's backlog of requests that its
	// application has not answered is full. fi.ECONNREFUSED.
	ReasonBacklogFull
	// ReasonTimedOut: no answer within the connect timeout (the
	// endpoint's ep.OptConnTimeout, or the provider's default).
	// fi.ETIMEDOUT.
	ReasonTimedOut
	// ReasonUnreachable: no route to the address, or its resolution
	// failed. fi.EHOSTUNREACH or fi.ENETUNREACH.
	ReasonUnreachable
	// ReasonTransport: the transport failed under the connection: a
	// reset, a malformed or unexpected message from the peer, a
	// device error. The error code is the transport's.
	ReasonTransport
)

var connReasonNames = [...]string{
	ReasonUnknown:     "unknown",
	ReasonRejected:    "rejected by the peer",
	ReasonNoListener:  "nothing listening",
	ReasonBacklogFull: "peer's backlog full",
	ReasonTimedOut:    "timed out",
	ReasonUnreachable: "unreachable",
	ReasonTransport:   "transport error",
}

// String names the reason ("nothing listening").
func (r ConnReason) String() string {
	if int(r) < len(connReasonNames) {
		return connReasonNames[r]
	}
	return fmt.Sprintf("ConnReason(%d)", uint8(r))
}

// ReasonOf returns the Reason of the first *EQError in err's chain, and
// ReasonUnknown when there is none.
func ReasonOf(err error) ConnReason {
	var e *EQError
	if errors.As(err, &e) {
		return e.Reason
	}
	return ReasonUnknown
}

// Unwrap returns Err.
func (e *EQError) Unwrap() error { return e.Err }

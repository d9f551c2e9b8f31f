// Package ep mirrors libfabric's fi_endpoint.h and fi_cm.h: active and
// passive endpoints (fi_endpoint(3)), their data-transfer abilities
// (fi_msg(3), fi_tagged(3), fi_rma(3), fi_atomic(3)), connection management
// and multicast (fi_cm(3)), and the connection-management state machine
// that every provider shares.
//
// # Abilities
//
// An Endpoint's required methods are Bind, Enable, Cancel, Info and Close.
// Everything else is an optional interface (Msg, Tagged, RMA, Atomic, CM,
// Joiner) found by type assertion; a provider implements one only if it can
// ever support it.
//
// # Connection management an application can act on
//
// gofabric adds three things to fi_cm(3), the same on every provider that
// connects (tcp, verbs):
//
// Reasons. The error event of a failed connection attempt, an
// *eq.EQError, says why in its Reason (eq.ConnReason; eq.ReasonOf finds it
// in an error chain): eq.ReasonRejected (the peer's application, with its
// data in ErrData), eq.ReasonNoListener, eq.ReasonBacklogFull,
// eq.ReasonTimedOut, eq.ReasonUnreachable, eq.ReasonTransport. The error
// code is libfabric's (fi.ECONNREFUSED for the first three) and the
// provider's own code stays in ProvErrno (a socket errno on tcp, an IB CM
// reject reason on verbs). Each provider's doc says which causes it tells
// apart and how.
//
// Options. OptLevelCM is gofabric's option level for connection
// management (libfabric 1.17 has none): OptConnTimeout (milliseconds
// Connect waits for the peer's answer) and OptConnRetries (how often the
// request is sent again), set with SetOpt before Connect, and
// OptConnState, read-only. Unset, the timeout and retries are the
// provider's defaults (its environment variables). They sit beside
// fi_endpoint(3)'s OptLevelEndpoint options, such as OptCMDataSize
// (FI_OPT_CM_DATA_SIZE), which passive endpoints answer too.
//
// State. MSG endpoints and passive endpoints implement Stater: State (or
// GetOpt of OptConnState) reads the endpoint's CMState, the state of the
// machine every provider shares (ConnState, Backlog). Each state stands
// for one or more states of the InfiniBand CM (IBA vol. 1, 12.9.6-12.9.7;
// the CMapiState values of the VIEO CM API reference, shared seed 004,
// active / passive side):
//
//	CMState           IB CM state                           CMapiState
//	CMIdle            Idle                                  Idle 1
//	CMConnecting      REQ Sent, REP Wait (MRA Rcvd)         REQsent 2, REPwait 4
//	CMReqReceived     REQ Rcvd (MRA Sent)                   REQrcvd 14, MRAsentPas 15
//	CMAccepting       REP Sent (MRA Rcvd)                   REPsent 16, MRArcvd 17
//	CMConnected       Established                           EstablishedAct 7 / EstablishedPas 18
//	CMShutdownLocal   DREQ Sent                             DREQsentAct 8 / DREQsentPas 20
//	CMShutdownRemote  DREQ Rcvd                             DREQrcvdAct 9 / DREQrcvdPas 19
//	CMDisconnected    TimeWait                              TimeWaitAct 10 / TimeWaitPas 22
//	CMRejected        a REJ in REP Wait (IB returns to      Idle 1
//	                  Idle; fi_connect is once, so final)
//	CMFailed          Timeout (the passive side: RTU        Timeout 11 / RTUto 21
//	                  timeout)
//	CMListening       Listen                                Listen 13
//	CMClosed          none: the connection's objects are    none
//	                  gone
package ep

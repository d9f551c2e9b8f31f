package verbs

import (
	"strconv"

	"github.com/gofabric/gofabric/eq"
)

// RejectReason is an InfiniBand CM reject reason (IBTA vol. 1, 12.6.7.2;
// the table of seed 004), the status of librdmacm's
// RDMA_CM_EVENT_REJECTED on InfiniBand and RoCE: the ProvErrno of the
// error entry a refused fi_connect gives (C's verbs provider puts the
// same code, negated, in prov_errno). RejectConsumer is the peer
// application's fi_reject, with its private data; the others come from
// the transport. Reason gives the eq.ConnReason the entry carries.
type RejectReason int

// The IB CM reject reasons.
const (
	RejectNoQP                  RejectReason = 1  // no QP available
	RejectNoEEC                 RejectReason = 2  // no EEC available
	RejectNoResources           RejectReason = 3  // no resources available
	RejectTimeout               RejectReason = 4  // the CM timed out
	RejectUnsupported           RejectReason = 5  // unsupported request
	RejectInvalidCommID         RejectReason = 6  // invalid communication ID
	RejectInvalidCommInstance   RejectReason = 7  // invalid communication instance
	RejectInvalidServiceID      RejectReason = 8  // invalid service ID: nothing listens on that port
	RejectInvalidTransportType  RejectReason = 9  // invalid transport service type
	RejectStaleConnection       RejectReason = 10 // stale connection
	RejectNoSuchRDC             RejectReason = 11 // RDC does not exist
	RejectPrimaryRemoteGID      RejectReason = 12 // primary remote port GID rejected
	RejectPrimaryRemoteLID      RejectReason = 13 // primary remote port LID rejected
	RejectPrimarySL             RejectReason = 14 // invalid primary SL
	RejectPrimaryTrafficClass   RejectReason = 15 // invalid primary traffic class
	RejectPrimaryHopLimit       RejectReason = 16 // invalid primary hop limit
	RejectPrimaryPacketRate     RejectReason = 17 // invalid primary packet rate
	RejectAlternateRemoteGID    RejectReason = 18 // alternate remote port GID rejected
	RejectAlternateRemoteLID    RejectReason = 19 // alternate remote port LID rejected
	RejectAlternateSL           RejectReason = 20 // invalid alternate SL
	RejectAlternateTrafficClass RejectReason = 21 // invalid alternate traffic class
	RejectAlternateHopLimit     RejectReason = 22 // invalid alternate hop limit
	RejectAlternatePacketRate   RejectReason = 23 // invalid alternate packet rate
	RejectCMRedirect            RejectReason = 24 // port and CM redirection
	RejectPortRedirect          RejectReason = 25 // port redirection
	RejectInvalidMTU            RejectReason = 26 // invalid path MTU
	RejectInsufficientResponder RejectReason = 27 // insufficient responder resources
	RejectConsumer              RejectReason = 28 // consumer defined: the peer application's fi_reject
	RejectRNRRetryCount         RejectReason = 29 // invalid RNR retry count
)

var rejectNames = [...]string{
	RejectNoQP: "no QP available", RejectNoEEC: "no EEC available", RejectNoResources: "no resources available",
	RejectTimeout: "timeout", RejectUnsupported: "unsupported request", RejectInvalidCommID: "invalid communication ID",
	RejectInvalidCommInstance: "invalid communication instance", RejectInvalidServiceID: "invalid service ID",
	RejectInvalidTransportType: "invalid transport service type", RejectStaleConnection: "stale connection",
	RejectNoSuchRDC: "RDC does not exist", RejectPrimaryRemoteGID: "primary remote port GID rejected",
	RejectPrimaryRemoteLID: "primary remote port LID rejected", RejectPrimarySL: "invalid primary SL",
	RejectPrimaryTrafficClass: "invalid primary traffic class", RejectPrimaryHopLimit: "invalid primary hop limit",
	RejectPrimaryPacketRate: "invalid primary packet rate", RejectAlternateRemoteGID: "alternate remote port GID rejected",
	RejectAlternateRemoteLID: "alternate remote port LID rejected", RejectAlternateSL: "invalid alternate SL",
	RejectAlternateTrafficClass: "invalid alternate traffic class", RejectAlternateHopLimit: "invalid alternate hop limit",
	RejectAlternatePacketRate: "invalid alternate packet rate", RejectCMRedirect: "port and CM redirection",
	RejectPortRedirect: "port redirection", RejectInvalidMTU: "invalid path MTU",
	RejectInsufficientResponder: "insufficient responder resources", RejectConsumer: "consumer defined",
	RejectRNRRetryCount: "invalid RNR retry count",
}

// String returns the reason's name ("invalid service ID"), or
// "reject reason N" for one outside the table.
func (r RejectReason) String() string {
	if r > 0 && int(r) < len(rejectNames) {
		return rejectNames[r]
	}
	return "reject reason " + strconv.Itoa(int(r))
}

// Reason is the eq.ConnReason of a connection refused with r (the
// EQError.Reason of its error entry): RejectConsumer is
// eq.ReasonRejected (the provider's own refusals, a full backlog or a
// closed listener, are consumer rejects too and say so in their private
// data: eq.ReasonBacklogFull, eq.ReasonNoListener); RejectInvalidServiceID
// (nothing listens on the port) eq.ReasonNoListener; RejectTimeout
// eq.ReasonTimedOut; every other reason eq.ReasonTransport.
func (r RejectReason) Reason() eq.ConnReason {
	switch r {
	case RejectConsumer:
		return eq.ReasonRejected
	case RejectInvalidServiceID:
		return eq.ReasonNoListener
	case RejectTimeout:
		return eq.ReasonTimedOut
	}
	return eq.ReasonTransport
}

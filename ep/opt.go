package ep

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// OptLevel is the level argument of fi_setopt and fi_getopt.
type OptLevel int

// Option levels.
const (
	// OptLevelEndpoint is FI_OPT_ENDPOINT, the level of fi_endpoint(3)'s
	// options.
	OptLevelEndpoint OptLevel = 0
	// OptLevelCM is gofabric's own level of connection-management
	// options (OptConnTimeout, OptConnRetries, OptConnState).
	// libfabric 1.17 defines FI_OPT_ENDPOINT alone, and C providers
	// answer this level with FI_ENOPROTOOPT.
	OptLevelCM OptLevel = 0x4746 // "GF"
)

// OptName names an option of a level (the optname of fi_setopt).
type OptName int

// FI_OPT_ENDPOINT options, libfabric 1.17 values. Every one of them
// takes an integer here: the size_t ones their size, the boolean ones 0
// or 1.
const (
	// OptMinMultiRecv is FI_OPT_MIN_MULTI_RECV: the space left in an
	// FI_MULTI_RECV buffer below which the provider releases it.
	OptMinMultiRecv OptName = 0
	// OptCMDataSize is FI_OPT_CM_DATA_SIZE: the most private data the
	// connection calls carry (read-only).
	OptCMDataSize OptName = 1
	// OptBufferedMin and OptBufferedLimit are FI_OPT_BUFFERED_MIN and
	// FI_OPT_BUFFERED_LIMIT (FI_BUFFERED_RECV).
	OptBufferedMin   OptName = 2
	OptBufferedLimit OptName = 3
	// OptSendBufSize and OptRecvBufSize are FI_OPT_SEND_BUF_SIZE and
	// FI_OPT_RECV_BUF_SIZE.
	OptSendBufSize OptName = 4
	OptRecvBufSize OptName = 5
	// OptTxSize and OptRxSize are FI_OPT_TX_SIZE and FI_OPT_RX_SIZE.
	OptTxSize OptName = 6
	OptRxSize OptName = 7
)

// OptLevelCM options, on MSG endpoints of the providers that connect
// (tcp, verbs). The two that can be set are set before Connect: after it,
// and on an endpoint opened from a connection request, SetOpt gives
// fi.EOPBADSTATE; a value out of range gives fi.EINVAL.
const (
	// OptConnTimeout is the time in milliseconds that Connect waits for
	// the peer's answer before the attempt fails with fi.ETIMEDOUT and
	// eq.ReasonTimedOut. Its default is the provider's: tcp reads
	// FI_TCP_CONN_TIMEOUT (and GetOpt gives it); verbs reads 0 until set,
	// its resolution and CM timeouts being the kernel's and C's.
	OptConnTimeout OptName = 1
	// OptConnRetries is how often the transport retries before it gives
	// up: tcp, the SYN retransmissions of the connect (TCP_SYNCNT, 1 to
	// 127; default the kernel's net.ipv4.tcp_syn_retries); verbs, the
	// queue pair's transport retry count that rdma_connect passes (0 to
	// 7; default C's 15, which the kernel sends as 7). The CM's own
	// resends of a request are the kernel's on either.
	OptConnRetries OptName = 2
	// OptConnState is the endpoint's connection state, a CMState
	// (read-only; the same as State). Passive endpoints answer it too.
	OptConnState OptName = 3
)

// Options is implemented by endpoints with options (fi_setopt and
// fi_getopt). An option the endpoint does not know gives
// fi.ENOPROTOOPT; a value it cannot take, fi.EINVAL.
type Options interface {
	// SetOpt sets an option (fi_setopt).
	SetOpt(level OptLevel, name OptName, val int) error
	// GetOpt reads an option (fi_getopt).
	GetOpt(level OptLevel, name OptName) (int, error)
}

// SetOpt sets option name of level on x (fi_setopt): fi.ENOPROTOOPT,
// with the reason, when x has no options.
func SetOpt(x any, level OptLevel, name OptName, val int) error {
	o, ok := x.(Options)
	if !ok {
		return errors.Wrapf(fi.ENOPROTOOPT, "ep: setopt: %T has no options", x)
	}
	return o.SetOpt(level, name, val)
}

// GetOpt reads option name of level from x (fi_getopt): fi.ENOPROTOOPT,
// with the reason, when x has no options.
func GetOpt(x any, level OptLevel, name OptName) (int, error) {
	o, ok := x.(Options)
	if !ok {
		return 0, errors.Wrapf(fi.ENOPROTOOPT, "ep: getopt: %T has no options", x)
	}
	return o.GetOpt(level, name)
}

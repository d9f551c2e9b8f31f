//go:build linux

package tcp

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
)

// Options and connection states of the provider's endpoints (fi_setopt,
// fi_getopt; gofabric's ep.Stater).

var (
	_ ep.Options = (*endpoint)(nil)
	_ ep.Stater  = (*endpoint)(nil)
	_ ep.Options = (*passiveEP)(nil)
	_ ep.Stater  = (*passiveEP)(nil)
)

// maxSynCnt is the most SYN retransmissions TCP_SYNCNT takes (the
// kernel's MAX_TCP_SYNCNT).
const maxSynCnt = 127

// synRetries is where the kernel keeps the SYN retransmissions of a
// connect that sets no TCP_SYNCNT (net.ipv4.tcp_syn_retries).
const synRetries = "/proc/sys/net/ipv4/tcp_syn_retries"

// defaultSynRetries is the kernel's net.ipv4.tcp_syn_retries, or its
// built-in default, 6, when it cannot be read.
func defaultSynRetries() int {
	if b, err := os.ReadFile(synRetries); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			return n
		}
	}
	return 6
}

// CMState returns the endpoint's connection-management state (gofabric's
// ep.Stater; libfabric keeps it inside the provider): ep.CMIdle until
// Connect, or ep.CMReqReceived for an endpoint opened from a connection
// request; then ep.CMConnecting or ep.CMAccepting, ep.CMConnected, and
// ep.CMRejected or ep.CMFailed when the attempt failed (its error event
// says why), ep.CMShutdownLocal, ep.CMShutdownRemote and
// ep.CMDisconnected after Shutdown or the peer's, and ep.CMClosed.
func (e *endpoint) CMState() ep.CMState { return e.cs.State() }

// connTimeoutLocked returns the connect timeout: OptConnTimeout, else
// FI_TCP_CONN_TIMEOUT. cmMu is held.
func (e *endpoint) connTimeoutLocked() time.Duration {
	if e.connTimeout > 0 {
		return e.connTimeout
	}
	return e.params.connTimeout
}

// SetOpt sets an endpoint option (fi_setopt). At ep.OptLevelCM, before
// Connect (in ep.CMIdle; fi.EOPBADSTATE after, and on an endpoint opened
// from a connection request, which does not connect; fi.EBADF once
// closed):
//
//   - ep.OptConnTimeout: how many milliseconds Connect waits, from the TCP
//     connect to the peer's CM answer, before the attempt fails with
//     fi.ETIMEDOUT and eq.ReasonTimedOut; at least 1 (fi.EINVAL below,
//     and beyond a time.Duration's range). Unset it is
//     FI_TCP_CONN_TIMEOUT's (default 30000).
//   - ep.OptConnRetries: how many times the kernel sends the TCP SYN again
//     when unanswered (TCP_SYNCNT on the connecting socket, tcp(7)), 1 to
//     127 (fi.EINVAL outside). Unset it is the kernel's,
//     net.ipv4.tcp_syn_retries (6 by default: about 127 s, so that
//     FI_TCP_CONN_TIMEOUT ends the attempt first). When the retries run
//     out first the attempt fails with fi.ETIMEDOUT, eq.ReasonTimedOut
//     and ProvErrno 110.
//   - ep.OptConnState is read-only: fi.ENOPROTOOPT, as setting
//     FI_OPT_CM_DATA_SIZE.
//
// At ep.OptLevelEndpoint the endpoint has FI_OPT_CM_DATA_SIZE, read-only:
// setting it gives fi.ENOPROTOOPT, as in C's tcp. So does every other
// option: FI_OPT_MIN_MULTI_RECV (C's tcp keeps it; its MSG entries do not
// offer FI_MULTI_RECV, nor do gofabric's), the buffered and buffer-size
// options, and other levels.
func (e *endpoint) SetOpt(level ep.OptLevel, name ep.OptName, val int) error {
	if err := msgOptKnown("setopt", level, name); err != nil {
		return err
	}
	if level == ep.OptLevelEndpoint || name == ep.OptConnState {
		return errors.Wrapf(fi.ENOPROTOOPT, "tcp: setopt: %s is read-only", optString(level, name))
	}
	var d time.Duration
	switch name {
	case ep.OptConnTimeout:
		if val < 1 || val > maxMS {
			return errors.Wrapf(fi.EINVAL, "tcp: setopt: connect timeout %d ms is outside [1, %d]", val, maxMS)
		}
		d = time.Duration(val) * time.Millisecond
	case ep.OptConnRetries:
		if val < 1 || val > maxSynCnt {
			return errors.Wrapf(fi.EINVAL, "tcp: setopt: connect retries %d is outside [1, %d] (TCP_SYNCNT)", val, maxSynCnt)
		}
	}
	e.cmMu.Lock()
	defer e.cmMu.Unlock()
	if s := e.cs.State(); s != ep.CMIdle {
		if s == ep.CMClosed {
			return stateErr("setopt", s)
		}
		return errors.Wrapf(fi.EOPBADSTATE, "tcp: setopt: %s applies to Connect, before it; the endpoint is %s", optString(level, name), s)
	}
	if name == ep.OptConnTimeout {
		e.connTimeout = d
	} else {
		e.connRetries = val
	}
	return nil
}

// GetOpt reads an endpoint option (fi_getopt): at ep.OptLevelEndpoint
// FI_OPT_CM_DATA_SIZE (256, as C's tcp); at ep.OptLevelCM the connect
// timeout in milliseconds and the SYN retries in effect (the set values,
// else FI_TCP_CONN_TIMEOUT's and the kernel's net.ipv4.tcp_syn_retries),
// and the connection state (ep.OptConnState, an ep.CMState, as CMState
// returns). Other options give fi.ENOPROTOOPT, as SetOpt says; every
// option gives fi.EBADF once closed (CMState still answers
// ep.CMClosed).
func (e *endpoint) GetOpt(level ep.OptLevel, name ep.OptName) (int, error) {
	if err := msgOptKnown("getopt", level, name); err != nil {
		return 0, err
	}
	s := e.cs.State()
	if s == ep.CMClosed {
		return 0, stateErr("getopt", s)
	}
	if level == ep.OptLevelEndpoint {
		return cmMaxDataSize, nil
	}
	e.cmMu.Lock()
	defer e.cmMu.Unlock()
	switch name {
	case ep.OptConnTimeout:
		return int(e.connTimeoutLocked() / time.Millisecond), nil
	case ep.OptConnRetries:
		if e.connRetries > 0 {
			return e.connRetries, nil
		}
		return defaultSynRetries(), nil
	}
	return int(s), nil
}

// msgOptKnown returns fi.ENOPROTOOPT, with the reason, for an option an
// MSG endpoint does not have.
func msgOptKnown(call string, level ep.OptLevel, name ep.OptName) error {
	switch level {
	case ep.OptLevelEndpoint:
		if name == ep.OptCMDataSize {
			return nil
		}
		return errors.Wrapf(fi.ENOPROTOOPT, "tcp: %s: %s not supported (tcp's MSG endpoints have FI_OPT_CM_DATA_SIZE)", call, optString(level, name))
	case ep.OptLevelCM:
		switch name {
		case ep.OptConnTimeout, ep.OptConnRetries, ep.OptConnState:
			return nil
		}
		return errors.Wrapf(fi.ENOPROTOOPT, "tcp: %s: %s not supported", call, optString(level, name))
	}
	return errors.Wrapf(fi.ENOPROTOOPT, "tcp: %s: option level %d unknown (FI_OPT_ENDPOINT and ep.OptLevelCM are)", call, level)
}

// optString names an option in error messages.
func optString(level ep.OptLevel, name ep.OptName) string {
	switch level {
	case ep.OptLevelEndpoint:
		names := [...]string{"FI_OPT_MIN_MULTI_RECV", "FI_OPT_CM_DATA_SIZE", "FI_OPT_BUFFERED_MIN",
			"FI_OPT_BUFFERED_LIMIT", "FI_OPT_SEND_BUF_SIZE", "FI_OPT_RECV_BUF_SIZE", "FI_OPT_TX_SIZE", "FI_OPT_RX_SIZE"}
		if name >= 0 && int(name) < len(names) {
			return names[name]
		}
		return "FI_OPT_ENDPOINT option " + strconv.Itoa(int(name))
	case ep.OptLevelCM:
		switch name {
		case ep.OptConnTimeout:
			return "OptConnTimeout"
		case ep.OptConnRetries:
			return "OptConnRetries"
		case ep.OptConnState:
			return "OptConnState"
		}
		return "OptLevelCM option " + strconv.Itoa(int(name))
	}
	return "level " + strconv.Itoa(int(level)) + " option " + strconv.Itoa(int(name))
}

// CMState returns the passive endpoint's state (ep.Stater): ep.CMIdle
// until Listen, ep.CMListening, ep.CMClosed.
func (p *passiveEP) CMState() ep.CMState { return p.Backlog.State() }

// GetOpt reads a passive endpoint's option (fi_getopt on a fid_pep):
// FI_OPT_CM_DATA_SIZE at ep.OptLevelEndpoint, 256, the most private data
// a request to it and its accept or reject carry, as C's tcp answers
// (tcpx_pep_getopt); and ep.OptConnState at ep.OptLevelCM, as CMState.
// Every other option gives fi.ENOPROTOOPT; fi.EBADF once closed.
func (p *passiveEP) GetOpt(level ep.OptLevel, name ep.OptName) (int, error) {
	if err := pepOptKnown("getopt", level, name); err != nil {
		return 0, err
	}
	s := p.Backlog.State()
	if s == ep.CMClosed {
		return 0, errors.Wrap(fi.EBADF, "tcp: passive endpoint: getopt: closed")
	}
	if level == ep.OptLevelEndpoint {
		return cmMaxDataSize, nil
	}
	return int(s), nil
}

// SetOpt refuses every option of a passive endpoint with fi.ENOPROTOOPT:
// its two (GetOpt's) are read-only. (C's tcp has no fi_setopt on passive
// endpoints: FI_ENOSYS.)
func (p *passiveEP) SetOpt(level ep.OptLevel, name ep.OptName, val int) error {
	if err := pepOptKnown("setopt", level, name); err != nil {
		return err
	}
	return errors.Wrapf(fi.ENOPROTOOPT, "tcp: passive endpoint: setopt: %s is read-only", optString(level, name))
}

// pepOptKnown returns fi.ENOPROTOOPT, with the reason, for an option a
// passive endpoint does not have.
func pepOptKnown(call string, level ep.OptLevel, name ep.OptName) error {
	if (level == ep.OptLevelEndpoint && name == ep.OptCMDataSize) || (level == ep.OptLevelCM && name == ep.OptConnState) {
		return nil
	}
	return errors.Wrapf(fi.ENOPROTOOPT, "tcp: passive endpoint: %s: %s not supported (passive endpoints have FI_OPT_CM_DATA_SIZE and OptConnState)", call, optString(level, name))
}

package rxm

import (
	"math"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// paramProv is the provider name of the parameters, C's: they read
// FI_OFI_RXM_*.
const paramProv = "ofi_rxm"

// The parameters rxm reads (fi_param_define(3)), C ofi_rxm's names; fi_info
// -e lists them in a program that links this package. The first six are
// honoured; of the others, which tune C's implementation, two are refused
// when set to the C feature gofabric lacks (offered), and the rest are
// accepted and have no effect (ignored).
var (
	paramBufferSize = define("buffer_size", fi.ParamSize, "Bytes of payload an eager message carries: larger messages go by rendezvous; also the inject size when the core provider requires registered buffers. Both sides of a connection must use the same value (default: 16384)")
	paramTxSize     = define("tx_size", fi.ParamSize, "Transmit queue depth of RDM endpoints when hints ask for none, and the deepest they may ask for (default: 2048, at most 16384)")
	paramRxSize     = define("rx_size", fi.ParamSize, "Receive queue depth of RDM endpoints when hints ask for none, and the deepest they may ask for (default: 2048, at most 65536)")
	paramMsgTxSize  = define("msg_tx_size", fi.ParamSize, "Transmit queue depth asked of each connection's FI_EP_MSG endpoint of the core provider (default: 128)")
	paramMsgRxSize  = define("msg_rx_size", fi.ParamSize, "Receive queue depth asked of each connection's FI_EP_MSG endpoint of the core provider (default: 128)")
	paramSARLimit   = define("sar_limit", fi.ParamSize, "Largest message sent in segments of buffer_size bytes rather than by rendezvous, over core providers that cannot place a message's payload where its header says (default: 8 times buffer_size)")

	// offered are the switches of C features gofabric's rxm lacks: set,
	// rxm offers nothing, for this reason.
	offered = []struct {
		param  *fi.Param
		reason string
	}{
		{define("use_rndv_write", fi.ParamBool, "C's rendezvous by RMA write; gofabric's rxm offers nothing when it is set (default: no)"),
			"the rendezvous by RMA write is not implemented (gofabric's rxm reads, as C does by default)"},
		{define("enable_passthru", fi.ParamBool, "C's pass-through of data calls to the core provider; gofabric's rxm offers nothing when it is set (default: no)"),
			"the pass-through of data calls to the core provider is not implemented"},
	}
)

// ignored are C's parameters that have no effect in gofabric.
var _ = func() []*fi.Param {
	var ps []*fi.Param
	for _, p := range [...]struct {
		name, help string
		typ        fi.ParamType
	}{
		{"eager_limit", "C's eager limit over tcp when it differs from buffer_size; gofabric uses buffer_size (default: buffer_size)", fi.ParamSize},
		{"comp_per_progress", "C's number of core completions read per progress call; no effect in gofabric (default: 1)", fi.ParamInt},
		{"use_srx", "C's shared receive context on the core provider; gofabric's core providers have none, so no effect (default: no)", fi.ParamBool},
		{"cm_progress_interval", "C's microseconds between connection-management progress calls; gofabric reads its connections' events every 10000 microseconds, at every progress while a connection is being set up, and accepts peers at once; no effect (default: 10000)", fi.ParamInt},
		{"cq_eq_fairness", "C's count of core completions read before connection events are looked at; no effect in gofabric (default: 128)", fi.ParamInt},
		{"data_auto_progress", "C's forced automatic data progress; no effect in gofabric, whose RDM endpoints progress manually (default: no)", fi.ParamBool},
		{"enable_dyn_rbuf", "C's placement of a message's payload by the core provider after reading its header; gofabric uses it whenever the core offers it (tcp) and its core needs no registered buffers; no effect (default: yes)", fi.ParamBool},
		{"enable_direct_send", "C's sends straight from the application's buffers; no effect in gofabric yet (default: yes)", fi.ParamBool},
		{"def_wait_obj", "C's wait object for blocking reads, fd or pollfd; no effect in gofabric (default: fd)", fi.ParamString},
		{"def_tcp_wait_obj", "C's def_wait_obj over the tcp provider; no effect in gofabric (default: unset)", fi.ParamString},
	} {
		ps = append(ps, define(p.name, p.typ, p.help))
	}
	return ps
}()

// define defines rxm's parameter name (FI_OFI_RXM_<NAME>).
func define(name string, typ fi.ParamType, help string) *fi.Param {
	return fi.DefineParam(paramProv, name, typ, help)
}

// Defaults and bounds of the parameters (C's).
const (
	defBufferSize = 16384 // eager limit and bounce-path inject size
	defQueueSize  = 2048  // tx_attr.size and rx_attr.size when hints ask none
	maxTxSize     = 16384 // deepest transmit queue hints may ask for
	maxRxSize     = 65536 // deepest receive queue hints may ask for
	defMsgSize    = 128   // core endpoints' tx and rx size (no shared receive context)
	sarSegments   = 8     // sar_limit's default in buffer_size units
	// minBufferSize is the smallest buffer_size: an eager buffer must hold
	// a rendezvous request's descriptor (C raises smaller values to it).
	minBufferSize = 104
)

// params are rxm's settings, read from the environment when GetInfo runs
// and when a fabric opens; a fabric keeps the values it opened with.
type params struct {
	// bufferSize is the eager limit (FI_OFI_RXM_BUFFER_SIZE).
	bufferSize int
	// defTx and defRx are the queue depths entries report when hints ask
	// none; maxTx and maxRx the deepest hints may ask for
	// (FI_OFI_RXM_TX_SIZE, FI_OFI_RXM_RX_SIZE: set, they are both).
	defTx, defRx, maxTx, maxRx int
	// msgTx and msgRx are the queue depths asked of core endpoints
	// (FI_OFI_RXM_MSG_TX_SIZE, FI_OFI_RXM_MSG_RX_SIZE).
	msgTx, msgRx int
	// sarLimit is the largest message sent in segments
	// (FI_OFI_RXM_SAR_LIMIT).
	sarLimit int
	// declined says why rxm offers nothing under these settings (a C
	// feature asked for that gofabric lacks), "" when it offers.
	declined string
}

// loadParams reads rxm's environment variables. A value that is not a
// number, or out of range, gives fi.EINVAL with the variable's name.
func loadParams() (params, error) {
	p := params{bufferSize: defBufferSize, defTx: defQueueSize, defRx: defQueueSize, maxTx: maxTxSize, maxRx: maxRxSize,
		msgTx: defMsgSize, msgRx: defMsgSize}
	for _, s := range []struct {
		param   *fi.Param
		dst     []*int
		lo, max int
	}{
		{paramBufferSize, []*int{&p.bufferSize}, minBufferSize, math.MaxInt32},
		{paramTxSize, []*int{&p.defTx, &p.maxTx}, 1, math.MaxInt32},
		{paramRxSize, []*int{&p.defRx, &p.maxRx}, 1, math.MaxInt32},
		{paramMsgTxSize, []*int{&p.msgTx}, 1, math.MaxInt32},
		{paramMsgRxSize, []*int{&p.msgRx}, 1, math.MaxInt32},
		{paramSARLimit, []*int{&p.sarLimit}, 1, math.MaxInt},
	} {
		n, set, err := sizeParam(s.param, s.lo, s.max)
		if err != nil {
			return params{}, err
		}
		for _, d := range s.dst {
			if set {
				*d = n
			}
		}
	}
	if p.sarLimit == 0 {
		p.sarLimit = sarSegments * p.bufferSize
	}
	for _, o := range offered {
		on, err := o.param.Bool()
		switch {
		case fi.Code(err) == fi.ENODATA:
		case err != nil:
			return params{}, errors.Wrap(err, "ofi_rxm: params")
		case on && p.declined == "":
			p.declined = o.param.Name + " is set: " + o.reason
		}
	}
	return p, nil
}

// sizeParam reads a size parameter: its value and whether it is set
// (unset, or 0 as in C, is not set); a value outside [lo, hi] gives
// fi.EINVAL.
func sizeParam(p *fi.Param, lo, hi int) (int, bool, error) {
	v, err := p.Size()
	if fi.Code(err) == fi.ENODATA || err == nil && v == 0 {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, errors.Wrap(err, "ofi_rxm: params")
	}
	if v < uint64(lo) || v > uint64(hi) {
		return 0, false, errors.Wrapf(fi.EINVAL, "ofi_rxm: params: %s=%d is outside [%d, %d]", p.Name, v, lo, hi)
	}
	return int(v), true, nil
}

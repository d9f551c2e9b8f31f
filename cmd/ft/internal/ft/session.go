package ft

import (
	"context"
	"io"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// defaultLimit bounds every wait for a peer that has been heard from when
// the program has no timeout of its own (C's waits forever there): a peer
// that stops answering makes ft fail after this long, never hang.
const defaultLimit = 60 * time.Second

// opContext is the context of a posted operation; passing a pointer to a
// Session field costs no allocation.
type opContext struct{ name string }

// Session is one run of a fabtests program: what common/shared.c keeps in
// globals (opts, hints, fi, fabric, eq, domain, pep, ep, the CQs,
// counters and AV, the buffers and their MR, remote_fi_addr, the
// sequence numbers tx_seq/rx_seq and the completion counts
// tx_cq_cntr/rx_cq_cntr), with the functions of shared.c as methods
// named after them. A Session is used by one goroutine.
type Session struct {
	prog           *program
	opts           Options
	hints          *fi.Info
	stdout, stderr io.Writer
	ctx            context.Context

	info    *fi.Info // fi: the endpoint's Info
	pepInfo *fi.Info // fi_pep: the passive endpoint's Info
	fabric  fi.Fabric
	eq      eq.EventQueue
	domain  fi.Domain
	pep     ep.PassiveEndpoint
	ep      ep.Endpoint
	msg     ep.Msg    // ep's messages, when it has them
	tagged  ep.Tagged // ep's tagged messages, when it has them
	cm      ep.CM     // ep's connection management (FI_EP_MSG)
	txcq    eq.CompletionQueue
	rxcq    eq.CompletionQueue
	txcntr  eq.Counter
	rxcntr  eq.Counter
	av      fi.AV
	mr      fi.MR // the MR over buf, nil when the domain needs none
	mrDesc  any

	// cqFormat is the CQ format; FormatUnspec picks one by the caps
	// (ft_alloc_ep_res).
	cqFormat eq.CQFormat

	// remote is remote_fi_addr, the peer in the AV.
	remote fi.Addr
	// buf holds the receive region (rxBuf) then the transmit region
	// (txBuf), both at least maxCtrlMsg long; a payload of n bytes sits
	// after the provider's message prefix: txBuf[txPrefix:][:n].
	buf, rxBuf, txBuf  []byte
	txSize, rxSize     int // tx_size, rx_size: the largest message, prefix included
	txPrefix, rxPrefix int // FI_MSG_PREFIX bytes, 0 without the mode

	// The sequence numbers: operations posted (tx_seq, rx_seq; tags come
	// from them) and completions seen (tx_cq_cntr, rx_cq_cntr).
	txSeq, rxSeq, txCQCntr, rxCQCntr uint64

	txCtx, rxCtx opContext
	comp         [1]eq.Completion
	fin          ep.Message
	tfin         ep.TaggedMessage

	// lastRxLen is the payload length of the last receive completion,
	// anyLength when it came through a counter.
	lastRxLen int
	// ftTag is ft_tag: when not 0, the tag of every tagged operation
	// instead of the sequence numbers.
	ftTag uint64

	// waitCtx, canceled by waitTimer, bounds blocking waits (arm, disarm).
	waitCtx    context.Context
	waitCancel context.CancelFunc
	waitTimer  *time.Timer

	oob *oobSock // the out-of-band socket, nil when none

	// contact says the peer has been heard from: before that a server
	// waits for its client as long as it takes (as C does); after it,
	// every wait is bounded (limit).
	contact bool

	startTime, endTime time.Time
	headerShown        bool // show_perf's header is out

	// local is the program's own state, such as the options only it
	// takes: set by its init, read by its parse and run (nil when it has
	// none).
	local any
}

// newSession returns a Session with INIT_OPTS, empty hints (fi_allocinfo)
// and C's default timeout.
func newSession(p *program, argv []string, stdout, stderr io.Writer) *Session {
	s := &Session{
		prog:   p,
		opts:   defaultOptions(),
		hints:  (*fi.Info)(nil).Clone(),
		stdout: stdout,
		stderr: stderr,
		ctx:    context.Background(),
		remote: fi.AddrUnspec,
		txCtx:  opContext{"tx"},
		rxCtx:  opContext{"rx"},
	}
	s.opts.Argv = argv
	return s
}

// rxTimeout is how long a wait for receive completions may go without
// one: the program's timeout (--timeout, dgram_pingpong's -T and its
// default of 5 s), else defaultLimit once the peer has been heard from,
// else none (0).
func (s *Session) rxTimeout() time.Duration {
	if s.opts.Timeout >= 0 {
		return time.Duration(s.opts.Timeout) * time.Second
	}
	if s.contact {
		return defaultLimit
	}
	return 0
}

// limit bounds the other waits for the peer (transmit completions, the
// out-of-band socket, connection events), where C waits forever: the
// program's timeout when it has a positive one, else defaultLimit once
// the peer has been heard from, else none (0).
func (s *Session) limit() time.Duration {
	if s.opts.Timeout > 0 {
		return time.Duration(s.opts.Timeout) * time.Second
	}
	if s.contact {
		return defaultLimit
	}
	return 0
}

// forceProgress drives the provider while the program waits on something
// else (ft_force_progress): a read of no entries from each CQ.
func (s *Session) forceProgress() {
	if s.txcq != nil {
		_, _ = s.txcq.Read(nil)
	}
	if s.rxcq != nil {
		_, _ = s.rxcq.Read(nil)
	}
}

// maxMsgSize is the endpoint's max_msg_size (ep_attr), unbounded when the
// provider gives none.
func (s *Session) maxMsgSize() int {
	if s.info == nil || s.info.EPAttr == nil || s.info.EPAttr.MaxMsgSize <= 0 {
		return int(^uint(0) >> 1)
	}
	return s.info.EPAttr.MaxMsgSize
}

// close releases everything the run opened, children before parents
// (ft_free_res, ft_close_fids), and returns the first error.
func (s *Session) close() error {
	var first error
	keep := func(err error) {
		if first == nil && err != nil {
			first = err
		}
	}
	if s.waitTimer != nil {
		s.waitTimer.Stop()
		s.waitCancel()
	}
	if s.oob != nil {
		keep(s.oob.close())
		s.oob = nil
	}
	if s.rxcq == s.txcq {
		s.rxcq = nil // a shared CQ closes once
	}
	keep(closeFids(s.ep, s.pep, s.rxcq, s.txcq, s.rxcntr, s.txcntr, s.mr, s.av, s.domain, s.eq, s.fabric))
	s.ep, s.pep, s.rxcq, s.txcq, s.rxcntr, s.txcntr, s.mr, s.av, s.domain, s.eq, s.fabric = nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil
	return first
}

// closeFids closes each object in order, skipping nil ones (nil interface
// fields convert to nil fi.Fid values), and returns the first error.
func closeFids(fids ...fi.Fid) error {
	var first error
	for _, f := range fids {
		if f == nil {
			continue
		}
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

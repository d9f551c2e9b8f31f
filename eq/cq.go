package eq

import (
	"context"
	"fmt"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// CQFormat is a completion format (enum fi_cq_format): which fields of a
// Completion a queue fills.
type CQFormat int

// Completion formats.
const (
	FormatUnspec  CQFormat = iota // FI_CQ_FORMAT_UNSPEC
	FormatContext                 // FI_CQ_FORMAT_CONTEXT: Context
	FormatMsg                     // FI_CQ_FORMAT_MSG: Context, Flags, Len
	FormatData                    // FI_CQ_FORMAT_DATA: ... Buf, Data
	FormatTagged                  // FI_CQ_FORMAT_TAGGED: ... Tag
)

var formatNames = [...]string{"FI_CQ_FORMAT_UNSPEC", "FI_CQ_FORMAT_CONTEXT",
	"FI_CQ_FORMAT_MSG", "FI_CQ_FORMAT_DATA", "FI_CQ_FORMAT_TAGGED"}

// String returns libfabric's name of the format.
func (f CQFormat) String() string {
	if f >= 0 && int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Unknown (%d)", int(f))
}

// WaitCond mirrors enum fi_cq_wait_cond.
type WaitCond int

// Wait conditions.
const (
	CondNone      WaitCond = iota // FI_CQ_COND_NONE
	CondThreshold                 // FI_CQ_COND_THRESHOLD
)

// CQAttr mirrors struct fi_cq_attr.
type CQAttr struct {
	// Size is the queue's capacity in entries; zero lets the provider
	// choose.
	Size   int
	Flags  fi.Flags
	Format CQFormat
	// WaitObj is the wait object: fi.WaitNone for SRead only,
	// fi.WaitFD for a descriptor to poll as well (FDWaiter), made at
	// open; fi.WaitUnspec makes it at the first WaitFD or TryWait;
	// fi.WaitSet puts the queue into WaitSet (FI_WAIT_SET).
	WaitObj fi.WaitObj
	// WaitSet is the wait set the queue joins when WaitObj is fi.WaitSet
	// (fi_cq_attr.wait_set); ignored otherwise. OpenCQ adds it to the set
	// and asks the provider for an fi.WaitFD object.
	WaitSet         *WaitSet
	SignalingVector int
	WaitCond        WaitCond
}

// Completion is a completion entry. It holds the fields of
// fi_cq_tagged_entry; a queue fills those of its format and leaves the
// others zero.
type Completion struct {
	// Context is the context passed to the operation.
	Context any
	// Flags describe the operation (fi.FlagSend, fi.FlagRecv, fi.FlagMsg,
	// fi.FlagRemoteCQData...).
	Flags fi.Flags
	// Len is the number of bytes transferred.
	Len int
	// Buf is the received data inside the posted buffer (FI_MULTI_RECV;
	// fi_cq_data_entry's buf): a slice of that buffer, so that
	// cap(posted)-cap(Buf) is where the message landed. Nil for other
	// receives.
	Buf []byte
	// Data is the remote CQ data when Flags has fi.FlagRemoteCQData.
	Data uint64
	// Tag is the message tag of tagged receives.
	Tag uint64
}

// CQError is an error completion (struct fi_cq_err_entry), returned by
// CompletionQueue.ReadErr after Read reported fi.EAVAIL. It unwraps to Err.
type CQError struct {
	Context any
	Flags   fi.Flags
	Len     int
	Buf     []byte
	Data    uint64
	Tag     uint64
	// OLen is the length of data lost to truncation (fi.ETRUNC).
	OLen int
	// Err is the error code (fi_cq_err_entry.err).
	Err fi.Errno
	// ProvErrno is the provider's own error number, 0 if none.
	ProvErrno int
	// ErrData is provider data about the error.
	ErrData []byte
	// SrcAddr is the source when FI_SOURCE_ERR is set and the source is not
	// in the AV.
	SrcAddr []byte
}

// Error returns the error's text.
func (e *CQError) Error() string {
	if e.ProvErrno != 0 {
		return fmt.Sprintf("cq error: %v (prov_errno %d)", e.Err, e.ProvErrno)
	}
	return "cq error: " + e.Err.Error()
}

// Unwrap returns Err.
func (e *CQError) Unwrap() error { return e.Err }

// CompletionQueue is a completion queue (struct fid_cq; fi_cq(3)).
//
// All methods are safe for concurrent use. Read, ReadFrom and ReadErr never
// block and do not allocate; with manual progress they also drive the
// provider's progress. SRead blocks until at least one completion, an error
// entry, the context's end, or Close.
type CompletionQueue interface {
	fi.Fid
	// Read fills entries with up to len(entries) completions and returns
	// how many (fi_cq_read). It returns bare fi.EAGAIN when there are none
	// and bare fi.EAVAIL when the next entry is an error.
	Read(entries []Completion) (int, error)
	// ReadFrom is Read that also reports each completion's source address
	// in src (fi_cq_readfrom); src must be at least as long as entries.
	// Sources not known are fi.AddrUnspec.
	ReadFrom(entries []Completion, src []fi.Addr) (int, error)
	// ReadErr removes and returns the next error entry (fi_cq_readerr), or
	// bare fi.EAGAIN when none is at the head.
	ReadErr() (*CQError, error)
	// SRead is the blocking Read (fi_cq_sread); it returns
	// fi.ContextError's error (context.DeadlineExceeded and fi.ETIMEDOUT,
	// or context.Canceled and fi.ECANCELED) when ctx ends first.
	SRead(ctx context.Context, entries []Completion) (int, error)
}

// SReadFromer is implemented by completion queues whose blocking read also
// reports sources: the Go form of fi_cq_sreadfrom(3), which is to SRead
// what ReadFrom is to Read. An application that blocks for receives on an
// endpoint with FI_SOURCE needs it: SRead consumes the entries it returns
// and their sources with them. The framework's queue (kit.CQ) implements
// it, so every provider built on the kit has it.
type SReadFromer interface {
	// SReadFrom waits as SRead does and fills src[i] with the source of
	// entries[i] as ReadFrom does (fi_cq_sreadfrom); src must be at
	// least as long as entries (fi.EINVAL otherwise).
	SReadFrom(ctx context.Context, entries []Completion, src []fi.Addr) (int, error)
}

// SReadFrom is fi_cq_sreadfrom(3): q's SReadFrom, or an error with
// fi.ENOSYS in its chain when q has none (an application then polls
// ReadFrom instead).
func SReadFrom(ctx context.Context, q CompletionQueue, entries []Completion, src []fi.Addr) (int, error) {
	s, ok := q.(SReadFromer)
	if !ok {
		return 0, errors.Wrapf(fi.ENOSYS, "eq: cq sreadfrom: %T has no blocking ReadFrom", q)
	}
	return s.SReadFrom(ctx, entries, src)
}

// CQOpener is implemented by domains that open completion queues.
type CQOpener interface {
	OpenCQ(attr *CQAttr) (CompletionQueue, error)
}

// OpenCQ opens a completion queue on d (fi_cq_open). It returns ENOSYS when
// the domain has none. With WaitObj fi.WaitSet it does what OpenEQ does.
func OpenCQ(d fi.Domain, attr *CQAttr) (CompletionQueue, error) {
	o, ok := d.(CQOpener)
	if !ok {
		return nil, errors.Wrapf(fi.ENOSYS, "eq: open cq: domain %T has no completion queues", d)
	}
	if attr == nil {
		attr = &CQAttr{}
	}
	if attr.WaitObj != fi.WaitSet {
		return o.OpenCQ(attr)
	}
	a := *attr
	a.WaitObj, a.WaitSet = fi.WaitFD, nil
	return openInSet(attr.WaitSet, "cq", func() (CompletionQueue, error) { return o.OpenCQ(&a) })
}

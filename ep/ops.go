package ep

import "github.com/gofabric/gofabric/fi"

// Message describes a message operation (struct fi_msg), for SendMsg and
// RecvMsg. Reuse Message values: building one per call on the stack and
// passing it through an interface allocates.
type Message struct {
	IOV     [][]byte
	Desc    []any
	Addr    fi.Addr
	Context any
	Data    uint64
}

// TaggedMessage describes a tagged operation (struct fi_msg_tagged).
type TaggedMessage struct {
	IOV     [][]byte
	Desc    []any
	Addr    fi.Addr
	Tag     uint64
	Ignore  uint64
	Context any
	Data    uint64
}

// RMAIOV is a remote memory segment (struct fi_rma_iov).
type RMAIOV struct {
	Addr uint64
	Len  int
	Key  uint64
}

// RMAMessage describes an RMA operation (struct fi_msg_rma).
type RMAMessage struct {
	IOV     [][]byte
	Desc    []any
	Addr    fi.Addr
	RMAIOV  []RMAIOV
	Context any
	Data    uint64
}

// Msg is the message ability of an endpoint (fi_msg(3)). The desc
// arguments are MR descriptors (fi.MR.Desc) where the domain requires them
// (fi.MRModeLocal), else nil. For connected endpoints the address arguments
// are ignored (pass fi.AddrUnspec).
type Msg interface {
	// Recv posts a receive buffer (fi_recv).
	Recv(buf []byte, desc any, src fi.Addr, ctx any) error
	// RecvV posts a vectored receive (fi_recvv).
	RecvV(iov [][]byte, desc []any, src fi.Addr, ctx any) error
	// RecvMsg posts a receive with flags (fi_recvmsg).
	RecvMsg(msg *Message, flags fi.Flags) error
	// Send sends buf (fi_send).
	Send(buf []byte, desc any, dest fi.Addr, ctx any) error
	// SendV sends a vector (fi_sendv).
	SendV(iov [][]byte, desc []any, dest fi.Addr, ctx any) error
	// SendMsg sends with flags (fi_sendmsg).
	SendMsg(msg *Message, flags fi.Flags) error
	// Inject sends buf, which may be reused at once, with no completion
	// (fi_inject); len(buf) is at most the inject size.
	Inject(buf []byte, dest fi.Addr) error
	// SendData sends buf with remote CQ data (fi_senddata).
	SendData(buf []byte, desc any, data uint64, dest fi.Addr, ctx any) error
	// InjectData injects buf with remote CQ data (fi_injectdata).
	InjectData(buf []byte, data uint64, dest fi.Addr) error
}

// Tagged is the tagged-message ability of an endpoint (fi_tagged(3)).
type Tagged interface {
	// TRecv posts a tagged receive matching tag under the ignore mask
	// (fi_trecv).
	TRecv(buf []byte, desc any, src fi.Addr, tag, ignore uint64, ctx any) error
	// TRecvV posts a vectored tagged receive (fi_trecvv).
	TRecvV(iov [][]byte, desc []any, src fi.Addr, tag, ignore uint64, ctx any) error
	// TRecvMsg posts a tagged receive with flags (fi_trecvmsg).
	TRecvMsg(msg *TaggedMessage, flags fi.Flags) error
	// TSend sends a tagged message (fi_tsend).
	TSend(buf []byte, desc any, dest fi.Addr, tag uint64, ctx any) error
	// TSendV sends a vectored tagged message (fi_tsendv).
	TSendV(iov [][]byte, desc []any, dest fi.Addr, tag uint64, ctx any) error
	// TSendMsg sends a tagged message with flags (fi_tsendmsg).
	TSendMsg(msg *TaggedMessage, flags fi.Flags) error
	// TInject injects a tagged message (fi_tinject).
	TInject(buf []byte, dest fi.Addr, tag uint64) error
	// TSendData sends a tagged message with remote CQ data (fi_tsenddata).
	TSendData(buf []byte, desc any, data uint64, dest fi.Addr, tag uint64, ctx any) error
	// TInjectData injects a tagged message with remote CQ data
	// (fi_tinjectdata).
	TInjectData(buf []byte, data uint64, dest fi.Addr, tag uint64) error
}

// RMA is the remote memory access ability of an endpoint (fi_rma(3)).
// addr is the remote address (an offset, or a virtual address under
// fi.MRModeVirtAddr) and key the remote MR key.
type RMA interface {
	// Read reads remote memory into buf (fi_read).
	Read(buf []byte, desc any, src fi.Addr, addr, key uint64, ctx any) error
	// ReadV is the vectored Read (fi_readv).
	ReadV(iov [][]byte, desc []any, src fi.Addr, addr, key uint64, ctx any) error
	// ReadMsg reads with flags (fi_readmsg).
	ReadMsg(msg *RMAMessage, flags fi.Flags) error
	// Write writes buf to remote memory (fi_write).
	Write(buf []byte, desc any, dest fi.Addr, addr, key uint64, ctx any) error
	// WriteV is the vectored Write (fi_writev).
	WriteV(iov [][]byte, desc []any, dest fi.Addr, addr, key uint64, ctx any) error
	// WriteMsg writes with flags (fi_writemsg).
	WriteMsg(msg *RMAMessage, flags fi.Flags) error
	// InjectWrite writes buf with no completion (fi_inject_write).
	InjectWrite(buf []byte, dest fi.Addr, addr, key uint64) error
	// WriteData writes with remote CQ data (fi_writedata).
	WriteData(buf []byte, desc any, data uint64, dest fi.Addr, addr, key uint64, ctx any) error
	// InjectWriteData injects a write with remote CQ data
	// (fi_inject_writedata).
	InjectWriteData(buf []byte, data uint64, dest fi.Addr, addr, key uint64) error
}

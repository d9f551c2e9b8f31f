//go:build verbs && cgo

package verbs

import (
	"syscall"

	"github.com/gofabric/gofabric/fi"
)

// sendOp is a send work request's opcode (enum ibv_wr_opcode).
type sendOp int

// sendWR is one send work request of one SGE (struct ibv_send_wr): n
// bytes at off in mr; for RDMA operations, the peer's address and rkey.
type sendWR struct {
	op     sendOp
	wrID   uint64
	mr     *mr
	off, n int
	imm    uint32 // host order, for the *WithImm opcodes
	raddr  uint64
	rkey   uint32
}

// postRecv posts a receive into n bytes at off in m (ibv_post_recv, one
// SGE), without allocating: fi.EAGAIN when the receive queue is full.
func (q *qpRes) postRecv(wrID uint64, m *mr, off, n int) error {
	if err := m.span(off, n); err != nil {
		return err
	}
	return postErr("ibv_post_recv", postRecvC(q.qp, wrID, m.addr(off), uint32(n), m.lkey))
}

// postSend posts wr, signaled, inline when it is a write or send that fits
// the QP's max_inline_data (ibv_post_send), without allocating: fi.EAGAIN
// when the send queue is full.
func (q *qpRes) postSend(wr sendWR) error {
	if err := wr.mr.span(wr.off, wr.n); err != nil {
		return err
	}
	flags := 0
	if wr.op != opRead && wr.n <= q.maxInline {
		flags = sendInline
	}
	return postErr("ibv_post_send", postSendC(q.qp, wr.op, flags, wr.wrID, wr.mr.addr(wr.off), uint32(wr.n),
		wr.mr.lkey, wr.imm, wr.raddr, wr.rkey))
}

// postErr maps a post's errno: ENOMEM (queue full) is a bare fi.EAGAIN.
func postErr(op string, e syscall.Errno) error {
	switch e {
	case 0:
		return nil
	case syscall.ENOMEM:
		return fi.EAGAIN
	}
	return errnoErr(op, e)
}

// slotTable maps the wr_id of a work request (ibv_send_wr, ibv_recv_wr,
// ibv_wc) to its Go-side context: a fixed array of slots with a free list,
// so that C keeps no Go pointer and a post allocates nothing. A wr_id is
// the slot's generation<<32 | its index, so a stale one is refused. Not
// safe for concurrent use.
type slotTable[T any] struct {
	slots []slot[T]
	free  []uint32 // a stack of free indices
}

type slot[T any] struct {
	v    T
	gen  uint32
	used bool
}

// newSlotTable makes a table of n slots.
func newSlotTable[T any](n int) *slotTable[T] {
	s := &slotTable[T]{slots: make([]slot[T], n), free: make([]uint32, n)}
	for i := range s.free {
		s.free[i] = uint32(n - 1 - i)
	}
	return s
}

// put stores v in a free slot and returns its wr_id: fi.EAGAIN when none
// is free.
func (s *slotTable[T]) put(v T) (uint64, error) {
	if len(s.free) == 0 {
		return 0, fi.EAGAIN
	}
	i := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	sl := &s.slots[i]
	sl.gen = (sl.gen + 1) & genMask
	sl.v, sl.used = v, true
	return uint64(sl.gen)<<32 | uint64(i), nil
}

// take returns the context of wrID and frees its slot; false when wrID
// names no slot in use.
func (s *slotTable[T]) take(wrID uint64) (T, bool) {
	var zero T
	i := uint32(wrID)
	if int(i) >= len(s.slots) || !s.slots[i].used || s.slots[i].gen != uint32(wrID>>32)&genMask {
		return zero, false
	}
	sl := &s.slots[i]
	v := sl.v
	sl.v, sl.used = zero, false
	s.free = append(s.free, i)
	return v, true
}

// genMask keeps generations to 31 bits, so that bit 63 of a wr_id is
// free for the caller (data.go marks receives with it).
const genMask = 1<<31 - 1

// drain frees every slot in use and calls f with its context, in index
// order.
func (s *slotTable[T]) drain(f func(T)) {
	var zero T
	for i := range s.slots {
		sl := &s.slots[i]
		if !sl.used {
			continue
		}
		v := sl.v
		sl.v, sl.used = zero, false
		s.free = append(s.free, uint32(i))
		f(v)
	}
}

// inUse is how many slots are taken.
func (s *slotTable[T]) inUse() int { return len(s.slots) - len(s.free) }

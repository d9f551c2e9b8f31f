//go:build linux

package shm_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Multi-receive buffers (FI_MULTI_RECV, fi_msg(3)) as C 1.17's shm has
// them: messages fill one buffer one after the other, each with its own
// completion saying where it landed (Buf) and how long it is; once the
// space left is below FI_OPT_MIN_MULTI_RECV an entry of its own, flagged
// FI_MULTI_RECV with length 0, releases the buffer; a message larger
// than the space left takes that space and completes with fi.ETRUNC;
// fi_cancel releases the buffer with fi.ECANCELED and FI_MULTI_RECV.

// postMulti posts buf as a multi-receive buffer with context ctx
// (fi_recvmsg with FI_MULTI_RECV).
func postMulti(n *node, buf []byte, ctx any) error {
	return n.ep.(ep.Msg).RecvMsg(&ep.Message{IOV: [][]byte{buf}, Addr: fi.AddrUnspec, Context: ctx}, fi.FlagMultiRecv)
}

// setMin sets n's FI_OPT_MIN_MULTI_RECV.
func setMin(t testing.TB, n *node, min int) {
	t.Helper()
	require.NoError(t, ep.SetOpt(n.ep, ep.OptLevelEndpoint, ep.OptMinMultiRecv, min))
}

// nextEntry returns n's next completion or error entry, progressing the
// other nodes meanwhile; it fails after procWait.
func nextEntry(t testing.TB, n *node, all ...*node) entry {
	t.Helper()
	var c [1]eq.Completion
	deadline := time.Now().Add(procWait)
	for time.Now().Before(deadline) {
		for _, o := range all {
			if o != n {
				_, _ = o.cq.Read(nil)
			}
		}
		k, err := n.cq.Read(c[:])
		switch {
		case k == 1:
			return entry{c: c[0]}
		case err == fi.EAVAIL:
			e, rerr := n.cq.ReadErr()
			require.NoError(t, rerr)
			return entry{err: e}
		default:
			require.ErrorIs(t, err, fi.EAGAIN)
		}
	}
	t.Fatalf("no entry within %v", procWait)
	return entry{}
}

// offsetIn returns where part starts in the posted buffer buf: a part of
// a multi-receive buffer keeps the buffer's capacity.
func offsetIn(buf, part []byte) int { return cap(buf) - cap(part) }

// requirePart checks the completion of a message of want placed at off
// in the multi-receive buffer buf posted with ctx.
func requirePart(t testing.TB, e entry, buf []byte, ctx any, off int, want []byte) {
	t.Helper()
	require.Nil(t, e.err, "error entry")
	c := e.c
	require.Equal(t, ctx, c.Context)
	require.Equal(t, fi.FlagRecv|fi.FlagMsg, c.Flags, "a message's completion: %v", c.Flags)
	require.Equal(t, len(want), c.Len)
	require.Len(t, c.Buf, len(want), "Buf is the message")
	require.Equal(t, off, offsetIn(buf, c.Buf), "where the message landed")
	require.True(t, bytes.Equal(want, buf[off:off+len(want)]), "message at %d: %s", off, firstDiff(buf[off:off+len(want)], want))
}

// requireRelease checks the entry that releases the buffer posted with
// ctx: FI_MULTI_RECV alone, length 0, no buffer.
func requireRelease(t testing.TB, e entry, ctx any) {
	t.Helper()
	require.Nil(t, e.err, "error entry")
	require.Equal(t, eq.Completion{Context: ctx, Flags: fi.FlagMultiRecv}, e.c, "the release entry")
}

// pair opens a sender and a receiver in one process, the receiver in
// the sender's AV.
func pair(t testing.TB) (a, b *node, toB fi.Addr) {
	t.Helper()
	a, b = openNode(t), openNode(t)
	t.Cleanup(func() { a.close(t); b.close(t) })
	return a, b, a.insert(t, b.name)
}

// sendWait sends data from a to dest and waits for its completion,
// progressing b meanwhile.
func sendWait(t testing.TB, a, b *node, dest fi.Addr, data []byte) {
	t.Helper()
	deadline := time.Now().Add(procWait)
	for {
		err := a.ep.(ep.Msg).Send(data, nil, dest, "send")
		if err == nil {
			break
		}
		require.ErrorIs(t, err, fi.EAGAIN)
		require.True(t, time.Now().Before(deadline))
		_, _ = a.cq.Read(nil)
		_, _ = b.cq.Read(nil)
	}
	e := nextEntry(t, a, b)
	require.Nil(t, e.err)
	require.Equal(t, "send", e.c.Context)
}

// TestMultiRecv checks multi-receive buffers between two endpoints of
// one process, inline (up to 192 bytes) and larger (cross-memory
// attach) messages alike.
func TestMultiRecv(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	t.Run("fill", func(t *testing.T) {
		// Minimum 100: after 10+0+192+300+250 bytes 248 are left;
		// 200 more leave 48 and release the buffer, after that
		// message's completion.
		a, b, toB := pair(t)
		setMin(t, b, 100)
		buf := make([]byte, 1000)
		require.NoError(t, postMulti(b, buf, "mr"))
		off := 0
		for i, n := range []int{10, 0, 192, 300, 250, 200} {
			data := pattern(make([]byte, n), i)
			sendWait(t, a, b, toB, data)
			requirePart(t, nextEntry(t, b, a), buf, "mr", off, data)
			off += n
		}
		requireRelease(t, nextEntry(t, b, a), "mr")
		// The buffer takes nothing more: the next message goes to the
		// next receive.
		next := make([]byte, 64)
		require.NoError(t, b.ep.(ep.Msg).Recv(next, nil, fi.AddrUnspec, "next"))
		sendWait(t, a, b, toB, []byte("after"))
		e := nextEntry(t, b, a)
		require.Nil(t, e.err)
		require.Equal(t, "next", e.c.Context)
		require.Equal(t, fi.FlagRecv|fi.FlagMsg, e.c.Flags)
		require.Nil(t, e.c.Buf, "an ordinary receive's completion has no Buf")
		require.Equal(t, "after", string(next[:e.c.Len]))
	})

	t.Run("larger-than-left", func(t *testing.T) {
		// As C: the message goes into the space left, truncated
		// (fi.ETRUNC), and the buffer is released; the next message
		// goes whole to the next receive.
		a, b, toB := pair(t)
		setMin(t, b, 100)
		buf := make([]byte, 500)
		require.NoError(t, postMulti(b, buf, "mr"))
		first := pattern(make([]byte, 300), 1)
		sendWait(t, a, b, toB, first)
		requirePart(t, nextEntry(t, b, a), buf, "mr", 0, first)
		big := pattern(make([]byte, 400), 2)
		sendWait(t, a, b, toB, big)
		e := nextEntry(t, b, a)
		require.NotNil(t, e.err, "the truncated message is an error entry")
		require.ErrorIs(t, e.err, fi.ETRUNC)
		require.Equal(t, "mr", e.err.Context)
		require.Equal(t, fi.FlagRecv|fi.FlagMsg, e.err.Flags)
		require.Equal(t, 200, e.err.Len, "the space left")
		require.Equal(t, 200, e.err.OLen, "what did not fit")
		require.Equal(t, 300, offsetIn(buf, e.err.Buf))
		require.Equal(t, big[:200], buf[300:])
		requireRelease(t, nextEntry(t, b, a), "mr")
		next := make([]byte, 400)
		require.NoError(t, b.ep.(ep.Msg).Recv(next, nil, fi.AddrUnspec, "next"))
		sendWait(t, a, b, toB, big)
		e = nextEntry(t, b, a)
		require.Nil(t, e.err)
		require.Equal(t, "next", e.c.Context)
		require.Equal(t, big, next[:e.c.Len])
	})

	t.Run("unexpected-then-posted", func(t *testing.T) {
		// Messages that arrived before the buffer go into it when it
		// is posted, in order, until it is full; the rest wait for
		// the next receive (here the buffer posted again).
		a, b, toB := pair(t)
		setMin(t, b, 64)
		var sent [][]byte
		for i := range 6 {
			data := pattern(make([]byte, 100+i), 10+i)
			sent = append(sent, data)
			sendWait(t, a, b, toB, data)
		}
		buf := make([]byte, 300) // 100+101 = 201, 99 left; +102 would leave none: truncated
		require.NoError(t, postMulti(b, buf, "mr1"))
		requirePart(t, nextEntry(t, b, a), buf, "mr1", 0, sent[0])
		requirePart(t, nextEntry(t, b, a), buf, "mr1", 100, sent[1])
		e := nextEntry(t, b, a)
		require.ErrorIs(t, e.err, fi.ETRUNC)
		require.Equal(t, 99, e.err.Len)
		requireRelease(t, nextEntry(t, b, a), "mr1")
		// A buffer posted again takes the rest: 103+104+105 bytes
		// leave 30, below the minimum.
		buf = make([]byte, 342)
		require.NoError(t, postMulti(b, buf, "mr2"))
		off := 0
		for _, data := range sent[3:] {
			requirePart(t, nextEntry(t, b, a), buf, "mr2", off, data)
			off += len(data)
		}
		requireRelease(t, nextEntry(t, b, a), "mr2")
	})

	t.Run("cancel", func(t *testing.T) {
		a, b, toB := pair(t)
		setMin(t, b, 16)
		buf := make([]byte, 256)
		require.NoError(t, postMulti(b, buf, "mr"))
		require.NoError(t, b.ep.Cancel("mr"))
		e := nextEntry(t, b, a)
		require.ErrorIs(t, e.err, fi.ECANCELED)
		require.Equal(t, "mr", e.err.Context)
		require.Equal(t, fi.FlagRecv|fi.FlagMsg|fi.FlagMultiRecv, e.err.Flags, "the cancellation releases the buffer")
		require.ErrorIs(t, b.ep.Cancel("mr"), fi.ENOENT)

		// With a message in it.
		require.NoError(t, postMulti(b, buf, "mr2"))
		sendWait(t, a, b, toB, []byte("one"))
		requirePart(t, nextEntry(t, b, a), buf, "mr2", 0, []byte("one"))
		require.NoError(t, b.ep.Cancel("mr2"))
		e = nextEntry(t, b, a)
		require.ErrorIs(t, e.err, fi.ECANCELED)
		require.Equal(t, fi.FlagRecv|fi.FlagMsg|fi.FlagMultiRecv, e.err.Flags)
		// Nothing more goes into it.
		next := make([]byte, 8)
		require.NoError(t, b.ep.(ep.Msg).Recv(next, nil, fi.AddrUnspec, "next"))
		sendWait(t, a, b, toB, []byte("two"))
		require.Equal(t, "next", nextEntry(t, b, a).c.Context)
	})

	t.Run("close-releases", func(t *testing.T) {
		// Close cancels a posted buffer as fi_cancel does.
		_, b, _ := pair(t)
		setMin(t, b, 16)
		require.NoError(t, postMulti(b, make([]byte, 64), "mr"))
		require.NoError(t, b.ep.Close())
		e := nextEntry(t, b)
		require.ErrorIs(t, e.err, fi.ECANCELED)
		require.Equal(t, fi.FlagRecv|fi.FlagMsg|fi.FlagMultiRecv, e.err.Flags)
		b.ep = closedEP{b.ep}
	})

	t.Run("rx-op-flag", func(t *testing.T) {
		// FI_MULTI_RECV as the rx_attr op_flags default: Recv posts a
		// multi-receive buffer; tagged receives go without it.
		infos, err := fi.GetInfo(context.Background(), "", "", 0, func() *fi.Info {
			h := shmHints()
			h.RxAttr.OpFlags = fi.FlagMultiRecv
			return h
		}())
		require.NoError(t, err)
		require.Equal(t, fi.FlagMultiRecv, infos[0].RxAttr.OpFlags)
		a := openNode(t)
		defer a.close(t)
		b := &node{fabric: a.fabric}
		b.domain, err = a.fabric.OpenDomain(infos[0])
		require.NoError(t, err)
		openEndpoint(t, b, infos[0])
		defer func() {
			require.NoError(t, b.ep.Close())
			require.NoError(t, b.cq.Close())
			require.NoError(t, b.av.Close())
			require.NoError(t, b.domain.Close())
		}()
		toB := a.insert(t, b.name)
		setMin(t, b, 8)
		buf := make([]byte, 64)
		require.NoError(t, b.ep.(ep.Msg).Recv(buf, nil, fi.AddrUnspec, "mr"))
		tbuf := make([]byte, 64)
		require.NoError(t, b.ep.(ep.Tagged).TRecv(tbuf, nil, fi.AddrUnspec, 5, 0, "tagged"))
		for i, s := range []string{"first", "second"} {
			sendWait(t, a, b, toB, []byte(s))
			requirePart(t, nextEntry(t, b, a), buf, "mr", i*len("first"), []byte(s))
		}
		for !sendOK(a.ep.(ep.Tagged).TSend([]byte("tag"), nil, toB, 5, "send")) {
			_, _ = b.cq.Read(nil)
		}
		e := nextEntry(t, b, a)
		require.Equal(t, "tagged", e.c.Context)
		require.Equal(t, fi.FlagRecv|fi.FlagTagged, e.c.Flags)
		require.Nil(t, e.c.Buf)
		require.Equal(t, "send", nextEntry(t, a, b).c.Context)
		require.ErrorIs(t, b.ep.Cancel("mr"), nil)
		require.ErrorIs(t, nextEntry(t, b, a).err, fi.ECANCELED)
	})

	t.Run("bad-input", func(t *testing.T) {
		_, b, _ := pair(t)
		// The default minimum is C's, 4096.
		v, err := ep.GetOpt(b.ep, ep.OptLevelEndpoint, ep.OptMinMultiRecv)
		require.NoError(t, err)
		require.Equal(t, 4096, v)
		err = postMulti(b, make([]byte, 100), "small")
		require.ErrorIs(t, err, fi.EINVAL)
		require.ErrorContains(t, err, "smaller than the minimum of 4096")
		require.ErrorIs(t, postMulti(b, nil, "empty"), fi.EINVAL)
		m := b.ep.(ep.Msg)
		err = m.RecvMsg(&ep.Message{IOV: [][]byte{make([]byte, 4096), make([]byte, 4096)}, Addr: fi.AddrUnspec}, fi.FlagMultiRecv)
		require.ErrorIs(t, err, fi.EINVAL, "two segments")
		err = b.ep.(ep.Tagged).TRecvMsg(&ep.TaggedMessage{IOV: [][]byte{make([]byte, 8192)}, Addr: fi.AddrUnspec}, fi.FlagMultiRecv)
		require.ErrorIs(t, err, fi.EINVAL, "tagged")
		require.ErrorContains(t, err, "untagged receives only")

		require.ErrorIs(t, ep.SetOpt(b.ep, ep.OptLevelEndpoint, ep.OptMinMultiRecv, -1), fi.EINVAL)
		for _, name := range []ep.OptName{ep.OptCMDataSize, ep.OptTxSize, ep.OptName(99)} {
			require.ErrorIs(t, ep.SetOpt(b.ep, ep.OptLevelEndpoint, name, 1), fi.ENOPROTOOPT, "%d", name)
			_, err := ep.GetOpt(b.ep, ep.OptLevelEndpoint, name)
			require.ErrorIs(t, err, fi.ENOPROTOOPT, "%d", name)
		}
		require.ErrorIs(t, ep.SetOpt(b.ep, ep.OptLevel(3), ep.OptMinMultiRecv, 1), fi.ENOPROTOOPT)
		setMin(t, b, 0)
		v, err = ep.GetOpt(b.ep, ep.OptLevelEndpoint, ep.OptMinMultiRecv)
		require.NoError(t, err)
		require.Zero(t, v)
		require.NoError(t, postMulti(b, make([]byte, 1), "tiny"), "a minimum of 0 takes any buffer")
	})
}

// closedEP stands for an endpoint a test closed itself: node.close
// closes it again without error.
type closedEP struct{ ep.Endpoint }

func (closedEP) Close() error { return nil }

func sendOK(err error) bool {
	if err != nil && err != fi.EAGAIN {
		panic(err)
	}
	return err == nil
}

// TestMultiRecvDoesNotAllocate: filling a multi-receive buffer with
// inline messages and larger ones (cross-memory attach, or the bounce
// chunks), its release and posting it again allocate nothing.
func TestMultiRecvDoesNotAllocate(t *testing.T) {
	for _, mode := range []string{"cma", "bounce"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "bounce" {
				t.Setenv("FI_SHM_DISABLE_CMA", "1")
			}
			a, b, toB := pair(t)
			setMin(t, b, 64)
			buf := make([]byte, 5*3100) // five pairs of messages, exactly: no truncation
			ctx := &struct{ int }{7}
			msg := &ep.Message{IOV: [][]byte{buf}, Addr: fi.AddrUnspec, Context: ctx}
			bm := b.ep.(ep.Msg)
			require.NoError(t, bm.RecvMsg(msg, fi.FlagMultiRecv))
			datas := [2][]byte{make([]byte, 100), make([]byte, 3000)}
			comp := make([]eq.Completion, 1)
			k, released := 0, 0
			round := func() {
				data := datas[k%2]
				k++
				for {
					err := a.ep.(ep.Msg).Send(data, nil, toB, ctx)
					if err == nil {
						break
					}
					if err != fi.EAGAIN {
						panic(err)
					}
					_, _ = b.cq.Read(nil)
				}
				got := 0
				for got < 2 {
					n, _ := a.cq.Read(comp)
					got += n
					n, err := b.cq.Read(comp)
					if err == fi.EAVAIL {
						e, _ := b.cq.ReadErr()
						panic(fmt.Sprintf("error entry %v", e))
					}
					if n == 0 {
						continue
					}
					got++
					if comp[0].Flags != fi.FlagRecv|fi.FlagMsg || comp[0].Len != len(data) {
						panic(fmt.Sprintf("completion %+v", comp[0]))
					}
					if n, _ := b.cq.Read(comp); n == 1 {
						if comp[0].Flags != fi.FlagMultiRecv {
							panic(fmt.Sprintf("completion %+v", comp[0]))
						}
						released++
						if err := bm.RecvMsg(msg, fi.FlagMultiRecv); err != nil {
							panic(err)
						}
					}
				}
			}
			round()
			round()
			require.Zero(t, testing.AllocsPerRun(200, round))
			require.Positive(t, released, "the buffer was released and posted again")
		})
	}
}

func init() {
	roles["mrsend"] = roleMRSend
}

// roleMRSend sends messages of the sizes envSizes lists, the i-th
// pattern(i), to envPeer, each once the previous one completed, and says
// "done" with their number.
func roleMRSend(t *testing.T) {
	x := openNode(t)
	defer x.close(t)
	peer := x.insert(t, []byte(os.Getenv(envPeer)))
	sizes := parseSizes(os.Getenv(envSizes))
	for i, n := range sizes {
		data := pattern(make([]byte, n), i)
		for {
			err := x.ep.(ep.Msg).Send(data, nil, peer, i)
			if err == nil {
				break
			}
			if err != fi.EAGAIN {
				say("fail", err.Error())
				return
			}
			_, _ = x.cq.Read(nil)
		}
		var c [1]eq.Completion
		for {
			k, err := x.cq.Read(c[:])
			if k == 1 {
				break
			}
			if err == fi.EAVAIL {
				e, _ := x.cq.ReadErr()
				say("fail", fmt.Sprintf("send %d: %v", i, e))
				return
			}
		}
	}
	say("done", strconv.Itoa(len(sizes)))
}

// mrPlace is where the model of a multi-receive buffer puts a message.
type mrPlace struct {
	buf, off, n int
	trunc       bool
	release     bool // the buffer is released after it
}

// placeAll models C's shm: buffers of size bufSize, minimum min, posted
// anew as soon as one is released.
func placeAll(sizes []int, bufSize, min int) []mrPlace {
	var out []mrPlace
	b, off := 0, 0
	for _, s := range sizes {
		left := bufSize - off
		n := s
		if n > left {
			n = left
		}
		p := mrPlace{buf: b, off: off, n: n, trunc: s > n}
		off += n
		if l := bufSize - off; l == 0 || l < min || p.trunc {
			p.release = true
			b, off = b+1, 0
		}
		out = append(out, p)
	}
	return out
}

// mrSizes are the sizes of the process test: inline ones, 0 included,
// and larger ones up to 6 KB (cross-memory attach, or the bounce
// chunks), some larger than the space a buffer has left.
func mrSizes() []int {
	var sizes []int
	x := uint32(12345)
	for range 300 {
		x = x*1103515245 + 12345
		switch r := int(x>>8) % 100; {
		case r < 5:
			sizes = append(sizes, 0)
		case r < 70:
			sizes = append(sizes, 1+int(x>>16)%192)
		default:
			sizes = append(sizes, 193+int(x>>12)%6000)
		}
	}
	return sizes
}

// TestMultiRecvFromProcess: another process sends 300 messages, inline,
// empty and up to 6 KB, to one multi-receive buffer of 16 KiB posted
// with a minimum of 1000 bytes set through SetOpt, posted again each
// time its release arrives (the messages that came meanwhile go into it
// at once). Every message's completion says where it landed and how
// long it is, and the bytes there are the payload; the release entries
// come exactly where the space left fell below the minimum, and
// messages larger than the space left are truncated there (fi.ETRUNC)
// and release the buffer. With cross-memory attach and without it
// (the bounce chunks), under -race, with no goroutine left behind.
func TestMultiRecvFromProcess(t *testing.T) {
	for _, mode := range []string{"cma", "bounce"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "bounce" {
				t.Setenv("FI_SHM_DISABLE_CMA", "1")
			}
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			const bufSize, min = 16 << 10, 1000
			b := openNode(t)
			defer b.close(t)
			setMin(t, b, min)
			sizes := mrSizes()
			want := placeAll(sizes, bufSize, min)
			truncs, belowMin := 0, 0
			for _, p := range want {
				switch {
				case p.trunc:
					truncs++
				case p.release:
					belowMin++
				}
			}
			require.Positive(t, truncs, "the sizes include messages larger than the space left")
			require.Positive(t, belowMin, "buffers are released below the minimum too")
			buf := make([]byte, bufSize)
			gen := 0
			require.NoError(t, postMulti(b, buf, gen))
			c := startChild(t, "mrsend", nil, envPeer+"="+string(b.name), envSizes+"="+joinSizes(sizes))
			for i, p := range want {
				require.Equal(t, p.buf, gen)
				data := pattern(make([]byte, sizes[i]), i)
				e := nextEntry(t, b)
				if p.trunc {
					require.NotNil(t, e.err, "message %d of %d bytes, %d left: truncated", i, sizes[i], p.n)
					require.ErrorIs(t, e.err, fi.ETRUNC)
					require.Equal(t, gen, e.err.Context)
					require.Equal(t, p.n, e.err.Len)
					require.Equal(t, sizes[i]-p.n, e.err.OLen)
					require.Equal(t, p.off, offsetIn(buf, e.err.Buf))
					require.True(t, bytes.Equal(data[:p.n], buf[p.off:]), "truncated message %d", i)
				} else {
					requirePart(t, e, buf, gen, p.off, data)
				}
				if p.release {
					requireRelease(t, nextEntry(t, b), gen)
					gen++
					clear(buf)
					require.NoError(t, postMulti(b, buf, gen))
				}
			}
			deadline := time.Now().Add(procWait)
			for {
				select {
				case l, ok := <-c.lines:
					require.True(t, ok, "child ended\n%s", c.output())
					require.Equal(t, [2]string{"done", strconv.Itoa(len(sizes))}, l, c.output())
				default:
					require.True(t, time.Now().Before(deadline), "child not done\n%s", c.output())
					_, _ = b.cq.Read(nil)
					continue
				}
				break
			}
			c.kill()
			t.Logf("%d messages, %d buffers released: %d below the minimum, %d by a truncated message", len(sizes), gen, belowMin, truncs)
			// The buffer posted last is cancelled with FI_MULTI_RECV.
			require.NoError(t, b.ep.Cancel(gen))
			e := nextEntry(t, b)
			require.ErrorIs(t, e.err, fi.ECANCELED)
			require.Equal(t, fi.FlagRecv|fi.FlagMsg|fi.FlagMultiRecv, e.err.Flags)
		})
	}
}

// TestMultiRecvCancelWhileStreaming: a buffer cancelled while a message
// streams into it through the bounce chunks (no cross-memory attach)
// takes no more messages; the streaming one completes, and only then
// does the fi.ECANCELED entry, flagged FI_MULTI_RECV, release the
// buffer.
func TestMultiRecvCancelWhileStreaming(t *testing.T) {
	t.Setenv("FI_SHM_DISABLE_CMA", "1")
	a, b, toB := pair(t)
	setMin(t, b, 16)
	// A first message settles the connection (b's answer to a's CMA
	// probe: no).
	small := make([]byte, 8)
	require.NoError(t, b.ep.(ep.Msg).Recv(small, nil, fi.AddrUnspec, "warm"))
	sendWait(t, a, b, toB, []byte("warm"))
	require.Equal(t, "warm", nextEntry(t, b, a).c.Context)

	buf := make([]byte, 200<<10)
	require.NoError(t, postMulti(b, buf, "mr"))
	data := pattern(make([]byte, 100<<10), 3) // 7 chunks of 16 KiB: a sends 4, then waits for room
	require.NoError(t, a.ep.(ep.Msg).Send(data, nil, toB, "send"))
	_, err := b.cq.Read(nil) // b takes the header and the first chunks
	require.ErrorIs(t, err, fi.EAGAIN)
	require.NoError(t, b.ep.Cancel("mr"))
	e := nextEntry(t, b, a)
	requirePart(t, e, buf, "mr", 0, data)
	e = nextEntry(t, b, a)
	require.ErrorIs(t, e.err, fi.ECANCELED, "the cancellation comes after the message")
	require.Equal(t, fi.FlagRecv|fi.FlagMsg|fi.FlagMultiRecv, e.err.Flags)
	require.Equal(t, "send", nextEntry(t, a, b).c.Context)
	// Nothing more goes into the buffer.
	next := make([]byte, 8)
	require.NoError(t, b.ep.(ep.Msg).Recv(next, nil, fi.AddrUnspec, "next"))
	sendWait(t, a, b, toB, []byte("two"))
	require.Equal(t, "next", nextEntry(t, b, a).c.Context)
}

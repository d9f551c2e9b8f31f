//go:build linux

package shm_test

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// The completion levels of fi_cq(3) on shm, as C 1.17's shm gives them:
// FI_DELIVERY_COMPLETE, as the default op flag of the hints or on the
// call, completes a send only once the message is in a receive buffer of
// the target, whatever its size; without it (and with
// FI_TRANSMIT_COMPLETE or FI_INJECT_COMPLETE, which C takes and treats
// as no flag) an inline message completes as soon as it is in the
// target's ring. The target is another process that makes no progress
// at all until told to.

func init() {
	roles["dcrecv"] = roleDCRecv
}

// roleDCRecv opens an endpoint named envName, says "ready" and then does
// only what its stdin tells it, one line at a time, so that between two
// commands it makes no progress at all:
//
//	poll N              read its CQ N times with no receive posted; say "polled"
//	post SIZE TAGGED    post a receive of SIZE bytes (tagged: tag 7); say "posted"
//	wait SIZE SEED      wait for the posted receive's completion, check the
//	                    pattern of SEED; say "got LEN"
//	recv SIZE SEED TAGGED  post, then wait
//
// and ends at EOF.
func roleDCRecv(t *testing.T) {
	x := openX(t, os.Getenv(envName), false)
	defer x.closeX(t)
	say("ready", string(x.name))
	var bufs [][]byte
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		num := func(k int) int {
			n, err := strconv.Atoi(f[k])
			require.NoError(t, err)
			return n
		}
		post := func() {
			buf := make([]byte, num(1))
			bufs = append(bufs, buf)
			if f[len(f)-1] == "1" {
				require.NoError(t, x.ep.(ep.Tagged).TRecv(buf, nil, fi.AddrUnspec, 7, 0, len(bufs)-1))
			} else {
				require.NoError(t, x.ep.(ep.Msg).Recv(buf, nil, fi.AddrUnspec, len(bufs)-1))
			}
		}
		wait := func() {
			k := len(bufs) - 1
			c := x.collect(t, busy, map[any]bool{k: false})[k]
			if d := firstDiff(bufs[k][:c.Len], pattern(make([]byte, num(1)), num(2))); d != "" {
				say("fail", "message of "+f[1]+" bytes: "+d)
				return
			}
			say("got", strconv.Itoa(c.Len))
		}
		switch f[0] {
		case "poll":
			var c [1]eq.Completion
			for range num(1) {
				if n, _ := x.cq.Read(c[:]); n > 0 {
					say("fail", "a completion with no receive posted")
					return
				}
			}
			say("polled", "")
		case "post":
			post()
			say("posted", "")
		case "wait":
			wait()
		case "recv":
			post()
			wait()
		}
	}
}

// idleReads is how many times a test reads a CQ to see that nothing
// completes (each read runs the endpoint's progress once).
const idleReads = 2000

// noCompletion reads x's CQ idleReads times and fails on any entry.
func noCompletion(t testing.TB, x *xnode, why string) {
	t.Helper()
	var c [1]eq.Completion
	for range idleReads {
		n, err := x.cq.Read(c[:])
		require.Zero(t, n, "%s: %+v", why, c[0])
		require.ErrorIs(t, err, fi.EAGAIN, why)
	}
}

// sendUntil posts with send, retrying on fi.EAGAIN (the target's first
// answer) for at most procWait.
func sendUntil(t testing.TB, x *xnode, send func() error) {
	t.Helper()
	deadline := time.Now().Add(procWait)
	for {
		err := send()
		if err == nil {
			return
		}
		require.ErrorIs(t, err, fi.EAGAIN)
		require.True(t, time.Now().Before(deadline), "send: fi.EAGAIN for %v", procWait)
		_, _ = x.cq.Read(nil)
	}
}

// progressUntil reads x's CQ, for an entry with context want, while
// waiting for the child's line key; it returns once it has both.
func progressUntil(t testing.TB, x *xnode, c *child, key string, want any) {
	t.Helper()
	deadline := time.Now().Add(procWait)
	var comp [1]eq.Completion
	var gotLine, gotEntry bool
	for !gotLine || !gotEntry {
		require.True(t, time.Now().Before(deadline), "no %q from the child and send completion %v within %v (hang)\n%s",
			key, want, procWait, c.output())
		n, err := x.cq.Read(comp[:])
		switch {
		case n == 1:
			require.False(t, gotEntry, "a second completion %+v", comp[0])
			require.Equal(t, want, comp[0].Context)
			gotEntry = true
		case err == fi.EAVAIL:
			e, _ := x.cq.ReadErr()
			t.Fatalf("error entry %v", e)
		default:
			require.ErrorIs(t, err, fi.EAGAIN)
		}
		if !gotLine {
			select {
			case l, ok := <-c.lines:
				require.True(t, ok, "child ended before %q\n%s", key, c.output())
				require.Equal(t, key, l[0], "child said %q %q\n%s", l[0], l[1], c.output())
				gotLine = true
			default:
			}
		}
	}
}

// dcMode is how a test asks for FI_DELIVERY_COMPLETE.
type dcMode struct {
	name    string
	dflt    bool     // as the default op flag of the hints (Send, TSend)
	flags   fi.Flags // else on the call (SendMsg, TSendMsg)
	tagged  bool
	maxSize int // sizes up to this only (0: all)
}

var dcModes = []dcMode{
	{name: "default", dflt: true},
	{name: "default-tagged", dflt: true, tagged: true},
	{name: "per-call", flags: fi.FlagDeliveryComplete},
	{name: "per-call-tagged", flags: fi.FlagDeliveryComplete, tagged: true},
	// FI_INJECT with FI_DELIVERY_COMPLETE: the buffer is the
	// application's at once, the completion waits for delivery.
	{name: "per-call-inject", flags: fi.FlagDeliveryComplete | fi.FlagInject, maxSize: 192},
}

// dcSizes are inline (up to 192 bytes), and larger: cross-memory attach
// or, with FI_SHM_DISABLE_CMA=1 at the target, the bounce chunks (four
// of 16 KiB: 70000 and 1 MiB need several rounds of them).
var dcSizes = []int{0, 1, 192, 193, 4096, 70000, 1 << 20}

// TestDeliveryComplete: a send with FI_DELIVERY_COMPLETE does not
// complete while the target process makes no progress, neither before it
// polled at all, nor after it polled with no receive posted (the
// message is then in the provider's hands, not in a receive buffer), nor
// with a receive posted that it has not progressed into; it completes
// once the target took it into a receive buffer. Inline, CMA and
// bounce-buffer sizes, untagged and tagged, with the flag as default op
// flag and per call.
func TestDeliveryComplete(t *testing.T) {
	for _, target := range []struct{ name, cma string }{{"cma", ""}, {"bounce", "FI_SHM_DISABLE_CMA=1"}} {
		t.Run(target.name, func(t *testing.T) {
			name := "fi_shm://dc" + strconv.Itoa(os.Getpid()) + "-" + target.name
			env := []string{envName + "=" + name}
			if target.cma != "" {
				env = append(env, target.cma)
			}
			c := startChild(t, "dcrecv", nil, env...)
			c.expect(t, "ready")
			dc := openXWith(t, "", false, func(h *fi.Info) { h.TxAttr.OpFlags = fi.FlagDeliveryComplete })
			defer dc.closeX(t)
			require.Equal(t, fi.FlagDeliveryComplete, dc.ep.Info().TxAttr.OpFlags)
			plain := openX(t, "", false)
			defer plain.closeX(t)
			seed := 0
			for _, m := range dcModes {
				x := plain
				if m.dflt {
					x = dc
				}
				to := x.insert(t, []byte(name))
				tagged := "0"
				if m.tagged {
					tagged = "1"
				}
				for _, size := range dcSizes {
					if m.maxSize > 0 && size > m.maxSize {
						continue
					}
					for _, postedFirst := range []bool{false, true} {
						seed++
						what := m.name + "/" + strconv.Itoa(size) + "/posted=" + strconv.FormatBool(postedFirst)
						if postedFirst {
							c.tell(t, "post "+strconv.Itoa(size)+" "+tagged)
							c.expect(t, "posted")
						}
						payload := pattern(make([]byte, size), seed)
						sendUntil(t, x, func() error {
							switch {
							case m.dflt && m.tagged:
								return x.ep.(ep.Tagged).TSend(payload, nil, to, 7, what)
							case m.dflt:
								return x.ep.(ep.Msg).Send(payload, nil, to, what)
							case m.tagged:
								return x.ep.(ep.Tagged).TSendMsg(&ep.TaggedMessage{IOV: [][]byte{payload}, Addr: to, Tag: 7, Context: what}, m.flags)
							}
							return x.ep.(ep.Msg).SendMsg(&ep.Message{IOV: [][]byte{payload}, Addr: to, Context: what}, m.flags)
						})
						if m.flags&fi.FlagInject != 0 {
							clear(payload) // the target must get the pattern all the same
						}
						noCompletion(t, x, what+": completed before the target made any progress")
						if !postedFirst {
							c.tell(t, "poll "+strconv.Itoa(idleReads))
							c.expect(t, "polled")
							noCompletion(t, x, what+": completed while the target had no receive for it")
							c.tell(t, "recv "+strconv.Itoa(size)+" "+strconv.Itoa(seed)+" "+tagged)
						} else {
							c.tell(t, "wait "+strconv.Itoa(size)+" "+strconv.Itoa(seed))
						}
						progressUntil(t, x, c, "got", what)
					}
				}
			}

			// Control: without FI_DELIVERY_COMPLETE, and with the levels
			// C's shm takes and treats as none, an inline send completes
			// while the target makes no progress.
			to := plain.insert(t, []byte(name))
			for _, f := range []fi.Flags{0, fi.FlagTransmitComplete, fi.FlagInjectComplete, fi.FlagCompletion} {
				seed++
				payload := pattern(make([]byte, 100), seed)
				sendUntil(t, plain, func() error {
					return plain.ep.(ep.Msg).SendMsg(&ep.Message{IOV: [][]byte{payload}, Addr: to, Context: f}, f)
				})
				got := plain.collect(t, busy, map[any]bool{f: true})
				require.Contains(t, got, f)
				c.tell(t, "recv 100 "+strconv.Itoa(seed)+" 0")
				c.expect(t, "got")
			}
			require.NoError(t, c.stdin.Close())
			select {
			case <-c.done:
			case <-time.After(procWait):
				t.Fatalf("the child did not end at EOF\n%s", c.output())
			}
			require.True(t, c.cmd.ProcessState.Success(), "child: %v\n%s", c.cmd.ProcessState, c.output())
		})
	}
}

// TestInjectIgnoresDeliveryComplete: fi_inject has no completion to
// delay, so, as in C, injects do not wait for delivery under a
// FI_DELIVERY_COMPLETE default: they take no transmit entry (16 here)
// and go out while the target makes no progress.
func TestInjectIgnoresDeliveryComplete(t *testing.T) {
	x := openXWith(t, "", false, func(h *fi.Info) {
		h.TxAttr.OpFlags, h.TxAttr.Size = fi.FlagDeliveryComplete, 16
	})
	defer x.closeX(t)
	y := openX(t, "", false)
	defer y.closeX(t)
	to := x.insert(t, y.name)
	for i := range 100 {
		require.NoError(t, x.ep.(ep.Msg).Inject([]byte("inject"), to), "inject %d", i)
		require.NoError(t, x.ep.(ep.Tagged).TInjectData([]byte("tinject"), uint64(i), to, 7), "tinjectdata %d", i)
	}
	// A delivery-complete send takes a transmit entry until the target
	// has it: 16 of them, then fi.EAGAIN.
	for i := range 16 {
		require.NoError(t, x.ep.(ep.Msg).Send([]byte("held"), nil, to, i), "send %d", i)
	}
	require.ErrorIs(t, x.ep.(ep.Msg).Send([]byte("held"), nil, to, nil), fi.EAGAIN)
	noCompletion(t, x, "a delivery-complete send completed before the target made progress")

	buf := make([]byte, 16)
	for range 100 {
		require.NoError(t, y.ep.(ep.Msg).Recv(buf, nil, fi.AddrUnspec, "r"))
		y.collect(t, busy, map[any]bool{"r": false})
		require.Equal(t, "inject", string(buf[:6]))
		require.NoError(t, y.ep.(ep.Tagged).TRecv(buf, nil, fi.AddrUnspec, 7, 0, "t"))
		y.collect(t, busy, map[any]bool{"t": false})
		require.Equal(t, "tinject", string(buf[:7]))
	}
	want := map[any]bool{}
	for i := range 16 {
		want[i] = true
		require.NoError(t, y.ep.(ep.Msg).Recv(buf, nil, fi.AddrUnspec, nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), procWait)
	defer cancel()
	for len(want) > 0 {
		_, _ = y.cq.Read(nil)
		var c [1]eq.Completion
		n, err := x.cq.Read(c[:])
		if n == 1 {
			require.Contains(t, want, c[0].Context)
			delete(want, c[0].Context)
			continue
		}
		require.ErrorIs(t, err, fi.EAGAIN)
		require.NoError(t, ctx.Err(), "sends still pending: %v", want)
	}
}

// TestDeliveryCompleteDoesNotAllocate: delivery-complete sends, inline
// and larger, to a posted receive and to one posted after the message
// came, allocate nothing.
func TestDeliveryCompleteDoesNotAllocate(t *testing.T) {
	for _, cma := range []string{"0", "1"} {
		t.Run("disable_cma="+cma, func(t *testing.T) {
			t.Setenv("FI_SHM_DISABLE_CMA", cma)
			a, b := openNode(t), openNode(t)
			defer a.close(t)
			defer b.close(t)
			toB := a.insert(t, b.name)
			for _, size := range []int{64, 4096} {
				rbuf := make([]byte, size)
				ctx := &struct{}{}
				msg := &ep.Message{IOV: [][]byte{make([]byte, size)}, Addr: toB, Context: ctx}
				comp := make([]eq.Completion, 1)
				for _, postFirst := range []bool{true, false} {
					round := func() {
						if postFirst {
							if err := b.ep.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, ctx); err != nil {
								panic(err)
							}
						}
						if err := a.ep.(ep.Msg).SendMsg(msg, fi.FlagDeliveryComplete); err != nil {
							panic(err)
						}
						if !postFirst {
							for range 10 {
								_, _ = b.cq.Read(comp[:0])
								_, _ = a.cq.Read(comp[:0])
							}
							if err := b.ep.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, ctx); err != nil {
								panic(err)
							}
						}
						for n := 0; n == 0; n, _ = b.cq.Read(comp) {
							_, _ = a.cq.Read(comp[:0])
						}
						for n := 0; n == 0; n, _ = a.cq.Read(comp) {
							_, _ = b.cq.Read(comp[:0])
						}
					}
					round()
					require.Zero(t, testing.AllocsPerRun(200, round), "size %d, receive posted first %v", size, postFirst)
				}
			}
		})
	}
}

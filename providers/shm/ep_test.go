//go:build linux

package shm_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/providers/shm"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// node is one endpoint with its objects.
type node struct {
	fabric fi.Fabric
	domain fi.Domain
	av     fi.AV
	cq     eq.CompletionQueue
	ep     ep.Endpoint
	name   []byte
}

func shmHints() *fi.Info {
	h := (*fi.Info)(nil).Clone()
	h.FabricAttr.ProvName = "shm"
	h.EPAttr.Type = fi.EPTypeRDM
	return h
}

func openNode(t testing.TB) *node {
	t.Helper()
	infos, err := fi.GetInfo(context.Background(), "", "", 0, shmHints())
	require.NoError(t, err)
	n := &node{}
	n.fabric, err = fi.OpenFabric(infos[0])
	require.NoError(t, err)
	n.domain, err = n.fabric.OpenDomain(infos[0])
	require.NoError(t, err)
	openEndpoint(t, n, infos[0])
	return n
}

// openEndpoint opens n's AV, CQ and enabled endpoint in n's domain and
// records the endpoint's name.
func openEndpoint(t testing.TB, n *node, info *fi.Info) {
	t.Helper()
	var err error
	n.av, err = fi.OpenAV(n.domain, &fi.AVAttr{Type: fi.AVTable})
	require.NoError(t, err)
	n.cq, err = eq.OpenCQ(n.domain, &eq.CQAttr{Format: eq.FormatTagged})
	require.NoError(t, err)
	n.ep, err = ep.Open(n.domain, info)
	require.NoError(t, err)
	require.NoError(t, n.ep.Bind(n.av, 0))
	require.NoError(t, n.ep.Bind(n.cq, fi.FlagSend|fi.FlagRecv))
	require.NoError(t, n.ep.Enable())
	buf := make([]byte, 128)
	k, err := n.ep.(ep.Namer).Name(buf)
	require.NoError(t, err)
	n.name = buf[:k]
}

func (n *node) close(t testing.TB) {
	t.Helper()
	require.NoError(t, n.ep.Close())
	require.NoError(t, n.cq.Close())
	require.NoError(t, n.av.Close())
	require.NoError(t, n.domain.Close())
	require.NoError(t, n.fabric.Close())
}

func (n *node) insert(t testing.TB, name []byte) fi.Addr {
	t.Helper()
	a, err := n.av.Insert([][]byte{name}, 0)
	require.NoError(t, err)
	return a[0]
}

// pollAll reads one completion from n, progressing every node meanwhile.
func pollAll(t testing.TB, n *node, all ...*node) (eq.Completion, fi.Addr) {
	t.Helper()
	var c [1]eq.Completion
	var src [1]fi.Addr
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, o := range all {
			if o != n {
				_, _ = o.cq.Read(nil)
			}
		}
		k, err := n.cq.ReadFrom(c[:], src[:])
		if k == 1 {
			return c[0], src[0]
		}
		if err == fi.EAVAIL {
			e, _ := n.cq.ReadErr()
			t.Fatalf("error completion: %v", e)
		}
	}
	t.Fatal("no completion within 10 s")
	return eq.Completion{}, 0
}

func TestSendRecvSizes(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, cma := range []string{"0", "1"} {
		t.Run("disable_cma="+cma, func(t *testing.T) {
			t.Setenv("FI_SHM_DISABLE_CMA", cma)
			a, b := openNode(t), openNode(t)
			defer a.close(t)
			defer b.close(t)
			require.NotEqual(t, a.name, b.name)
			toB := a.insert(t, b.name)
			fromA := b.insert(t, a.name)
			for _, size := range []int{0, 1, 64, 192, 193, 4096, 70000, 1 << 20} {
				payload := bytes.Repeat([]byte{byte(size)}, size)
				for i := range payload {
					payload[i] = byte(i * 7)
				}
				rbuf := make([]byte, size+10)
				require.NoError(t, b.ep.(ep.Msg).Recv(rbuf, nil, fi.AddrUnspec, "r"))
				require.NoError(t, a.ep.(ep.Msg).SendData(payload, nil, uint64(size), toB, "s"))
				c, src := pollAll(t, b, a, b)
				require.Equal(t, "r", c.Context)
				require.Equal(t, size, c.Len)
				require.Equal(t, uint64(size), c.Data)
				require.Equal(t, fi.FlagRecv|fi.FlagMsg|fi.FlagRemoteCQData, c.Flags)
				require.Equal(t, fromA, src)
				require.Equal(t, payload, rbuf[:size])
				c, _ = pollAll(t, a, a, b)
				require.Equal(t, "s", c.Context)
			}
		})
	}
	require.Empty(t, leftovers(), "regions left behind")
}

// leftovers returns the inbox and doorbell files of this process's
// default-named endpoints (they are named after its pid).
func leftovers() []string {
	dir := filepath.Dir(shm.RegionPath("fi_shm://x"))
	var out []string
	for _, pat := range []string{"", "_*"} {
		for _, ext := range []string{".inbox", ".bell"} {
			m, _ := filepath.Glob(filepath.Join(dir, itoa(os.Getpid())+pat+ext))
			out = append(out, m...)
		}
	}
	return out
}

func itoa(n int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

// Two endpoints that write to each other with many writes in flight, as
// fabtests' rma_bw -o write does on both sides at once (each driven by a
// goroutine of its own here, as by a process of its own there): every
// write is answered, and the answers must keep flowing while both rings
// are full of writes. They used to stop after about 1200 writes a side:
// each endpoint's answer queue full, each waiting for the other to take
// a slot, and every write refused with fi.EAGAIN from then on. Inline
// (64 B) and cross-memory-attach (4 KiB) writes, and 4 KiB written in
// inline pieces where cross-memory attach is off.
func TestWritesBothWaysKeepFlowing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, c := range []struct {
		name, cma string
		size      int
	}{{"inline", "0", 64}, {"cma", "0", 4096}, {"pieces", "1", 4096}} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("FI_SHM_DISABLE_CMA", c.cma)
			a, b := openNode(t), openNode(t)
			defer a.close(t)
			defer b.close(t)
			nodes := []*node{a, b}
			dest := []fi.Addr{a.insert(t, b.name), b.insert(t, a.name)}
			for i, n := range nodes {
				mr, err := fi.RegisterMR(n.domain, &fi.MRAttr{Buf: make([]byte, c.size),
					Access: fi.AccessRemoteWrite, RequestedKey: uint64(i + 1)}, 0)
				require.NoError(t, err)
				defer mr.Close()
			}
			const writes = 20000
			var finished atomic.Int32
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i, n := range nodes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = writeLoop(n, dest[i], uint64(2-i), c.size, writes, &finished)
				}()
			}
			wg.Wait()
			require.NoError(t, errs[0], "endpoint a")
			require.NoError(t, errs[1], "endpoint b")
		})
	}
}

// writeLoop writes size bytes to key at dest n times, posting until
// fi.EAGAIN and then reading the CQ, and goes on reading it until the
// other side's loop is done too (it answers that side's writes). It
// fails when for 20 s no write is accepted and nothing completes.
func writeLoop(n *node, dest fi.Addr, key uint64, size, writes int, finished *atomic.Int32) error {
	src := bytes.Repeat([]byte{7}, size)
	rma := n.ep.(ep.RMA)
	var buf [64]eq.Completion
	posted, comps := 0, 0
	mine := false
	lastMove := time.Now()
	for finished.Load() < 2 {
		moved := false
		for posted < writes {
			var err error
			if size <= 192 {
				err = rma.InjectWrite(src, dest, 0, key)
			} else {
				err = rma.Write(src, nil, dest, 0, key, nil)
			}
			if err == fi.EAGAIN {
				break
			}
			if err != nil {
				return fmt.Errorf("write %d: %w", posted, err)
			}
			posted++
			moved = true
		}
		k, err := n.cq.Read(buf[:])
		if err == fi.EAVAIL {
			e, _ := n.cq.ReadErr()
			return fmt.Errorf("error completion %v", e)
		}
		if k > 0 {
			comps += k
			moved = true
		}
		if size <= 192 {
			comps = posted // injected: no completions
		}
		if !mine && posted == writes && comps == writes {
			mine = true
			finished.Add(1)
		}
		if moved {
			lastMove = time.Now()
		} else if time.Since(lastMove) > 20*time.Second {
			return fmt.Errorf("no write accepted and no completion for 20 s: %d writes posted, %d completed", posted, comps)
		}
	}
	return nil
}

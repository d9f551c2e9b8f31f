package ft

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

func TestSizeStr(t *testing.T) {
	for in, want := range map[int64]string{
		0: "0", 1: "1", 64: "64", 1000: "1000", 1024: "1k", 1536: "1.5k", 2560: "2.5k", 9216: "9k",
		10240: "10k", 15360: "15k", 640 * 1024: "640k", 1 << 20: "1m", 10 << 20: "10m", 1<<20 + 1<<19: "1.5m",
		1 << 30: "1g", 1<<30 + 1<<29: "1.5g",
	} {
		require.Equal(t, want, sizeStr(in), "%d", in)
	}
	for in, want := range map[int64]string{
		5: "5", 999: "999", 1000: "1k", 10000: "10k", 999999: "999k", 1999999: "1m", 2000000: "2m", 3000000000: "3b",
	} {
		require.Equal(t, want, cntStr(in), "%d", in)
	}
}

// TestShowPerf checks the table and -m's YAML against rows the C
// programs printed for the same figures.
func TestShowPerf(t *testing.T) {
	var out bytes.Buffer
	s := newSession(programs["rdm_pingpong"], []string{"ft", "rdm_pingpong", "-m"}, &out, &out)
	at := func(us int64) {
		s.startTime = time.Unix(0, 0)
		s.endTime = s.startTime.Add(time.Duration(us) * time.Microsecond)
	}

	// C fi_rdm_pingpong -I 5, tcp, these elapsed times (43 us and 1354 us).
	at(43)
	s.showPerf("", 64, 5, 2)
	at(1354)
	s.showPerf("", 1<<20, 5, 2)
	require.Equal(t, ""+
		"bytes   iters   total       time     MB/sec    usec/xfer   Mxfers/sec\n"+
		"64      5       640         0.00s     14.88       4.30       0.23\n"+
		"1m      5       10m         0.00s   7744.28     135.40       0.01\n", out.String())

	out.Reset()
	s.opts.MachineReadable, s.headerShown = true, false
	at(41)
	s.showPerf("", 1024, 5, 2)
	require.Equal(t, "---\nft rdm_pingpong -m :\n"+
		"- { xfer_size: 1024, iterations: 5, total: 10240, time: 0.000041, MB/sec: 249.756098, usec/xfer: 4.100000, Mxfers/sec: 0.243902 }\n",
		out.String())

	// A loop that took no time divides by zero, as in C.
	out.Reset()
	s.opts.MachineReadable, s.headerShown = false, true
	at(0)
	s.showPerf("", 64, 0, 2)
	require.Equal(t, "64      0       0           0.00s      -nan       -nan       -nan\n", out.String())
}

func TestPattern(t *testing.T) {
	var out bytes.Buffer
	s := newSession(programs["rdm_pingpong"], nil, &out, &out)
	b := make([]byte, 200)
	fillBuf(b)
	require.Equal(t, alphabet+alphabet+alphabet+alphabet[:200-3*len(alphabet)], string(b))
	require.NoError(t, s.checkBuf(b))
	require.Empty(t, out.String())

	b[70] = 'x'
	err := s.checkBuf(b)
	require.ErrorIs(t, err, fi.EIO)
	require.Equal(t, "Data check error (8!=x) at byte 70 for buffer size 200\n", out.String())
	require.Equal(t, 5, exitStatus(err))
}

func TestExitStatus(t *testing.T) {
	require.Equal(t, 0, exitStatus(nil))
	require.Equal(t, 1, exitStatus(&usageError{}))
	require.Equal(t, 61, exitStatus(callErr("fi_getinfo", fi.ENODATA)))
	require.Equal(t, 111, exitStatus(callErr("connect", fi.ECONNREFUSED)))
	// libfabric's own codes do not fit a status: 1, as ft_exit_code.
	require.Equal(t, 1, exitStatus(fi.ETRUNC))
	require.Equal(t, 1, exitStatus(fi.EOTHER))
}

// TestAlloc: -l puts the buffers on a page boundary; every buffer is
// zeroed.
func TestAlloc(t *testing.T) {
	page := uintptr(os.Getpagesize())
	for _, n := range []int{1, 300, 5000, 1 << 20} {
		b := alloc(n, true)
		require.Len(t, b, n)
		require.Zero(t, uintptrOf(b)%page, "%d bytes aligned", n)
		require.Equal(t, make([]byte, n), b)
		require.Len(t, alloc(n, false), n)
	}
}

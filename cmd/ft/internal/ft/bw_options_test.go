package ft

import (
	"testing"
	"time"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// setUp parses args for prog and applies its setup (the hints its C main
// sets after parsing).
func setUp(t *testing.T, prog string, args ...string) *Session {
	t.Helper()
	s := parsed(t, prog, args...)
	if s.prog.setup != nil {
		require.NoError(t, s.prog.setup(s))
	}
	return s
}

func TestBandwidthPrograms(t *testing.T) {
	status, _, stderr := runMain()
	require.Equal(t, 1, status)
	for _, name := range []string{"msg_bw", "rdm_tagged_bw", "bw", "rma_bw"} {
		require.Contains(t, stderr, "  "+name+" ")
		require.Same(t, programs[name], lookup("fi_"+name))
		status, _, usage := runMain(name, "-h")
		require.Equal(t, 1, status, "%s -h", name)
		require.Contains(t, usage, "Usage:")
	}
	_, _, usage := runMain("rma_bw", "-h")
	require.Contains(t, usage, "read|write|writedata")
	_, _, usage = runMain("bw", "-h")
	require.Contains(t, usage, "-T sleep_time")
}

// TestBandwidthHints checks what each program asks the provider for, as
// its C main does.
func TestBandwidthHints(t *testing.T) {
	m := setUp(t, "msg_bw")
	require.True(t, m.opts.Has(OptBW))
	require.Equal(t, fi.EPTypeMsg, m.hints.EPAttr.Type)
	require.Equal(t, fi.CapMsg, m.hints.Caps)
	require.Equal(t, fi.RMEnabled, m.hints.DomainAttr.ResourceMgmt)
	require.Equal(t, fi.TCBulkData, m.hints.TxAttr.TClass)
	require.Equal(t, 20000, m.opts.sizeToCount(64), "bandwidth tests run twice the iterations")
	require.True(t, setUp(t, "msg_bw", "-o", "tagged").opts.Has(OptSRX))

	r := setUp(t, "rdm_tagged_bw", "-U", "-W", "8")
	require.Equal(t, fi.EPTypeRDM, r.hints.EPAttr.Type)
	require.Equal(t, fi.CapTagged, r.hints.Caps)
	require.Equal(t, fi.FlagDeliveryComplete, r.hints.TxAttr.OpFlags&fi.FlagDeliveryComplete)
	require.Equal(t, 8, r.opts.WindowSize)

	w := setUp(t, "rma_bw")
	require.Equal(t, fi.CapMsg|fi.CapRMA, w.hints.Caps)
	require.Equal(t, RMAWrite, w.opts.RMAOp)
	require.Equal(t, fi.EPTypeUnspec, w.hints.EPAttr.Type, "RDM unless -e: ft_getinfo's default")
	rd := setUp(t, "rma_bw", "-e", "msg", "-o", "read")
	require.Equal(t, fi.CapMsg|fi.CapRMA|fi.CapRead|fi.CapRemoteRead, rd.hints.Caps)
	require.Equal(t, fi.EPTypeMsg, rd.hints.EPAttr.Type)
	wd := setUp(t, "rma_bw", "-o", "writedata")
	require.Equal(t, RMAWriteData, wd.opts.RMAOp)
	require.Equal(t, fi.ModeContext|fi.ModeRxCQData, wd.hints.Mode)

	b := setUp(t, "bw", "-T", "2", "-v")
	require.Equal(t, fi.EPTypeRDM, b.hints.EPAttr.Type)
	require.Equal(t, 2*time.Second, b.local.(*bwOptions).sleep)
	require.Equal(t, fi.OrderSAS, b.hints.TxAttr.MsgOrder&fi.OrderSAS, "-v asks for send-after-send order")
	require.Equal(t, fi.EPTypeMsg, setUp(t, "bw", "-e", "msg").hints.EPAttr.Type)
}

func TestBandwidthRefused(t *testing.T) {
	tests := []struct {
		args   []string
		status fi.Errno
		stderr string
	}{
		{[]string{"rma_bw", "-o", "atomic"}, fi.EINVAL, "read, write, writedata"},
		{[]string{"rdm_tagged_bw", "-W", "0"}, fi.EINVAL, "window size"},
		{[]string{"bw", "-T", "x"}, fi.EINVAL, "-T x: not a number"},
		{[]string{"bw", "-e", "dgram"}, fi.EINVAL, "This test does not support DGRAM endpoints"},
		{[]string{"msg_bw", "-p", "tcp", "-o", "tagged"}, fi.ENODATA, "caps FI_TAGGED not supported"},
	}
	for _, tt := range tests {
		status, _, stderr := runMain(tt.args...)
		require.Equal(t, int(tt.status), status, "%v: %s", tt.args, stderr)
		require.Contains(t, stderr, tt.stderr, "%v", tt.args)
	}
	// Options the C programs do not take.
	for _, args := range [][]string{{"bw", "-I", "5", "-k"}, {"bw", "-j", "64"}, {"msg_bw", "-U"}, {"rdm_tagged_bw", "-o", "msg"}} {
		status, _, stderr := runMain(args...)
		require.Equal(t, 1, status, "%v: %s", args, stderr)
		require.Contains(t, stderr, "invalid option", "%v", args)
	}
}

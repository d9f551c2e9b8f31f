package ft

import (
	"bytes"
	"net"
	"strconv"
	"testing"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// runMain runs Main in this process and returns its status and output.
func runMain(args ...string) (status int, stdout, stderr string) {
	var out, errb bytes.Buffer
	status = Main(append([]string{"ft"}, args...), &out, &errb)
	return status, out.String(), errb.String()
}

func TestMainProgramNames(t *testing.T) {
	status, _, stderr := runMain()
	require.Equal(t, 1, status)
	require.Contains(t, stderr, "Programs:")
	for _, name := range []string{"msg_pingpong", "rdm_pingpong", "rdm_tagged_pingpong", "rdm_cntr_pingpong", "dgram_pingpong"} {
		require.Contains(t, stderr, "  "+name+" ")
		require.Same(t, programs[name], lookup("fi_"+name), "the fi_ prefix is optional")
		require.Same(t, programs[name], lookup(name))
	}

	status, _, stderr = runMain("fi_nosuch")
	require.Equal(t, 1, status)
	require.Contains(t, stderr, `unknown program "fi_nosuch"`)
	require.Contains(t, stderr, "Programs:")
}

func TestMainUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string // on stderr, before the usage
	}{
		{[]string{"fi_rdm_pingpong", "-h"}, ""},
		{[]string{"rdm_pingpong", "-Z"}, "ft rdm_pingpong: invalid option -- 'Z'"},
		{[]string{"rdm_pingpong", "-p"}, "option requires an argument -- 'p'"},
		// -U is rdm_pingpong's and rdm_tagged_pingpong's only, -T
		// dgram_pingpong's, -o msg_pingpong's.
		{[]string{"msg_pingpong", "-U"}, "invalid option -- 'U'"},
		{[]string{"rdm_cntr_pingpong", "-U"}, "invalid option -- 'U'"},
		{[]string{"rdm_pingpong", "-T", "3"}, "invalid option -- 'T'"},
		{[]string{"rdm_pingpong", "-o", "msg"}, "invalid option -- 'o'"},
		{[]string{"rdm_pingpong", "--nosuch"}, "unrecognized option '--nosuch'"},
	}
	for _, tt := range tests {
		status, stdout, stderr := runMain(tt.args...)
		require.Equal(t, 1, status, "%v", tt.args)
		require.Empty(t, stdout)
		require.Contains(t, stderr, tt.want)
		require.Contains(t, stderr, "Usage:\n")
		require.Contains(t, stderr, "-I <number>")
	}
}

// parsed parses args for prog as Main does, with the program's init.
func parsed(t *testing.T, prog string, args ...string) *Session {
	t.Helper()
	p := lookup(prog)
	require.NotNil(t, p)
	s := newSession(p, append([]string{"ft", prog}, args...), &bytes.Buffer{}, &bytes.Buffer{})
	if p.init != nil {
		p.init(s)
	}
	require.NoError(t, s.parse(p.getoptSpec(), args))
	return s
}

func TestParseDefaults(t *testing.T) {
	s := parsed(t, "rdm_pingpong")
	o := s.opts
	require.Equal(t, OptRxCQ|OptTxCQ, o.Flags)
	require.Equal(t, 1000, o.Iterations)
	require.Equal(t, 10, o.Warmup)
	require.Equal(t, 64, o.WindowSize)
	require.Equal(t, -1, o.Timeout)
	require.Equal(t, CompSpin, o.CompMethod)
	require.False(t, o.IsClient())
	require.Empty(t, o.OOBPort)
	require.Equal(t, fi.MRModeLocal|fi.MRModeEndpoint|fi.MRModeAllocated|fi.MRModeProvKey|fi.MRModeVirtAddr, o.MRMode)

	// rdm_cntr_pingpong counts completions and waits with fi_cntr_wait;
	// dgram_pingpong gives a receive 5 s.
	c := parsed(t, "rdm_cntr_pingpong")
	require.Equal(t, OptRxCntr|OptTxCntr, c.opts.Flags)
	require.Equal(t, CompSRead, c.opts.CompMethod)
	require.Equal(t, 5, parsed(t, "dgram_pingpong").opts.Timeout)
	require.Equal(t, 7, parsed(t, "dgram_pingpong", "-T", "7").opts.Timeout)
}

func TestParseOOB(t *testing.T) {
	tests := []struct {
		args    []string
		port    string
		sync    bool
		dstAddr string
	}{
		{[]string{"-E"}, "3000", false, ""},
		{[]string{"-E=4000"}, "4000", false, ""},
		// glibc gives an optional argument only when attached, and C
		// skips its first character, meant to be '='.
		{[]string{"-E4000"}, "000", false, ""},
		{[]string{"-E", "4000"}, "3000", false, "4000"},
		{[]string{"-E="}, "3000", false, ""},
		{[]string{"-b"}, "3000", true, ""},
		{[]string{"-b=5000", "host"}, "5000", true, "host"},
		{[]string{"host", "-E=6000"}, "6000", false, "host"},
	}
	for _, tt := range tests {
		s := parsed(t, "rdm_pingpong", tt.args...)
		require.Equal(t, tt.port, s.opts.OOBPort, "%v", tt.args)
		require.True(t, s.opts.Has(OptOOBAddrExch), "%v", tt.args)
		require.Equal(t, tt.sync, s.opts.Has(OptOOBSync), "%v", tt.args)
		require.Equal(t, tt.dstAddr, s.opts.DstAddr, "%v", tt.args)
	}
}

func TestParseSizes(t *testing.T) {
	s := parsed(t, "rdm_pingpong", "-S", "all")
	require.True(t, s.opts.AllSizes)
	require.False(t, s.opts.Has(OptSize))
	require.Len(t, s.opts.Sizes, 46)
	require.Equal(t, 1<<23, s.opts.maxSize())

	s = parsed(t, "rdm_pingpong", "-S", "4096")
	require.True(t, s.opts.Has(OptSize))
	require.Equal(t, 4096, s.opts.TransferSize)

	s = parsed(t, "rdm_pingpong", "-S", "r:100,50,260")
	require.True(t, s.opts.AllSizes)
	require.Equal(t, []sizeParam{{size: 100}, {size: 150}, {size: 200}, {size: 250}}, s.opts.Sizes)

	var def []int
	for _, p := range defaultSizes() {
		if p.def {
			def = append(def, p.size)
		}
	}
	require.Equal(t, []int{64, 256, 1 << 10, 1 << 12, 1 << 16, 1 << 20}, def)

	o := defaultOptions()
	require.Equal(t, 10000, o.sizeToCount(65535))
	require.Equal(t, 1000, o.sizeToCount(65536))
	require.Equal(t, 100, o.sizeToCount(1<<20))
	o.Flags |= OptBW
	require.Equal(t, 200, o.sizeToCount(1<<20))
}

func TestParseInfo(t *testing.T) {
	s := parsed(t, "msg_pingpong", "-p", "tcp", "-d", "lo", "-f", "127.0.0.0/8", "-M", "mr_local", "-k",
		"-c", "sread", "-t", "counter", "-F", "fi_sockaddr_in6", "-o", "tagged", "-m", "-l", "-w", "3", "-I", "7",
		"-j", "32", "-W", "8", "-C", "2", "-s", "10.0.0.1", "-B", "1", "-P", "2", "--timeout", "9", "-Q", "-v", "server")
	h, o := s.hints, s.opts
	require.Equal(t, "tcp", h.FabricAttr.ProvName)
	require.Equal(t, "lo", h.DomainAttr.Name)
	require.Equal(t, "127.0.0.0/8", h.FabricAttr.Name)
	require.Zero(t, o.MRMode&fi.MRModeLocal)
	require.NotZero(t, h.Mode&fi.ModeMsgPrefix)
	require.True(t, o.ForcePrefix)
	require.Equal(t, CompSRead, o.CompMethod)
	require.Equal(t, OptRxCntr|OptTxCntr|OptIter|OptAlign|OptServerPersist|OptDomainEQ|OptVerifyData, o.Flags)
	require.Equal(t, fi.FormatSockaddrIn6, o.AddrFormat)
	require.NotZero(t, h.Caps&fi.CapTagged)
	require.True(t, o.MachineReadable)
	require.Equal(t, 3, o.Warmup)
	require.Equal(t, 7, o.Iterations)
	require.Equal(t, 32, h.TxAttr.InjectSize)
	require.True(t, o.InjectSizeSet)
	require.Equal(t, 8, o.WindowSize)
	require.Equal(t, 2, o.NumConnections)
	require.Equal(t, "10.0.0.1", o.SrcAddr)
	require.Equal(t, "1", o.SrcPort)
	require.Equal(t, "2", o.DstPort)
	require.Equal(t, 9, o.Timeout)
	require.Equal(t, "server", o.DstAddr)

	w := parsed(t, "msg_pingpong", "-o", "writedata", "-c", "spin", "-e", "RDM")
	require.Equal(t, RMAWriteData, w.opts.RMAOp)
	require.Equal(t, eq.FormatData, w.cqFormat)
	require.NotZero(t, w.hints.Mode&fi.ModeRxCQData)
	require.Equal(t, CompSpin, w.opts.CompMethod)
	require.Equal(t, fi.EPTypeRDM, w.hints.EPAttr.Type)

	u := parsed(t, "rdm_pingpong", "-U")
	require.Equal(t, fi.FlagDeliveryComplete, u.hints.TxAttr.OpFlags)
}

// TestRefused: option values ft refuses before doing anything, with
// EINVAL for a bad value and ENOSYS for what gofabric lacks.
func TestRefused(t *testing.T) {
	tests := []struct {
		args   []string
		status fi.Errno
		stderr string
	}{
		{[]string{"rdm_pingpong", "-I", "ten"}, fi.EINVAL, "-I ten: not a number"},
		{[]string{"rdm_pingpong", "-I", "-1"}, fi.EINVAL, "cannot be negative"},
		{[]string{"rdm_pingpong", "-S", "1k"}, fi.EINVAL, "-S 1k: not a number"},
		{[]string{"rdm_pingpong", "-S", "r:10,0,20"}, fi.EINVAL, "a range is r:start,inc,end"},
		{[]string{"rdm_pingpong", "-c", "poll"}, fi.EINVAL, "spin, sread, fd, yield"},
		{[]string{"rdm_pingpong", "-t", "ring"}, fi.EINVAL, "queue or counter"},
		{[]string{"rdm_pingpong", "-e", "stream"}, fi.EINVAL, "msg, rdm, dgram"},
		{[]string{"rdm_pingpong", "-F", "fi_addr_str"}, fi.EINVAL, "the address format"},
		{[]string{"msg_pingpong", "-o", "atomic"}, fi.EINVAL, "read, write, writedata, msg, tagged"},
		{[]string{"rdm_pingpong", "-W", "0"}, fi.EINVAL, "window size"},
		{[]string{"dgram_pingpong", "-T", "x"}, fi.EINVAL, "-T x: not a number"},
		{[]string{"rdm_pingpong", "--timeout", "x"}, fi.EINVAL, "--timeout x: not a number"},
		{[]string{"rdm_pingpong", "-K"}, fi.ENOSYS, "cannot fork"},
		{[]string{"rdm_pingpong", "-D", "cuda"}, fi.ENOSYS, "device memory"},
	}
	for _, tt := range tests {
		status, _, stderr := runMain(tt.args...)
		require.Equal(t, int(tt.status), status, "%v: %s", tt.args, stderr)
		require.Contains(t, stderr, tt.stderr, "%v", tt.args)
	}
}

// TestUnsupportedFailsClearly runs what gofabric cannot serve as a real
// server or client in this process: each fails before it waits for a
// peer, with the reason and C's kind of status, and leaves nothing open
// (TestMain's leak check).
func TestUnsupportedFailsClearly(t *testing.T) {
	t.Setenv("FI_TCP_IFACE", "lo")
	tests := []struct {
		name   string
		args   []string
		status fi.Errno
		stderr []string
	}{
		{"prefix mode (-k)", []string{"rdm_pingpong", "-k"}, fi.ENODATA, []string{"FI_MSG_PREFIX"}},
		{"EQ bound to the domain (-Q)", []string{"rdm_pingpong", "-Q"}, fi.ENOSYS, []string{"fi_domain_bind"}},
		{"wait yield (-c yield)", []string{"rdm_cntr_pingpong", "-c", "yield"}, fi.ENOSYS, []string{"fi_cq_open", "-c sread"}},
		{"named AV (-a)", []string{"rdm_pingpong", "-a", "shared"}, fi.ENOSYS, []string{"fi_av_open", "-a shared"}},
		// C's msg_pingpong -o tagged asks for a shared receive context;
		// gofabric's tcp has no tagged MSG endpoints to begin with.
		{"tagged MSG (-o tagged)", []string{"msg_pingpong", "-o", "tagged", "127.0.0.1"}, fi.ENODATA, []string{"fi_getinfo", "caps FI_TAGGED not supported"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(tt.args, "-p", "tcp", "-s", "127.0.0.1", "-B", freePort(t), "-P", freePort(t))
			status, stdout, stderr := runMain(args...)
			require.Equal(t, int(tt.status), status, "%s", stderr)
			require.Empty(t, stdout)
			for _, w := range tt.stderr {
				require.Contains(t, stderr, w)
			}
		})
	}
}

// TestMsgClientNeedsSource: with -E or -b a connecting client without -s
// looks up its own address, not the server's (ft_read_addr_opts), and
// has nothing to connect to: EINVAL, as C's fi_connect gives, with a
// hint.
func TestMsgClientNeedsSource(t *testing.T) {
	t.Setenv("FI_TCP_IFACE", "lo")
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	oob := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	status, _, stderr := runMain("msg_pingpong", "-p", "tcp", "-B", freePort(t), "-E="+oob, "127.0.0.1")
	if c, ok := <-accepted; ok {
		c.Close()
	}
	require.Equal(t, int(fi.EINVAL), status, "%s", stderr)
	require.Contains(t, stderr, "fi_connect: no server address")
	require.Contains(t, stderr, "hint: with -E or -b a connecting client needs -s")
}

// TestPinCore runs ft with --pin-core in a child process (it changes the
// process's CPU affinity): a good list is applied silently, a bad one is
// a warning, as in C, and the run goes on to its own result (here
// fi_getinfo's refusal of -k).
func TestPinCore(t *testing.T) {
	for _, tt := range []struct{ list, warn string }{{"0", ""}, {"0-0,0", ""}, {"x", "Pin to core x failed"}, {"3-1", "Pin to core 3-1 failed"}} {
		// -k: fi_getinfo fails, after the pinning.
		p := startPeer(t, "go", "server", "rdm_pingpong", "--pin-core", tt.list, "-p", "tcp", "-s", "127.0.0.1", "-B", freePort(t), "-k")
		require.Equal(t, int(fi.ENODATA), p.status(t, peerLimit), "%s", p.report())
		if tt.warn == "" {
			require.NotContains(t, p.errOut.String(), "Pin to core")
		} else {
			require.Contains(t, p.errOut.String(), tt.warn)
		}
	}
}

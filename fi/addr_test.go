package fi_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// addrHex decodes hex, failing the test on bad input.
func addrHex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(tb, err)
	return b
}

// requireLittleEndian skips byte-layout tests whose expected bytes were
// taken from libfabric on x86-64.
func requireLittleEndian(tb testing.TB) {
	tb.Helper()
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		tb.Skip("expected bytes are for little-endian hosts")
	}
}

// The expected bytes and strings are those libfabric 1.17's tcp provider
// returns from fi_getinfo (src_addr) and fi_av_straddr on x86-64 Linux.
var cSockaddrs = []struct {
	name   string
	ap     string
	format fi.AddrFormat
	hex    string
	str    string
}{
	{"ipv4", "127.0.0.1:4000", fi.FormatSockaddrIn, "02000fa07f0000010000000000000000", "fi_sockaddr_in://127.0.0.1:4000"},
	{"ipv6", "[::1]:4000", fi.FormatSockaddrIn6, "0a000fa0000000000000000000000000000000000000000100000000", "fi_sockaddr_in6://[::1]:4000"},
	// C prints no scope id; gofabric keeps it so that ParseAddr round-trips.
	{"ipv6 scope", "[fe80::1%1]:4000", fi.FormatSockaddrIn6, "0a000fa000000000fe80000000000000000000000000000101000000", "fi_sockaddr_in6://[fe80::1%1]:4000"},
}

func TestSockaddrFromAddrPort(t *testing.T) {
	requireLittleEndian(t)
	for _, tc := range cSockaddrs {
		t.Run(tc.name, func(t *testing.T) {
			f, b, err := fi.SockaddrFromAddrPort(netip.MustParseAddrPort(tc.ap))
			require.NoError(t, err)
			require.Equal(t, tc.format, f)
			require.Equal(t, addrHex(t, tc.hex), b)

			ap, f2, err := fi.AddrPortFromSockaddr(b)
			require.NoError(t, err)
			require.Equal(t, tc.format, f2)
			require.Equal(t, tc.ap, ap.String())
		})
	}
	t.Run("zone by interface name", func(t *testing.T) {
		_, b, err := fi.SockaddrFromAddrPort(netip.MustParseAddrPort("[fe80::1%lo]:1"))
		require.NoError(t, err)
		require.Equal(t, uint32(1), binary.NativeEndian.Uint32(b[24:]), "lo is interface 1 on Linux")
	})
	t.Run("errors", func(t *testing.T) {
		_, _, err := fi.SockaddrFromAddrPort(netip.AddrPort{})
		require.ErrorIs(t, err, fi.EINVAL)
		_, _, err = fi.SockaddrFromAddrPort(netip.MustParseAddrPort("[fe80::1%no-such-if0]:1"))
		require.ErrorIs(t, err, fi.EINVAL)
	})
}

func TestAddrPortFromSockaddrErrors(t *testing.T) {
	requireLittleEndian(t)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"one byte", []byte{2}},
		{"ipv4 short", addrHex(t, "02000fa07f000001")},
		{"ipv4 family with ipv6 length", addrHex(t, "02000fa0000000000000000000000000000000000000000100000000")},
		{"ipv6 family with ipv4 length", addrHex(t, "0a000fa07f0000010000000000000000")},
		{"unknown family", addrHex(t, "1b000fa07f0000010000000000000000")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := fi.AddrPortFromSockaddr(tc.b)
			require.ErrorIs(t, err, fi.EINVAL)
		})
	}
}

func TestAddrString(t *testing.T) {
	requireLittleEndian(t)
	for _, tc := range cSockaddrs {
		t.Run(tc.name, func(t *testing.T) {
			b := addrHex(t, tc.hex)
			require.Equal(t, tc.str, fi.AddrString(tc.format, b))
			require.Equal(t, tc.str, fi.AddrString(fi.FormatSockaddr, b), "FI_SOCKADDR goes by sa_family")
		})
	}
	t.Run("addr str drops the C NUL", func(t *testing.T) {
		// libfabric's shm returns "fi_shm://foo" with its NUL as src_addr.
		require.Equal(t, "fi_shm://foo", fi.AddrString(fi.FormatStr, []byte("fi_shm://foo\x00")))
		require.Equal(t, "fi_shm://foo", fi.AddrString(fi.FormatStr, []byte("fi_shm://foo")))
	})
	for _, tc := range []struct {
		name   string
		format fi.AddrFormat
		b      []byte
	}{
		{"ipv6 bytes as ipv4", fi.FormatSockaddrIn, addrHex(t, cSockaddrs[1].hex)},
		{"ipv4 bytes as ipv6", fi.FormatSockaddrIn6, addrHex(t, cSockaddrs[0].hex)},
		{"truncated", fi.FormatSockaddrIn, addrHex(t, "02000fa07f000001")},
		{"other format", fi.FormatPSMX2, addrHex(t, "0102")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fi.AddrString(tc.format, tc.b)
			require.True(t, strings.HasPrefix(s, "<") && strings.HasSuffix(s, hex.EncodeToString(tc.b)+">"), s)
			_, _, err := fi.ParseAddr(s)
			require.ErrorIs(t, err, fi.EINVAL)
		})
	}
}

func TestParseAddr(t *testing.T) {
	requireLittleEndian(t)
	for _, tc := range []struct {
		in     string
		format fi.AddrFormat
		hex    string // for sockaddrs
		code   fi.Errno
	}{
		{in: "fi_sockaddr_in://127.0.0.1:4000", format: fi.FormatSockaddrIn, hex: cSockaddrs[0].hex},
		{in: "fi_sockaddr_in6://[::1]:4000", format: fi.FormatSockaddrIn6, hex: cSockaddrs[1].hex},
		{in: "fi_sockaddr_in6://[fe80::1%1]:4000", format: fi.FormatSockaddrIn6, hex: cSockaddrs[2].hex},
		{in: "fi_sockaddr://127.0.0.1:4000", format: fi.FormatSockaddrIn, hex: cSockaddrs[0].hex},
		{in: "fi_sockaddr://[::1]:4000", format: fi.FormatSockaddrIn6, hex: cSockaddrs[1].hex},
		{in: "fi_sockaddr_in://127.0.0.1", format: fi.FormatSockaddrIn, hex: "020000007f0000010000000000000000"},
		{in: "fi_sockaddr_in://127.0.0.1:", format: fi.FormatSockaddrIn, hex: "020000007f0000010000000000000000"},
		{in: "fi_sockaddr_in6://[::1]", format: fi.FormatSockaddrIn6, hex: "0a000000000000000000000000000000000000000000000100000000"},
		{in: "fi_shm://name", format: fi.FormatStr},
		{in: "fi_addr_str://anything/at:all?x=1", format: fi.FormatStr},
		{in: "fi_sockaddr_in://localhost:4000", code: fi.EINVAL},
		{in: "fi_sockaddr_in://[127.0.0.1]:4000", code: fi.EINVAL},
		{in: "fi_sockaddr_in://::1:4000", code: fi.EINVAL},
		{in: "fi_sockaddr_in://127.0.0.1:65536", code: fi.EINVAL},
		{in: "fi_sockaddr_in://127.0.0.1:-1", code: fi.EINVAL},
		{in: "fi_sockaddr_in://127.0.0.1:80/x", code: fi.EINVAL},
		{in: "fi_sockaddr_in://10.31.6.12:7471?qos=3", code: fi.EINVAL},
		{in: "fi_sockaddr_in6://[::1]:4000", format: fi.FormatSockaddrIn6, hex: cSockaddrs[1].hex},
		{in: "fi_sockaddr_in6://[::1", code: fi.EINVAL},
		{in: "fi_sockaddr_in6://[::1]x", code: fi.EINVAL},
		{in: "fi_sockaddr_in6://127.0.0.1:1", code: fi.EINVAL},
		{in: "fi_sockaddr_in6://::1", code: fi.EINVAL},
		{in: "fi_sockaddr_in://", code: fi.EINVAL},
		{in: "fi_addr_psmx2://1:2", code: fi.EOPNOTSUPP},
		{in: "127.0.0.1:4000", code: fi.EINVAL},
		{in: "://x", code: fi.EINVAL},
		{in: "1fi://x", code: fi.EINVAL},
		{in: "fi_shm://a\x00b", code: fi.EINVAL},
		{in: "", code: fi.EINVAL},
	} {
		t.Run(tc.in, func(t *testing.T) {
			f, b, err := fi.ParseAddr(tc.in)
			if tc.code != 0 {
				require.ErrorIs(t, err, tc.code)
				require.Equal(t, tc.code, fi.Code(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.format, f)
			if tc.format == fi.FormatStr {
				require.Equal(t, []byte(tc.in), b)
			} else {
				require.Equal(t, addrHex(t, tc.hex), b)
			}
		})
	}
}

func FuzzParseAddr(f *testing.F) {
	for _, tc := range cSockaddrs {
		f.Add(tc.str)
	}
	for _, s := range []string{
		"fi_sockaddr://10.31.6.12:7471", "fi_sockaddr_in6://[fe80::6:12]:7471",
		"fi_sockaddr_in6://[::ffff:1.2.3.4]:1", "fi_shm://x", "fi_addr_str://a:b/c?d=e",
		"fi_sockaddr_in://1.2.3.4:", "fi_sockaddr_in6://[fe80::1%4294967295]:65535",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		format, b, err := fi.ParseAddr(s)
		if err != nil {
			require.NotEqual(t, fi.EOTHER, fi.Code(err), "errors carry a code")
			return
		}
		str := fi.AddrString(format, b)
		format2, b2, err := fi.ParseAddr(str)
		require.NoError(t, err, "AddrString gave %q", str)
		require.Equal(t, format, format2, "format of %q", str)
		require.Equal(t, b, b2, "bytes of %q", str)
	})
}

func TestResolveAddr(t *testing.T) {
	requireLittleEndian(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name          string
		format        fi.AddrFormat
		node, service string
		flags         fi.Flags
		want          string // AddrString of the result, or the FI_ADDR_STR bytes
		code          fi.Errno
	}{
		{name: "numeric ipv4", format: fi.FormatSockaddrIn, node: "127.0.0.1", service: "4000", want: "fi_sockaddr_in://127.0.0.1:4000"},
		{name: "numeric ipv6", format: fi.FormatSockaddrIn6, node: "::1", service: "4000", want: "fi_sockaddr_in6://[::1]:4000"},
		{name: "sockaddr takes either", format: fi.FormatSockaddr, node: "::1", service: "4000", want: "fi_sockaddr_in6://[::1]:4000"},
		{name: "unspec takes either", format: fi.FormatUnspec, node: "10.0.0.1", want: "fi_sockaddr_in://10.0.0.1:0"},
		{name: "mapped ipv4 for ipv6", format: fi.FormatSockaddrIn6, node: "::ffff:10.0.0.1", want: "fi_sockaddr_in6://[::ffff:10.0.0.1]:0"},
		{name: "mapped ipv4 for ipv4", format: fi.FormatSockaddrIn, node: "::ffff:10.0.0.1", want: "fi_sockaddr_in://10.0.0.1:0"},
		{name: "host name", format: fi.FormatSockaddrIn, node: "localhost", service: "4000", want: "fi_sockaddr_in://127.0.0.1:4000"},
		{name: "service name", format: fi.FormatSockaddrIn, node: "127.0.0.1", service: "http", want: "fi_sockaddr_in://127.0.0.1:80"},
		{name: "numeric host flag", format: fi.FormatSockaddrIn, node: "127.0.0.1", flags: fi.FlagNumericHost, want: "fi_sockaddr_in://127.0.0.1:0"},
		{name: "no node, source", format: fi.FormatSockaddrIn, service: "4000", flags: fi.FlagSource, want: "fi_sockaddr_in://0.0.0.0:4000"},
		{name: "no node, source ipv6", format: fi.FormatSockaddrIn6, service: "4000", flags: fi.FlagSource, want: "fi_sockaddr_in6://[::]:4000"},
		{name: "no node, destination", format: fi.FormatSockaddr, service: "4000", want: "fi_sockaddr_in://127.0.0.1:4000"},
		{name: "no node, destination ipv6", format: fi.FormatSockaddrIn6, service: "4000", want: "fi_sockaddr_in6://[::1]:4000"},
		{name: "uri node", format: fi.FormatSockaddrIn, node: "fi_sockaddr_in://1.2.3.4:5", want: "fi_sockaddr_in://1.2.3.4:5"},
		{name: "uri node for sockaddr", format: fi.FormatSockaddr, node: "fi_sockaddr_in6://[::2]:5", want: "fi_sockaddr_in6://[::2]:5"},
		{name: "addr str", format: fi.FormatStr, node: "fi_shm://x", want: "fi_shm://x"},
		{name: "addr str of a plain name", format: fi.FormatStr, node: "x", want: "x"},

		{name: "numeric host flag rejects a name", format: fi.FormatSockaddrIn, node: "localhost", flags: fi.FlagNumericHost, code: fi.EINVAL},
		{name: "ipv4 node for ipv6", format: fi.FormatSockaddrIn6, node: "127.0.0.1", code: fi.ENODATA},
		{name: "ipv6 node for ipv4", format: fi.FormatSockaddrIn, node: "::1", code: fi.ENODATA},
		{name: "bad service", format: fi.FormatSockaddrIn, node: "127.0.0.1", service: "no-such-service-gofabric", code: fi.ENODATA},
		{name: "port out of range", format: fi.FormatSockaddrIn, node: "127.0.0.1", service: "70000", code: fi.EINVAL},
		{name: "uri node with service", format: fi.FormatSockaddrIn, node: "fi_sockaddr_in://1.2.3.4:5", service: "6", code: fi.EINVAL},
		{name: "uri node of other family", format: fi.FormatSockaddrIn, node: "fi_sockaddr_in6://[::1]:5", code: fi.EINVAL},
		{name: "addr str with service", format: fi.FormatStr, node: "fi_shm://x", service: "1", code: fi.EINVAL},
		{name: "addr str without node", format: fi.FormatStr, code: fi.EINVAL},
		{name: "unresolvable format", format: fi.FormatPSMX2, node: "127.0.0.1", code: fi.EINVAL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := fi.ResolveAddr(ctx, tc.format, tc.node, tc.service, tc.flags)
			if tc.code != 0 {
				require.ErrorIs(t, err, tc.code)
				require.Equal(t, tc.code, fi.Code(err))
				return
			}
			require.NoError(t, err)
			if tc.format == fi.FormatStr {
				require.Equal(t, tc.want, string(b))
				return
			}
			require.Equal(t, tc.want, fi.AddrString(fi.FormatSockaddr, b))
		})
	}
	t.Run("cancelled lookup", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := fi.ResolveAddr(cctx, fi.FormatSockaddrIn, "gofabric-test.invalid", "", 0)
		require.ErrorIs(t, err, fi.ECANCELED)
		require.ErrorIs(t, err, context.Canceled)
	})
}

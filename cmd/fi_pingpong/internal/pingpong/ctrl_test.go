//go:build linux

package pingpong

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// ctrlPair returns a connected server and client Ctrl over loopback.
func ctrlPair(t testing.TB) (server, client *Ctrl) {
	t.Helper()
	ctx := context.Background()
	addrc := make(chan net.Addr, 1)
	type res struct {
		c   *Ctrl
		err error
	}
	done := make(chan res, 1)
	go func() {
		c, err := ListenCtrl(ctx, 0, false, func(a net.Addr) { addrc <- a })
		done <- res{c, err}
	}()
	port := uint16((<-addrc).(*net.TCPAddr).Port)
	client, err := DialCtrl(ctx, "127.0.0.1", port, 0, false)
	require.NoError(t, err)
	r := <-done
	require.NoError(t, r.err)
	t.Cleanup(func() { client.Close(); r.c.Close() })
	return r.c, client
}

// rawPair returns a Ctrl of the given side over loopback and the raw
// connection of its peer.
func rawPair(t testing.TB, client bool) (*Ctrl, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	a, err := net.Dial("tcp4", ln.Addr().String())
	require.NoError(t, err)
	b, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { a.Close(); b.Close() })
	return NewCtrl(a, client), b
}

func readHex(t testing.TB, c net.Conn, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := io.ReadFull(c, b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}

// TestCtrlGoPair runs every control message between a Go server and a Go
// client, in the order of an RDM run.
func TestCtrlGoPair(t *testing.T) {
	srv, cli := ctrlPair(t)
	srvName := unhex(t, "0200b54d7f000001 0000000000000000")
	six := make([]byte, 28)
	errc := make(chan error, 1)
	go func() {
		errc <- func() error {
			if err := srv.SendName(fi.FormatSockaddrIn, srvName); err != nil {
				return err
			}
			f, n, err := srv.RecvName()
			if err != nil {
				return err
			}
			if f != fi.FormatSockaddrIn6 || string(n) != string(six) {
				return errProto
			}
			for range 3 {
				if err := srv.Sync(); err != nil {
					return err
				}
				if n, err := srv.ExchangeCount(7); err != nil || n != 5 {
					return errProto
				}
			}
			return nil
		}()
	}()
	f, n, err := cli.RecvName()
	require.NoError(t, err)
	require.Equal(t, fi.FormatSockaddrIn, f)
	require.Equal(t, srvName, n)
	require.NoError(t, cli.SendName(fi.FormatSockaddrIn6, six))
	for range 3 {
		require.NoError(t, cli.Sync())
		acked, err := cli.ExchangeCount(5)
		require.NoError(t, err)
		require.Equal(t, 5, acked)
	}
	require.NoError(t, <-errc)
}

// TestCtrlBytes checks the bytes of each message against the capture of
// docs/wire-tcp.md, §1.4.
func TestCtrlBytes(t *testing.T) {
	name := unhex(t, "0200b54d7f0000010000000000000000")
	t.Run("server", func(t *testing.T) {
		srv, peer := rawPair(t, false)
		require.NoError(t, srv.SendName(fi.FormatSockaddrIn, name))
		require.Equal(t, "00000010"+"02000000"+"0200b54d7f0000010000000000000000", readHex(t, peer, 24))
		_, err := peer.Write([]byte("q\x00"))
		require.NoError(t, err)
		require.NoError(t, srv.Sync())
		require.Equal(t, "6100", readHex(t, peer, 2))
		_, err = peer.Write(unhex(t, "35000000000000000000"))
		require.NoError(t, err)
		n, err := srv.ExchangeCount(4)
		require.NoError(t, err)
		require.Equal(t, 5, n, "the server takes the client's count")
		require.Equal(t, "636e74206f6b00", readHex(t, peer, 7))
	})
	t.Run("client", func(t *testing.T) {
		cli, peer := rawPair(t, true)
		require.NoError(t, cli.SendName(fi.FormatSockaddrIn, name))
		require.Equal(t, "00000010"+"02000000"+"0200b54d7f0000010000000000000000", readHex(t, peer, 24))
		_, err := peer.Write([]byte("a\x00"))
		require.NoError(t, err)
		require.NoError(t, cli.Sync())
		require.Equal(t, "7100", readHex(t, peer, 2))
		_, err = peer.Write([]byte("cnt ok\x00"))
		require.NoError(t, err)
		n, err := cli.ExchangeCount(5)
		require.NoError(t, err)
		require.Equal(t, 5, n)
		require.Equal(t, "35000000000000000000", readHex(t, peer, 10))
	})
}

func TestCtrlErrors(t *testing.T) {
	t.Run("name too long", func(t *testing.T) {
		c, peer := rawPair(t, true)
		_, err := peer.Write(unhex(t, "00000401"))
		require.NoError(t, err)
		_, _, err = c.RecvName()
		require.ErrorIs(t, err, fi.EINVAL)
		require.ErrorIs(t, c.SendName(fi.FormatStr, make([]byte, 1025)), fi.EINVAL)
	})
	t.Run("peer closed", func(t *testing.T) {
		c, peer := rawPair(t, true)
		_, err := peer.Write(unhex(t, "000000"))
		require.NoError(t, err)
		peer.Close()
		_, _, err = c.RecvName()
		require.ErrorIs(t, err, fi.ECONNABORTED)
		require.Equal(t, 103, ExitStatus(err))
	})
	t.Run("bad sync reply", func(t *testing.T) {
		c, peer := rawPair(t, true)
		_, err := peer.Write([]byte("b\x00"))
		require.NoError(t, err)
		require.ErrorIs(t, c.Sync(), fi.Errno(unix.EPROTO))
	})
	t.Run("bad sync request", func(t *testing.T) {
		c, peer := rawPair(t, false)
		_, err := peer.Write([]byte("a\x00"))
		require.NoError(t, err)
		require.ErrorIs(t, c.Sync(), fi.Errno(unix.EPROTO))
	})
	t.Run("bad count ok", func(t *testing.T) {
		c, peer := rawPair(t, true)
		_, err := peer.Write([]byte("cnt no\x00"))
		require.NoError(t, err)
		_, err = c.ExchangeCount(1)
		require.ErrorIs(t, err, fi.Errno(unix.EPROTO))
	})
	t.Run("refused", func(t *testing.T) {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		require.NoError(t, err)
		port := uint16(ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
		_, err = DialCtrl(context.Background(), "127.0.0.1", port, 0, false)
		require.ErrorIs(t, err, fi.ECONNREFUSED)
		require.Equal(t, 111, ExitStatus(err))
	})
	t.Run("accept canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		_, err := ListenCtrl(ctx, 0, false, func(net.Addr) { cancel() })
		require.ErrorIs(t, err, fi.ECANCELED)
	})
}

func TestParseCount(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"5\x00\x00\x00\x00\x00\x00\x00\x00\x00", 5, true},
		{"60422\x00\x00\x00\x00\x00", 60422, true},
		{"0\x00\x00\x00\x00\x00\x00\x00\x00\x00", 0, true},
		{"2147483647", 2147483647, true},
		{"2147483648", 0, false},
		{"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 0, false},
		{"5\x005\x00\x00\x00\x00\x00\x00\x00", 0, false},
		{"-1\x00\x00\x00\x00\x00\x00\x00\x00", 0, false},
		{"+1\x00\x00\x00\x00\x00\x00\x00\x00", 0, false},
		{"1 \x00\x00\x00\x00\x00\x00\x00\x00", 0, false},
	}
	for _, tt := range tests {
		t.Run(hex.EncodeToString([]byte(tt.in)), func(t *testing.T) {
			n, err := ParseCount([]byte(tt.in))
			if !tt.ok {
				require.ErrorIs(t, err, fi.Errno(unix.EPROTO))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, n)
		})
	}
}

// FuzzParseCount feeds hostile count messages: a message either fails
// with EPROTO or decodes to a count that encodes and decodes to itself.
func FuzzParseCount(f *testing.F) {
	f.Add([]byte("5\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("2147483647"))
	f.Add([]byte("\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseCount(b)
		if err != nil {
			require.ErrorIs(t, err, errProto)
			return
		}
		require.GreaterOrEqual(t, n, 0)
		var enc [CountLen]byte
		copy(enc[:], strconv.Itoa(n))
		m, err := ParseCount(enc[:])
		require.NoError(t, err)
		require.Equal(t, n, m)
	})
}

//go:build linux

package tcp

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/fi"
)

// FuzzCMHeader checks parseCMHeader on hostile input: it never panics, fails
// only with fi.EIO, and whatever it accepts lies within the input and
// re-encodes to the same bytes. Seeds: the captured CM messages.
func FuzzCMHeader(f *testing.F) {
	for _, c := range cmCases {
		f.Add(unhex(f, c.wire))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseCMHeader(b)
		if err != nil {
			require.Equal(t, fi.EIO, fi.Code(err), "%v", err)
			return
		}
		require.LessOrEqual(t, h.len(), len(b))
		require.LessOrEqual(t, len(h.data), cmMaxDataSize)
		out, err := appendCM(nil, &h)
		require.NoError(t, err)
		require.Equal(t, b[:h.len()], out)

		var buf [cmMaxMsgSize]byte
		r := bytes.NewReader(b)
		got, err := readCM(r, &buf)
		require.NoError(t, err)
		require.Equal(t, h, got)
		require.Equal(t, len(b)-h.len(), r.Len())
	})
}

// FuzzDataHeader checks parseDataHeader on hostile input, in both byte
// orders and under a payload limit: it never panics and returns only bare
// fi.EIO, fi.EMSGSIZE or fi.EAGAIN (with the length it needs, more than it
// got and at most maxDataHeaderSize); a header it accepts lies within the
// input, has size >= its length and a payload within the limit, and
// re-encodes to the same bytes. Seeds: the captured data headers.
func FuzzDataHeader(f *testing.F) {
	for _, c := range dataCases {
		f.Add(unhex(f, c.wire), false, uint64(0))
		f.Add(unhex(f, c.wire), true, uint64(1<<20))
	}
	f.Fuzz(func(t *testing.T, b []byte, bigEndian bool, maxPayload uint64) {
		c := dataCodec{bigEndian: bigEndian, maxPayload: maxPayload}
		var h dataHeader
		n, err := c.parseDataHeader(b, &h)
		switch err {
		case nil:
		case fi.EAGAIN:
			require.Greater(t, n, len(b))
			require.LessOrEqual(t, n, maxDataHeaderSize)
			return
		case fi.EIO, fi.EMSGSIZE:
			return
		default:
			t.Fatalf("unexpected error %#v", err)
		}
		require.LessOrEqual(t, n, len(b))
		require.LessOrEqual(t, n, maxDataHeaderSize)
		require.Equal(t, n, h.headerLen())
		require.GreaterOrEqual(t, h.size, uint64(n))
		require.LessOrEqual(t, h.payloadLen(), c.limit())
		if h.op == opWrite {
			require.LessOrEqual(t, h.payloadLen(), h.rmaLen())
		}
		if h.op == opReadReq {
			require.LessOrEqual(t, h.rmaLen(), c.limit())
		}
		var out [maxDataHeaderSize]byte
		require.Equal(t, n, c.putDataHeader(out[:], &h))
		require.Equal(t, b[:n], out[:n])
	})
}

//go:build linux

package tcp

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/fi"
)

// FuzzRxmHeader checks parseRxmHeader and, on what follows a type 2 or 7
// header, parseRxmRndv on hostile input: they never panic and fail only
// with bare fi.EIO; a header they accept re-encodes to the same 64 bytes
// (the op version, which is not kept, as 2), and a descriptor to the same
// 104 bytes with the entries past count and the padding zeroed; an accepted
// request's descriptor adds up to the header's size. Seeds: the rxm packet
// cases, header and body concatenated.
func FuzzRxmHeader(f *testing.F) {
	for _, c := range rxmCases {
		f.Add(append(unhex(f, c.wire), unhex(f, c.desc)...), c.rest)
	}
	f.Fuzz(func(t *testing.T, b []byte, rest uint64) {
		var h rxmHeader
		if err := parseRxmHeader(b, rest, &h); err != nil {
			require.Equal(t, fi.EIO, err)
			return
		}
		want := bytes.Clone(b[:rxmHeaderSize])
		want[32] = rxmOpVersion
		var out [rxmHeaderSize]byte
		require.Equal(t, rxmHeaderSize, putRxmHeader(out[:], &h))
		require.Equal(t, want, out[:])

		if h.typ != rxmRndvReq && h.typ != rxmRndvWriteData {
			return
		}
		size := h.size
		if h.typ == rxmRndvWriteData {
			size = rxmRndvAnyLength
		}
		body := b[rxmHeaderSize:min(len(b), rxmHeaderSize+rxmRndvDescSize)]
		var d rxmRndvDesc
		if err := parseRxmRndv(body, size, &d); err != nil {
			require.Equal(t, fi.EIO, err)
			return
		}
		require.GreaterOrEqual(t, d.count, uint8(1))
		require.LessOrEqual(t, d.count, uint8(rxmRndvIOVLimit))
		if h.typ == rxmRndvReq {
			require.Equal(t, h.size, d.len())
		}
		wantDesc := make([]byte, rxmRndvDescSize)
		copy(wantDesc, body[:rmaIOVSize*int(d.count)])
		wantDesc[rxmRndvIOVLimit*rmaIOVSize] = d.count
		var dout [rxmRndvDescSize]byte
		require.Equal(t, rxmRndvDescSize, putRxmRndv(dout[:], &d))
		require.Equal(t, wantDesc, dout[:])
	})
}

// FuzzRxmCMRecord checks the CM record parsers on hostile input, read as
// each kind of record: they never panic; the bare parsers fail only with
// fi.EIO, exactly when their wrapping twins fail, which wrap fi.EIO; an
// accepted connect or accept record re-encodes to the same bytes with the
// padding zeroed; a reject record of version 1 re-encodes to its first 2
// bytes, any other reads as refused. Seeds: the captured records.
func FuzzRxmCMRecord(f *testing.F) {
	for _, s := range []string{rxmConnectCapture, rxmAcceptCapture, rxmRejectCapture} {
		f.Add(unhex(f, s), uint32(rxmEagerLimit))
	}
	f.Fuzz(func(t *testing.T, b []byte, eagerLimit uint32) {
		var cr, cr2 rxmConnectRecord
		err := parseRxmConnect(b, eagerLimit, &cr)
		werr := checkRxmConnect(b, eagerLimit, &cr2)
		if err != nil {
			require.Equal(t, fi.EIO, err)
			require.Equal(t, fi.EIO, fi.Code(werr), "%v", werr)
		} else {
			require.NoError(t, werr)
			require.Equal(t, cr, cr2)
			require.Equal(t, eagerLimit, cr.eagerLimit)
			want := bytes.Clone(b)
			want[7] = 0
			require.Equal(t, want, appendRxmConnect(nil, &cr))
		}

		var ar, ar2 rxmAcceptRecord
		err = parseRxmAccept(b, &ar)
		werr = checkRxmAccept(b, &ar2)
		if err != nil {
			require.Equal(t, fi.EIO, err)
			require.Equal(t, fi.EIO, fi.Code(werr), "%v", werr)
		} else {
			require.NoError(t, werr)
			require.Equal(t, ar, ar2)
			want := bytes.Clone(b)
			clear(want[13:])
			require.Equal(t, want, appendRxmAccept(nil, &ar))
		}

		reason := parseRxmReject(b)
		if len(b) >= rxmRejectSize && b[0] == rxmCMVersion {
			require.Equal(t, b[:rxmRejectSize], appendRxmReject(nil, reason))
		} else {
			require.Equal(t, rxmRejectRefused, reason)
		}
	})
}

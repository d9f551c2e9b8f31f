package rxmwire

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/fi"
)

// FuzzRxmHeader checks ParseHeader and, on what follows a type 2 or 7
// header, ParseRndv on hostile input: they never panic and fail only
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
		var h Header
		if err := ParseHeader(b, rest, &h); err != nil {
			require.Equal(t, fi.EIO, err)
			return
		}
		want := bytes.Clone(b[:HeaderSize])
		want[32] = OpVersion
		var out [HeaderSize]byte
		require.Equal(t, HeaderSize, PutHeader(out[:], &h))
		require.Equal(t, want, out[:])

		if h.Type != TypeRndvReq && h.Type != TypeRndvWriteData {
			return
		}
		size := h.Size
		if h.Type == TypeRndvWriteData {
			size = RndvAnyLength
		}
		body := b[HeaderSize:min(len(b), HeaderSize+RndvDescSize)]
		var d RndvDesc
		if err := ParseRndv(body, size, &d); err != nil {
			require.Equal(t, fi.EIO, err)
			return
		}
		require.GreaterOrEqual(t, d.Count, uint8(1))
		require.LessOrEqual(t, d.Count, uint8(RndvIOVLimit))
		if h.Type == TypeRndvReq {
			require.Equal(t, h.Size, d.Len())
		}
		wantDesc := make([]byte, RndvDescSize)
		copy(wantDesc, body[:RMAIOVSize*int(d.Count)])
		wantDesc[RndvIOVLimit*RMAIOVSize] = d.Count
		var dout [RndvDescSize]byte
		require.Equal(t, RndvDescSize, PutRndv(dout[:], &d))
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
		f.Add(unhex(f, s), uint32(EagerLimit))
	}
	f.Fuzz(func(t *testing.T, b []byte, eagerLimit uint32) {
		var cr, cr2 ConnectRecord
		err := ParseConnect(b, eagerLimit, &cr)
		werr := CheckConnect(b, eagerLimit, &cr2)
		if err != nil {
			require.Equal(t, fi.EIO, err)
			require.Equal(t, fi.EIO, fi.Code(werr), "%v", werr)
		} else {
			require.NoError(t, werr)
			require.Equal(t, cr, cr2)
			require.Equal(t, eagerLimit, cr.EagerLimit)
			want := bytes.Clone(b)
			want[7] = 0
			require.Equal(t, want, AppendConnect(nil, &cr))
		}

		var ar, ar2 AcceptRecord
		err = ParseAccept(b, &ar)
		werr = CheckAccept(b, &ar2)
		if err != nil {
			require.Equal(t, fi.EIO, err)
			require.Equal(t, fi.EIO, fi.Code(werr), "%v", werr)
		} else {
			require.NoError(t, werr)
			require.Equal(t, ar, ar2)
			want := bytes.Clone(b)
			clear(want[13:])
			require.Equal(t, want, AppendAccept(nil, &ar))
		}

		reason := ParseReject(b)
		if len(b) >= RejectSize && b[0] == CMVersion {
			require.Equal(t, b[:RejectSize], AppendReject(nil, reason))
		} else {
			require.Equal(t, RejectRefused, reason)
		}
	})
}

//go:build linux

package tcp

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/internal/rxmwire"
)

// TestRxmRecordsInCMCaptures reads the private data of the tcp CM
// messages captured from C fi_pingpong -p tcp -e rdm (docs/wire-tcp.md,
// §3.2) as rxm records, as rxm over this provider does, and re-encodes
// them.
func TestRxmRecordsInCMCaptures(t *testing.T) {
	data := func(name string) []byte {
		for _, c := range cmCases {
			if c.name == name {
				h, err := parseCMHeader(unhex(t, c.wire))
				require.NoError(t, err)
				return h.data
			}
		}
		t.Fatalf("no cm case %q", name)
		return nil
	}
	req := data("rxm connect record")
	var cr rxmwire.ConnectRecord
	require.NoError(t, rxmwire.ParseConnect(req, rxmwire.EagerLimit, &cr))
	require.Equal(t, rxmwire.ConnectRecord{Port: 35995, FlowCtrl: rxmwire.FlowCtrlOff, EagerLimit: rxmwire.EagerLimit,
		RxSize: rxmwire.RxSize, ConnID: rxmwire.MakeConnID(0x6184, 0)}, cr)
	require.Equal(t, req, rxmwire.AppendConnect(nil, &cr))

	acc := data("rxm accept record")
	var ar rxmwire.AcceptRecord
	require.NoError(t, rxmwire.ParseAccept(acc, &ar))
	require.Equal(t, rxmwire.MakeConnID(0x6140, 0), ar.ConnID)
	require.Equal(t, acc, rxmwire.AppendAccept(nil, &ar))

	require.Equal(t, rxmwire.RejectRefused, rxmwire.ParseReject(data("rxm reject record")))
}

// TestRxmOverTCP decodes the captured 184-byte rendezvous request and
// the 144-byte eager ping as rxm over this provider reads them: tcp
// header, rxm header, body.
func TestRxmOverTCP(t *testing.T) {
	var c dataCodec
	opHdr := "02 00 00 00 00 00 00 00"
	for _, m := range []struct {
		tcp, rxm, body string
	}{
		{"03 00 00 00 00 00 10 00 b8 00 00 00 00 00 00 00",
			"04 02" + zeros(30) + opHdr + "00 60 00 00 00 00 00 00" + zeros(16),
			zeros(8) + "00 60 00 00 00 00 00 00 | 00 00 00 80 00 00 00 00" + zeros(72) + "01" + zeros(7)},
		{"03 00 00 00 00 00 10 00 90 00 00 00 00 00 00 00",
			"04 00" + zeros(30) + opHdr + "40 00 00 00 00 00 00 00" + zeros(16),
			zeros(64)},
	} {
		msg := unhex(t, m.tcp+m.rxm+m.body)
		var th dataHeader
		n, err := c.parseDataHeader(msg, &th)
		require.NoError(t, err)
		require.Equal(t, uint64(len(msg)-n), th.payloadLen())
		payload := msg[n:]
		var h rxmwire.Header
		require.NoError(t, rxmwire.ParseHeader(payload, th.payloadLen()-rxmwire.HeaderSize, &h))
		body := payload[rxmwire.HeaderSize:]
		if h.Type != rxmwire.TypeRndvReq {
			require.Equal(t, h.Size, uint64(len(body)))
			continue
		}
		var d rxmwire.RndvDesc
		require.NoError(t, rxmwire.ParseRndv(body, h.Size, &d))
		require.Equal(t, []rxmwire.RMAIOV{{Addr: 0, Len: 0x6000, Key: 0x80000000}}, d.IOVs())
	}
}

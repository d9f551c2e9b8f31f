//go:build verbs && cgo

package verbs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// offerReason says what this build found when it offers nothing.
func offerReason() string {
	reason, _ := offer()
	return reason
}

// driverHint is the advice when the host has no RDMA device.
const driverHint = "load an RDMA driver; without RDMA hardware, Soft-RoCE: rdma link add rxe0 type rxe netdev <interface>"

// offer says what this build found when it offers nothing, and what to do
// about it.
func offer() (reason, hint string) {
	devs, err := listDevices()
	switch {
	case err != nil:
		return fmt.Sprintf("no RDMA device: %v", err), driverHint
	case len(devs) == 0:
		return "no RDMA device (ibv_get_device_list found none)", driverHint
	}
	var parts []string
	for _, d := range devs {
		for _, p := range d.ports {
			state := "down"
			if p.active {
				state = "active"
			}
			parts = append(parts, fmt.Sprintf("%s port %d (%s, %s, MTU %d)", d.name, p.num, p.linkLayer, state, p.mtu))
		}
	}
	return "found " + strings.Join(parts, ", ") + "; none has an active port with an IP address rdma_cm binds to",
		"bring up the network interface of an RDMA port and give it an IP address"
}

// GetInfo returns the provider's FI_EP_MSG entries that match node,
// service, flags and hints (fi_getinfo; vrb_getinfo): msgEntries()
// filtered by kit.MatchInfo. An entry left without a source address
// (hints without one, or node as the destination) keeps its device's,
// as C's rdma_getaddrinfo picks one. FI_EP_RDM and FI_EP_DGRAM are
// declined with the reason.
func (provider) GetInfo(ctx context.Context, node, service string, flags fi.Flags, hints *fi.Info) ([]*fi.Info, error) {
	if hints != nil && hints.EPAttr != nil {
		switch hints.EPAttr.Type {
		case fi.EPTypeUnspec, fi.EPTypeMsg:
		case fi.EPTypeDgram:
			return udGetInfo(ctx, node, service, flags, hints)
		default:
			return nil, declined(fmt.Sprintf("ep type %v is not implemented (the verbs provider offers FI_EP_MSG and FI_EP_DGRAM)", hints.EPAttr.Type), "")
		}
	}
	entries, err := msgEntries()
	if err != nil || len(entries) == 0 {
		return nil, declined(offer())
	}
	var out []*fi.Info
	nm := &fi.NoMatchError{}
	for _, e := range entries {
		switch {
		case hints == nil:
		case !declaresRxCQData(hints):
			e = withoutCQData(e)
		case hints.Mode&fi.ModeRxCQData == 0:
			// Declared in the rx mode only: C then leaves the bit out of
			// the entry's mode (vrb_alter_info), and so do we.
			e = e.Clone()
			e.Mode &^= fi.ModeRxCQData
		}
		got, err := kit.MatchInfo(ctx, provName, []*fi.Info{e}, node, service, flags, hints)
		var m *fi.NoMatchError
		switch {
		case errors.As(err, &m):
			for _, r := range m.Reasons {
				if !containsReason(nm.Reasons, r) {
					nm.Reasons = append(nm.Reasons, r)
				}
			}
			continue
		case err != nil:
			return nil, err
		}
		for _, g := range got {
			if g.SrcAddr == nil {
				g.SrcAddr = append([]byte(nil), e.SrcAddr...)
			}
		}
		out = append(out, got...)
	}
	if hints == nil || hints.EPAttr == nil || hints.EPAttr.Type == fi.EPTypeUnspec {
		// Then the FI_EP_DGRAM entries, as C lists them after the MSG ones.
		if ud, err := udGetInfo(ctx, node, service, flags, hints); err == nil {
			out = append(out, ud...)
		}
	}
	if len(out) == 0 {
		return nil, nm
	}
	return out, nil
}

// declaresRxCQData reports whether hints declare FI_RX_CQ_DATA (in the
// mode or the rx mode) or ask for remote CQ data (cq_data_size). Only then
// does an entry require the mode and carry CQ data, as in C
// (vrb_check_rx_attr, vrb_alter_info): an application such as fi_pingpong
// that declares neither gets entries without either.
func declaresRxCQData(hints *fi.Info) bool {
	return hints.Mode&fi.ModeRxCQData != 0 ||
		hints.RxAttr != nil && hints.RxAttr.Mode&fi.ModeRxCQData != 0 ||
		hints.DomainAttr != nil && hints.DomainAttr.CQDataSize != 0
}

// withoutCQData returns a copy of e that neither requires FI_RX_CQ_DATA nor
// offers remote CQ data.
func withoutCQData(e *fi.Info) *fi.Info {
	c := e.Clone()
	c.Mode &^= fi.ModeRxCQData
	c.RxAttr.Mode &^= fi.ModeRxCQData
	c.DomainAttr.CQDataSize = 0
	return c
}

func containsReason(rs []fi.ProviderReason, r fi.ProviderReason) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

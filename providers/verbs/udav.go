//go:build verbs && cgo

package verbs

import (
	"encoding/binary"
	"os"
	"strconv"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// udNameLen is the size of an FI_ADDR_IB_UD address: C libfabric's
// struct ofi_ib_ud_ep_name (32 bytes).
const udNameLen = 32

// udName is a UD endpoint's address (FI_ADDR_IB_UD; C's struct
// ofi_ib_ud_ep_name, byte for byte, so that Go and C peers exchange
// fi_getname's bytes): the port's GID (bytes 0-15), the queue pair number
// (16-19), the LID (20-21), the P_Key (22-23, network order as
// ibv_query_pkey gives it), a name server service (24-25, 0: any), the
// service level (26) and 5 bytes of padding; the integers in host order.
type udName struct {
	gid     [16]byte
	qpn     uint32
	lid     uint16
	pkey    [2]byte
	service uint16
	sl      uint8
}

// bytes encodes n.
func (n *udName) bytes() [udNameLen]byte {
	var b [udNameLen]byte
	copy(b[:16], n.gid[:])
	binary.NativeEndian.PutUint32(b[16:], n.qpn)
	binary.NativeEndian.PutUint16(b[20:], n.lid)
	copy(b[22:24], n.pkey[:])
	binary.NativeEndian.PutUint16(b[24:], n.service)
	b[26] = n.sl
	return b
}

// parseUDName decodes an FI_ADDR_IB_UD address: fi.EINVAL when b is not
// one (its length is not 32 bytes).
func parseUDName(b []byte) (udName, error) {
	var n udName
	if len(b) != udNameLen {
		return n, errors.Wrapf(fi.EINVAL, "verbs: %d-byte address, an FI_ADDR_IB_UD address has %d", len(b), udNameLen)
	}
	copy(n.gid[:], b[:16])
	n.qpn = binary.NativeEndian.Uint32(b[16:])
	n.lid = binary.NativeEndian.Uint16(b[20:])
	copy(n.pkey[:], b[22:24])
	n.service = binary.NativeEndian.Uint16(b[24:])
	n.sl = b[26]
	return n, nil
}

// udQKey is the qkey of every UD queue pair, and of the sends to them:
// C's verbs provider's constant (vrb_create_dgram_ep,
// vrb_dgram_ep_set_addr), so that Go and C endpoints exchange datagrams.
const udQKey = 0x11111111

// gidIndex is the GID index of port 1 that the endpoints' names and
// address handles use: FI_VERBS_GID_IDX, 0 by default, as in C
// (vrb_gl_data.gid_idx). Both sides of a conversation must use the same
// kind of GID (on RoCE v2, index 0 is the link-local IPv6 one).
func gidIndex() int {
	if v, err := strconv.Atoi(os.Getenv("FI_VERBS_GID_IDX")); err == nil && v >= 0 {
		return v
	}
	return 0
}

// udDomain is what a domain keeps for its datagram endpoints: one address
// handle per distinct FI_ADDR_IB_UD address inserted into its address
// vectors (ibv_create_ah at fi_av_insert, as C's verbs AV does), looked up
// by the data path without allocating, and freed with the domain.
type udDomain struct {
	pd     pdC
	gidIdx int
	mu     sync.RWMutex
	ahs    map[string]ahC // by the address's bytes
}

// ud returns the domain's udDomain, made at its first use.
func (d *domain) udState() *udDomain {
	d.udOnce.Do(func() { d.ud = &udDomain{pd: d.pd, gidIdx: gidIndex(), ahs: map[string]ahC{}} })
	return d.ud
}

// addAH makes sure addr has an address handle: the AV's check at insert.
func (u *udDomain) addAH(addr []byte) error {
	n, err := parseUDName(addr)
	if err != nil {
		return err
	}
	u.mu.RLock()
	_, ok := u.ahs[string(addr)]
	u.mu.RUnlock()
	if ok {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.ahs[string(addr)]; ok {
		return nil
	}
	ah, err := createAH(u.pd, &n, u.gidIdx)
	if err != nil {
		if fi.Code(err) == fi.EADDRNOTAVAIL {
			return errors.Wrap(fi.EADDRNOTAVAIL, "verbs: av insert: the address has neither a GID nor a LID")
		}
		return err
	}
	u.ahs[string(addr)] = ah
	return nil
}

// ah returns addr's address handle, nil when it has none; it does not
// allocate.
func (u *udDomain) ah(addr []byte) ahC {
	u.mu.RLock()
	ah := u.ahs[string(addr)]
	u.mu.RUnlock()
	return ah
}

// close frees the address handles (ibv_destroy_ah).
func (u *udDomain) close() {
	if u == nil {
		return
	}
	u.mu.Lock()
	for k, ah := range u.ahs {
		destroyAH(ah)
		delete(u.ahs, k)
	}
	u.mu.Unlock()
}

// OpenAV opens an address vector of FI_ADDR_IB_UD addresses for the
// domain's datagram endpoints (fi_av_open; vrb_dgram_av_open):
// kit.DomainAV's table (FI_AV_MAP and FI_AV_TABLE both give dense
// indexes), whose inserts also create each new address's address handle
// (ibv_create_ah). An address that is not 32 bytes gives fi.EINVAL, one
// with neither a GID nor a LID fi.EADDRNOTAVAIL. A domain opened for
// FI_EP_MSG has no address vectors (fi.ENOSYS).
func (d *domain) OpenAV(attr *fi.AVAttr) (fi.AV, error) {
	if info := d.Info(); info != nil && info.EPAttr != nil && info.EPAttr.Type == fi.EPTypeMsg {
		return nil, errors.Wrap(fi.ENOSYS, "verbs: av open: a domain of FI_EP_MSG endpoints has no address vectors (open the device's -dgram domain)")
	}
	if attr == nil {
		return nil, errors.Wrap(fi.EINVAL, "verbs: av open: nil attributes")
	}
	u := d.udState()
	return d.NewAV(attr, fi.FormatIBUD, u.addAH)
}

var _ fi.AVOpener = (*domain)(nil)

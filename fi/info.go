package fi

// Info describes a fabric service: what a provider offers or what an
// application asks for. It mirrors struct fi_info (fi_getinfo(3)); the
// linked list of C becomes a []*Info, and fi_dupinfo/fi_freeinfo become
// Clone and the garbage collector.
//
// As hints, the zero value of every field means "any", except Mode, whose
// zero value means the application supports no mode bits. A nil attribute
// pointer is the same as a zero attribute.
//
// An Info is a plain value: it is not safe for concurrent mutation, but any
// number of goroutines may read one.
type Info struct {
	Caps       Caps
	Mode       Mode
	AddrFormat AddrFormat
	// SrcAddr and DestAddr are addresses in the layout AddrFormat names:
	// struct sockaddr_in (16 bytes) and sockaddr_in6 (28 bytes) byte for byte
	// as in C, FI_ADDR_STR as the string's bytes (no terminating NUL).
	SrcAddr  []byte
	DestAddr []byte
	// Handle is set in the Info of a ConnReq event: it names the connection
	// request, and an endpoint opened from this Info accepts or rejects it
	// (fi_info.handle). For a passive endpoint it may name the endpoint to
	// listen on.
	Handle     Fid
	TxAttr     *TxAttr
	RxAttr     *RxAttr
	EPAttr     *EPAttr
	DomainAttr *DomainAttr
	FabricAttr *FabricAttr
	NIC        *NIC
}

// TxAttr mirrors struct fi_tx_attr: transmit context attributes.
type TxAttr struct {
	Caps        Caps
	Mode        Mode
	OpFlags     Flags
	MsgOrder    MsgOrder
	CompOrder   MsgOrder
	InjectSize  int
	Size        int
	IOVLimit    int
	RMAIOVLimit int
	TClass      TrafficClass
}

// RxAttr mirrors struct fi_rx_attr: receive context attributes.
type RxAttr struct {
	Caps              Caps
	Mode              Mode
	OpFlags           Flags
	MsgOrder          MsgOrder
	CompOrder         MsgOrder
	TotalBufferedRecv int
	Size              int
	IOVLimit          int
}

// EPAttr mirrors struct fi_ep_attr: endpoint attributes.
type EPAttr struct {
	Type            EPType
	Protocol        Protocol
	ProtocolVersion uint32
	MaxMsgSize      int
	MsgPrefixSize   int
	MaxOrderRAWSize int
	MaxOrderWARSize int
	MaxOrderWAWSize int
	MemTagFormat    uint64
	TxCtxCnt        int
	RxCtxCnt        int
	AuthKey         []byte
}

// DomainAttr mirrors struct fi_domain_attr: domain attributes.
type DomainAttr struct {
	// Domain, when set in hints, names an opened domain to reuse.
	Domain          Domain
	Name            string
	Threading       Threading
	ControlProgress Progress
	DataProgress    Progress
	ResourceMgmt    ResourceMgmt
	AVType          AVType
	MRMode          MRMode
	MRKeySize       int
	CQDataSize      int
	CQCnt           int
	EPCnt           int
	TxCtxCnt        int
	RxCtxCnt        int
	MaxEPTxCtx      int
	MaxEPRxCtx      int
	MaxEPStxCtx     int
	MaxEPSrxCtx     int
	CntrCnt         int
	MRIOVLimit      int
	Caps            Caps
	Mode            Mode
	AuthKey         []byte
	MaxErrData      int
	MRCnt           int
	TClass          TrafficClass
}

// FabricAttr mirrors struct fi_fabric_attr: fabric attributes.
type FabricAttr struct {
	// Fabric, when set in hints, names an opened fabric to reuse.
	Fabric Fabric
	Name   string
	// ProvName is the provider's name; layered providers are named
	// "core;utility", e.g. "tcp;ofi_rxm".
	ProvName    string
	ProvVersion Version
	APIVersion  Version
}

// NIC mirrors the parts of struct fid_nic that describe a network
// interface: its device and link attributes.
type NIC struct {
	DeviceName    string
	DeviceID      string
	DeviceVersion string
	VendorID      string
	Driver        string
	Firmware      string
	LinkAddress   string
	MTU           int
	Speed         int
	LinkState     LinkState
	NetworkType   string
}

// LinkState mirrors enum fi_link_state.
type LinkState int

// Link states.
const (
	LinkUnknown LinkState = iota // FI_LINK_UNKNOWN
	LinkDown                     // FI_LINK_DOWN
	LinkUp                       // FI_LINK_UP
)

// Clone returns a deep copy of i, like fi_dupinfo(3). Object references
// (Handle, DomainAttr.Domain, FabricAttr.Fabric) are shared, not copied.
// Clone of nil returns an Info with every attribute allocated, like
// fi_allocinfo(3).
func (i *Info) Clone() *Info {
	if i == nil {
		return &Info{TxAttr: &TxAttr{}, RxAttr: &RxAttr{}, EPAttr: &EPAttr{},
			DomainAttr: &DomainAttr{}, FabricAttr: &FabricAttr{}}
	}
	c := *i
	c.SrcAddr = cloneBytes(i.SrcAddr)
	c.DestAddr = cloneBytes(i.DestAddr)
	if i.TxAttr != nil {
		a := *i.TxAttr
		c.TxAttr = &a
	}
	if i.RxAttr != nil {
		a := *i.RxAttr
		c.RxAttr = &a
	}
	if i.EPAttr != nil {
		a := *i.EPAttr
		a.AuthKey = cloneBytes(a.AuthKey)
		c.EPAttr = &a
	}
	if i.DomainAttr != nil {
		a := *i.DomainAttr
		a.AuthKey = cloneBytes(a.AuthKey)
		c.DomainAttr = &a
	}
	if i.FabricAttr != nil {
		a := *i.FabricAttr
		c.FabricAttr = &a
	}
	if i.NIC != nil {
		a := *i.NIC
		c.NIC = &a
	}
	return &c
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

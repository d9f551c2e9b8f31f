package fi

// Caps is a set of endpoint, domain or interface capabilities (the caps
// fields of fi_info and its attributes; fi_getinfo(3) "CAPABILITIES").
// Values equal libfabric's. String prints them the way fi_tostr does
// ("FI_MSG, FI_RMA").
type Caps uint64

// Capability bits, libfabric 1.17 values (fabric.h). Primary capabilities
// must be requested through hints; secondary ones may be returned anyway.
const (
	CapMsg          Caps = 1 << 1  // FI_MSG
	CapRMA          Caps = 1 << 2  // FI_RMA
	CapTagged       Caps = 1 << 3  // FI_TAGGED
	CapAtomic       Caps = 1 << 4  // FI_ATOMIC
	CapMulticast    Caps = 1 << 5  // FI_MULTICAST
	CapCollective   Caps = 1 << 6  // FI_COLLECTIVE
	CapRead         Caps = 1 << 8  // FI_READ
	CapWrite        Caps = 1 << 9  // FI_WRITE
	CapRecv         Caps = 1 << 10 // FI_RECV
	CapSend         Caps = 1 << 11 // FI_SEND
	CapRemoteRead   Caps = 1 << 12 // FI_REMOTE_READ
	CapRemoteWrite  Caps = 1 << 13 // FI_REMOTE_WRITE
	CapMultiRecv    Caps = 1 << 16 // FI_MULTI_RECV
	CapTrigger      Caps = 1 << 20 // FI_TRIGGER
	CapFence        Caps = 1 << 21 // FI_FENCE
	CapHMEM         Caps = 1 << 47 // FI_HMEM
	CapVariableMsg  Caps = 1 << 48 // FI_VARIABLE_MSG
	CapRMAPmem      Caps = 1 << 49 // FI_RMA_PMEM
	CapSourceErr    Caps = 1 << 50 // FI_SOURCE_ERR
	CapLocalComm    Caps = 1 << 51 // FI_LOCAL_COMM
	CapRemoteComm   Caps = 1 << 52 // FI_REMOTE_COMM
	CapSharedAV     Caps = 1 << 53 // FI_SHARED_AV
	CapRMAEvent     Caps = 1 << 56 // FI_RMA_EVENT
	CapSource       Caps = 1 << 57 // FI_SOURCE
	CapNamedRxCtx   Caps = 1 << 58 // FI_NAMED_RX_CTX
	CapDirectedRecv Caps = 1 << 59 // FI_DIRECTED_RECV
	CapAVUserID     Caps = 1 << 41 // FI_AV_USER_ID
	CapPeer         Caps = 1 << 43 // FI_PEER
)

// Capability groups, as libfabric's prov/util defines them.
const (
	// PrimaryCaps are the capabilities an application must ask for.
	PrimaryCaps = CapMsg | CapRMA | CapTagged | CapAtomic | CapMulticast |
		CapNamedRxCtx | CapDirectedRecv | CapVariableMsg | CapHMEM |
		CapCollective | CapRead | CapWrite | CapRecv | CapSend |
		CapRemoteRead | CapRemoteWrite | CapAVUserID | CapPeer
	// SecondaryCaps may be returned by a provider even when not asked for.
	SecondaryCaps = CapMultiRecv | CapSource | CapRMAEvent | CapSharedAV |
		CapTrigger | CapFence | CapLocalComm | CapRemoteComm | CapSourceErr |
		CapRMAPmem
	// DomainCaps are the capabilities that live in fi_domain_attr.caps.
	DomainCaps = CapLocalComm | CapRemoteComm | CapSharedAV | CapAVUserID | CapPeer
)

// Mode is a set of mode bits (fi_getinfo(3) "MODE"): requirements the
// provider places on the application. Unlike other hints, a zero Mode in
// hints means the application supports no mode bits.
type Mode uint64

// Mode bits, libfabric 1.17 values.
const (
	ModeContext         Mode = 1 << 59 // FI_CONTEXT
	ModeMsgPrefix       Mode = 1 << 58 // FI_MSG_PREFIX
	ModeAsyncIOV        Mode = 1 << 57 // FI_ASYNC_IOV
	ModeRxCQData        Mode = 1 << 56 // FI_RX_CQ_DATA
	ModeLocalMR         Mode = 1 << 55 // FI_LOCAL_MR
	ModeNotifyFlagsOnly Mode = 1 << 54 // FI_NOTIFY_FLAGS_ONLY
	ModeRestrictedComp  Mode = 1 << 53 // FI_RESTRICTED_COMP
	ModeContext2        Mode = 1 << 52 // FI_CONTEXT2
	ModeBufferedRecv    Mode = 1 << 51 // FI_BUFFERED_RECV
)

// Flags is a set of operation flags: the op_flags of transmit and receive
// attributes, the flags of data-transfer calls and of completions, and the
// flags of GetInfo, Join and Bind. Values equal libfabric's; several bits
// mean different things in different calls, as in C.
type Flags uint64

// Flag bits, libfabric 1.17 values.
const (
	FlagMsg                 Flags = 1 << 1  // FI_MSG
	FlagRMA                 Flags = 1 << 2  // FI_RMA
	FlagTagged              Flags = 1 << 3  // FI_TAGGED
	FlagAtomic              Flags = 1 << 4  // FI_ATOMIC
	FlagMulticast           Flags = 1 << 5  // FI_MULTICAST
	FlagCollective          Flags = 1 << 6  // FI_COLLECTIVE
	FlagRead                Flags = 1 << 8  // FI_READ
	FlagWrite               Flags = 1 << 9  // FI_WRITE
	FlagRecv                Flags = 1 << 10 // FI_RECV
	FlagSend                Flags = 1 << 11 // FI_SEND
	FlagRemoteRead          Flags = 1 << 12 // FI_REMOTE_READ
	FlagRemoteWrite         Flags = 1 << 13 // FI_REMOTE_WRITE
	FlagMultiRecv           Flags = 1 << 16 // FI_MULTI_RECV
	FlagRemoteCQData        Flags = 1 << 17 // FI_REMOTE_CQ_DATA
	FlagMore                Flags = 1 << 18 // FI_MORE
	FlagPeek                Flags = 1 << 19 // FI_PEEK
	FlagTrigger             Flags = 1 << 20 // FI_TRIGGER
	FlagFence               Flags = 1 << 21 // FI_FENCE
	FlagPriority            Flags = 1 << 22 // FI_PRIORITY
	FlagCompletion          Flags = 1 << 24 // FI_COMPLETION
	FlagInject              Flags = 1 << 25 // FI_INJECT
	FlagInjectComplete      Flags = 1 << 26 // FI_INJECT_COMPLETE
	FlagTransmitComplete    Flags = 1 << 27 // FI_TRANSMIT_COMPLETE
	FlagDeliveryComplete    Flags = 1 << 28 // FI_DELIVERY_COMPLETE
	FlagAffinity            Flags = 1 << 29 // FI_AFFINITY
	FlagCommitComplete      Flags = 1 << 30 // FI_COMMIT_COMPLETE
	FlagMatchComplete       Flags = 1 << 31 // FI_MATCH_COMPLETE
	FlagPeerTransfer        Flags = 1 << 36 // FI_PEER_TRANSFER
	FlagAVUserID            Flags = 1 << 41 // FI_AV_USER_ID
	FlagPeer                Flags = 1 << 43 // FI_PEER
	FlagXPUTrigger          Flags = 1 << 44 // FI_XPU_TRIGGER
	FlagHMEMHostAlloc       Flags = 1 << 45 // FI_HMEM_HOST_ALLOC
	FlagHMEMDeviceOnly      Flags = 1 << 46 // FI_HMEM_DEVICE_ONLY
	FlagHMEM                Flags = 1 << 47 // FI_HMEM
	FlagVariableMsg         Flags = 1 << 48 // FI_VARIABLE_MSG
	FlagRMAPmem             Flags = 1 << 49 // FI_RMA_PMEM
	FlagSourceErr           Flags = 1 << 50 // FI_SOURCE_ERR
	FlagLocalComm           Flags = 1 << 51 // FI_LOCAL_COMM
	FlagRemoteComm          Flags = 1 << 52 // FI_REMOTE_COMM
	FlagSharedAV            Flags = 1 << 53 // FI_SHARED_AV
	FlagProvAttrOnly        Flags = 1 << 54 // FI_PROV_ATTR_ONLY
	FlagNumericHost         Flags = 1 << 55 // FI_NUMERICHOST
	FlagRMAEvent            Flags = 1 << 56 // FI_RMA_EVENT
	FlagSource              Flags = 1 << 57 // FI_SOURCE
	FlagNamedRxCtx          Flags = 1 << 58 // FI_NAMED_RX_CTX
	FlagDirectedRecv        Flags = 1 << 59 // FI_DIRECTED_RECV
	FlagClaim               Flags = 1 << 59 // FI_CLAIM (tagged receives)
	FlagDiscard             Flags = 1 << 58 // FI_DISCARD (tagged receives)
	FlagSelectiveCompletion Flags = 1 << 59 // FI_SELECTIVE_COMPLETION (Bind)
	FlagRegMR               Flags = 1 << 59 // FI_REG_MR (MR events)
)

// MsgOrder is a set of message ordering bits (msg_order, comp_order).
type MsgOrder uint64

// Ordering bits, libfabric 1.17 values.
const (
	OrderNone      MsgOrder = 0
	OrderRAR       MsgOrder = 1 << 0  // FI_ORDER_RAR
	OrderRAW       MsgOrder = 1 << 1  // FI_ORDER_RAW
	OrderRAS       MsgOrder = 1 << 2  // FI_ORDER_RAS
	OrderWAR       MsgOrder = 1 << 3  // FI_ORDER_WAR
	OrderWAW       MsgOrder = 1 << 4  // FI_ORDER_WAW
	OrderWAS       MsgOrder = 1 << 5  // FI_ORDER_WAS
	OrderSAR       MsgOrder = 1 << 6  // FI_ORDER_SAR
	OrderSAW       MsgOrder = 1 << 7  // FI_ORDER_SAW
	OrderSAS       MsgOrder = 1 << 8  // FI_ORDER_SAS
	OrderStrict    MsgOrder = 0x1FF   // FI_ORDER_STRICT
	OrderData      MsgOrder = 1 << 16 // FI_ORDER_DATA
	OrderRMARAR    MsgOrder = 1 << 32 // FI_ORDER_RMA_RAR
	OrderRMARAW    MsgOrder = 1 << 33 // FI_ORDER_RMA_RAW
	OrderRMAWAR    MsgOrder = 1 << 34 // FI_ORDER_RMA_WAR
	OrderRMAWAW    MsgOrder = 1 << 35 // FI_ORDER_RMA_WAW
	OrderAtomicRAR MsgOrder = 1 << 36 // FI_ORDER_ATOMIC_RAR
	OrderAtomicRAW MsgOrder = 1 << 37 // FI_ORDER_ATOMIC_RAW
	OrderAtomicWAR MsgOrder = 1 << 38 // FI_ORDER_ATOMIC_WAR
	OrderAtomicWAW MsgOrder = 1 << 39 // FI_ORDER_ATOMIC_WAW
)

// MRMode is a set of memory registration mode bits (fi_mr(3)).
type MRMode uint32

// MR mode bits, libfabric 1.17 values.
const (
	MRModeUnspec     MRMode = 0       // FI_MR_UNSPEC
	MRModeBasic      MRMode = 1 << 0  // FI_MR_BASIC
	MRModeScalable   MRMode = 1 << 1  // FI_MR_SCALABLE
	MRModeLocal      MRMode = 1 << 2  // FI_MR_LOCAL
	MRModeRaw        MRMode = 1 << 3  // FI_MR_RAW
	MRModeVirtAddr   MRMode = 1 << 4  // FI_MR_VIRT_ADDR
	MRModeAllocated  MRMode = 1 << 5  // FI_MR_ALLOCATED
	MRModeProvKey    MRMode = 1 << 6  // FI_MR_PROV_KEY
	MRModeMMUNotify  MRMode = 1 << 7  // FI_MR_MMU_NOTIFY
	MRModeRMAEvent   MRMode = 1 << 8  // FI_MR_RMA_EVENT
	MRModeEndpoint   MRMode = 1 << 9  // FI_MR_ENDPOINT
	MRModeHMEM       MRMode = 1 << 10 // FI_MR_HMEM
	MRModeCollective MRMode = 1 << 11 // FI_MR_COLLECTIVE
)

// EPType is an endpoint type (enum fi_ep_type).
type EPType int

// Endpoint types.
const (
	EPTypeUnspec     EPType = iota // FI_EP_UNSPEC
	EPTypeMsg                      // FI_EP_MSG
	EPTypeDgram                    // FI_EP_DGRAM
	EPTypeRDM                      // FI_EP_RDM
	EPTypeSockStream               // FI_EP_SOCK_STREAM
	EPTypeSockDgram                // FI_EP_SOCK_DGRAM
)

// Protocol is an endpoint protocol (fi_ep_attr.protocol).
type Protocol uint32

// Protocols, libfabric 1.17 values.
const (
	ProtoUnspec        Protocol = iota // FI_PROTO_UNSPEC
	ProtoRDMACMIBRC                    // FI_PROTO_RDMA_CM_IB_RC
	ProtoIWARP                         // FI_PROTO_IWARP
	ProtoIBUD                          // FI_PROTO_IB_UD
	ProtoPSMX                          // FI_PROTO_PSMX
	ProtoUDP                           // FI_PROTO_UDP
	ProtoSockTCP                       // FI_PROTO_SOCK_TCP
	ProtoMXM                           // FI_PROTO_MXM
	ProtoIWARPRDM                      // FI_PROTO_IWARP_RDM
	ProtoIBRDM                         // FI_PROTO_IB_RDM
	ProtoGNI                           // FI_PROTO_GNI
	ProtoRXM                           // FI_PROTO_RXM
	ProtoRXD                           // FI_PROTO_RXD
	ProtoMLX                           // FI_PROTO_MLX
	ProtoNetworkDirect                 // FI_PROTO_NETWORKDIRECT
	ProtoPSMX2                         // FI_PROTO_PSMX2
	ProtoSHM                           // FI_PROTO_SHM
	ProtoMRail                         // FI_PROTO_MRAIL
	ProtoRStream                       // FI_PROTO_RSTREAM
	ProtoRDMACMIBXRC                   // FI_PROTO_RDMA_CM_IB_XRC
	ProtoEFA                           // FI_PROTO_EFA
	ProtoPSMX3                         // FI_PROTO_PSMX3
	ProtoRXMTCP                        // FI_PROTO_RXM_TCP
	ProtoOPX                           // FI_PROTO_OPX
	ProtoCXI                           // FI_PROTO_CXI
	ProtoXNet                          // FI_PROTO_XNET
)

// AddrFormat is an address format (fi_info.addr_format).
type AddrFormat uint32

// Address formats, libfabric 1.17 values.
const (
	FormatUnspec      AddrFormat = iota // FI_FORMAT_UNSPEC
	FormatSockaddr                      // FI_SOCKADDR
	FormatSockaddrIn                    // FI_SOCKADDR_IN
	FormatSockaddrIn6                   // FI_SOCKADDR_IN6
	FormatSockaddrIB                    // FI_SOCKADDR_IB
	FormatPSMX                          // FI_ADDR_PSMX
	FormatGNI                           // FI_ADDR_GNI
	FormatBGQ                           // FI_ADDR_BGQ
	FormatMLX                           // FI_ADDR_MLX
	FormatStr                           // FI_ADDR_STR
	FormatPSMX2                         // FI_ADDR_PSMX2
	FormatIBUD                          // FI_ADDR_IB_UD
	FormatEFA                           // FI_ADDR_EFA
	FormatPSMX3                         // FI_ADDR_PSMX3
	FormatOPX                           // FI_ADDR_OPX
	FormatCXI                           // FI_ADDR_CXI
)

// Progress is a progress model (enum fi_progress).
type Progress int

// Progress models.
const (
	ProgressUnspec Progress = iota // FI_PROGRESS_UNSPEC
	ProgressAuto                   // FI_PROGRESS_AUTO
	ProgressManual                 // FI_PROGRESS_MANUAL
)

// Threading is a threading model (enum fi_threading).
type Threading int

// Threading models.
const (
	ThreadUnspec     Threading = iota // FI_THREAD_UNSPEC
	ThreadSafe                        // FI_THREAD_SAFE
	ThreadFID                         // FI_THREAD_FID
	ThreadDomain                      // FI_THREAD_DOMAIN
	ThreadCompletion                  // FI_THREAD_COMPLETION
	ThreadEndpoint                    // FI_THREAD_ENDPOINT
)

// ResourceMgmt is a resource management mode (enum fi_resource_mgmt).
type ResourceMgmt int

// Resource management modes.
const (
	RMUnspec   ResourceMgmt = iota // FI_RM_UNSPEC
	RMDisabled                     // FI_RM_DISABLED
	RMEnabled                      // FI_RM_ENABLED
)

// AVType is an address vector type (enum fi_av_type).
type AVType int

// Address vector types.
const (
	AVUnspec AVType = iota // FI_AV_UNSPEC
	AVMap                  // FI_AV_MAP
	AVTable                // FI_AV_TABLE
)

// WaitObj is a wait object kind (enum fi_wait_obj).
type WaitObj int

// Wait objects. Note that FI_WAIT_NONE is 0 and FI_WAIT_UNSPEC is 1.
const (
	WaitNone      WaitObj = iota // FI_WAIT_NONE
	WaitUnspec                   // FI_WAIT_UNSPEC
	WaitSet                      // FI_WAIT_SET
	WaitFD                       // FI_WAIT_FD
	WaitMutexCond                // FI_WAIT_MUTEX_COND
	WaitYield                    // FI_WAIT_YIELD
	WaitPollFD                   // FI_WAIT_POLLFD
)

// TrafficClass is a traffic class (tclass fields; FI_TC_*).
type TrafficClass uint32

// Traffic classes, libfabric 1.17 values.
const (
	TCUnspec          TrafficClass = 0     // FI_TC_UNSPEC
	TCDSCP            TrafficClass = 0x100 // FI_TC_DSCP
	TCLabel           TrafficClass = 0x200 // FI_TC_LABEL
	TCBestEffort      TrafficClass = 0x200 // FI_TC_BEST_EFFORT
	TCLowLatency      TrafficClass = 0x201 // FI_TC_LOW_LATENCY
	TCDedicatedAccess TrafficClass = 0x202 // FI_TC_DEDICATED_ACCESS
	TCBulkData        TrafficClass = 0x203 // FI_TC_BULK_DATA
	TCScavenger       TrafficClass = 0x204 // FI_TC_SCAVENGER
	TCNetworkCtrl     TrafficClass = 0x205 // FI_TC_NETWORK_CTRL
)

// Access is a set of memory registration access bits (fi_mr_reg access).
type Access uint64

// MR access bits (the same bits as the capabilities of the same names).
const (
	AccessRead        Access = 1 << 8  // FI_READ
	AccessWrite       Access = 1 << 9  // FI_WRITE
	AccessRecv        Access = 1 << 10 // FI_RECV
	AccessSend        Access = 1 << 11 // FI_SEND
	AccessRemoteRead  Access = 1 << 12 // FI_REMOTE_READ
	AccessRemoteWrite Access = 1 << 13 // FI_REMOTE_WRITE
)

// Addr is an fi_addr_t: an index or key into an address vector, naming a
// peer in data-transfer calls.
type Addr uint64

// AddrUnspec is FI_ADDR_UNSPEC (also FI_ADDR_NOTAVAIL): no address.
const AddrUnspec Addr = ^Addr(0)

// KeyNotAvail is FI_KEY_NOTAVAIL.
const KeyNotAvail uint64 = ^uint64(0)

// Version is a libfabric version as FI_VERSION(major, minor) encodes it.
type Version uint32

// MakeVersion mirrors FI_VERSION(major, minor).
func MakeVersion(major, minor uint16) Version { return Version(uint32(major)<<16 | uint32(minor)) }

// Major mirrors FI_MAJOR(v).
func (v Version) Major() uint16 { return uint16(v >> 16) }

// Minor mirrors FI_MINOR(v).
func (v Version) Minor() uint16 { return uint16(v) }

// APIVersion is the libfabric API version gofabric implements (1.17).
const APIVersion Version = 1<<16 | 17

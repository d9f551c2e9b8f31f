package fi

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// This file holds the String methods that print values the way
// fi_tostr(3) of libfabric 1.17 does, and the Parse functions that read
// those names back (as fi_info(1) reads its -c, -m, -t and -a options).
//
// Bit sets print their names joined by ", ": first the names fi_tostr
// prints, in libfabric's order (which is not always bit order), then the
// FI_* names of bits fi_tostr leaves out (FI_AV_USER_ID in caps, FI_SEND
// in flags), then the bits that have no name at all as one hexadecimal
// number ("0x400000000"). So String never drops a bit and never returns
// "": zero prints as libfabric's name for it (FI_ORDER_NONE, FI_MR_UNSPEC)
// or "0". Info.String and the attributes' String methods print exactly what
// fi_tostr prints (fi_info -v output), dropping unnamed bits and printing
// nothing for zero, as C does. Enums print their name, "Unknown" for
// values out of range, and "Provider specific" where libfabric reserves the
// high bit (FI_PROV_SPECIFIC) for providers.

// bitName names one bit of a bit set.
type bitName struct {
	bit  uint64
	name string
}

// capNames is FI_TYPE_CAPS in fi_tostr's print order.
var capNames = []bitName{
	{1 << 1, "FI_MSG"}, {1 << 2, "FI_RMA"}, {1 << 3, "FI_TAGGED"},
	{1 << 4, "FI_ATOMIC"}, {1 << 5, "FI_MULTICAST"}, {1 << 6, "FI_COLLECTIVE"},
	{1 << 8, "FI_READ"}, {1 << 9, "FI_WRITE"}, {1 << 10, "FI_RECV"},
	{1 << 11, "FI_SEND"}, {1 << 12, "FI_REMOTE_READ"}, {1 << 13, "FI_REMOTE_WRITE"},
	{1 << 16, "FI_MULTI_RECV"}, {1 << 17, "FI_REMOTE_CQ_DATA"}, {1 << 20, "FI_TRIGGER"},
	{1 << 21, "FI_FENCE"}, {1 << 48, "FI_VARIABLE_MSG"}, {1 << 49, "FI_RMA_PMEM"},
	{1 << 50, "FI_SOURCE_ERR"}, {1 << 51, "FI_LOCAL_COMM"}, {1 << 52, "FI_REMOTE_COMM"},
	{1 << 53, "FI_SHARED_AV"}, {1 << 56, "FI_RMA_EVENT"}, {1 << 57, "FI_SOURCE"},
	{1 << 58, "FI_NAMED_RX_CTX"}, {1 << 59, "FI_DIRECTED_RECV"}, {1 << 47, "FI_HMEM"},
}

// capExtraNames are the capabilities fi_tostr does not print.
var capExtraNames = []bitName{{1 << 41, "FI_AV_USER_ID"}, {1 << 43, "FI_PEER"}}

// capParseNames are all capability names.
var capParseNames = append(slices.Clone(capExtraNames), capNames...)

// opFlagNames is FI_TYPE_OP_FLAGS in fi_tostr's print order.
var opFlagNames = []bitName{
	{1 << 5, "FI_MULTICAST"}, {1 << 16, "FI_MULTI_RECV"}, {1 << 17, "FI_REMOTE_CQ_DATA"},
	{1 << 18, "FI_MORE"}, {1 << 19, "FI_PEEK"}, {1 << 20, "FI_TRIGGER"},
	{1 << 21, "FI_FENCE"}, {1 << 24, "FI_COMPLETION"}, {1 << 25, "FI_INJECT"},
	{1 << 26, "FI_INJECT_COMPLETE"}, {1 << 27, "FI_TRANSMIT_COMPLETE"},
	{1 << 28, "FI_DELIVERY_COMPLETE"}, {1 << 31, "FI_MATCH_COMPLETE"},
	{1 << 29, "FI_AFFINITY"}, {1 << 59, "FI_CLAIM"}, {1 << 58, "FI_DISCARD"},
}

// flagExtraNames are the flag names fi_tostr does not print as op flags,
// in bit order; bits 58 and 59 print as FI_DISCARD and FI_CLAIM, so their
// other names come last and are only parsed.
var flagExtraNames = []bitName{
	{1 << 1, "FI_MSG"}, {1 << 2, "FI_RMA"}, {1 << 3, "FI_TAGGED"}, {1 << 4, "FI_ATOMIC"},
	{1 << 6, "FI_COLLECTIVE"}, {1 << 8, "FI_READ"}, {1 << 9, "FI_WRITE"},
	{1 << 10, "FI_RECV"}, {1 << 11, "FI_SEND"}, {1 << 12, "FI_REMOTE_READ"},
	{1 << 13, "FI_REMOTE_WRITE"}, {1 << 22, "FI_PRIORITY"}, {1 << 30, "FI_COMMIT_COMPLETE"},
	{1 << 36, "FI_PEER_TRANSFER"}, {1 << 41, "FI_AV_USER_ID"}, {1 << 43, "FI_PEER"},
	{1 << 44, "FI_XPU_TRIGGER"}, {1 << 45, "FI_HMEM_HOST_ALLOC"},
	{1 << 46, "FI_HMEM_DEVICE_ONLY"}, {1 << 47, "FI_HMEM"}, {1 << 48, "FI_VARIABLE_MSG"},
	{1 << 49, "FI_RMA_PMEM"}, {1 << 50, "FI_SOURCE_ERR"}, {1 << 51, "FI_LOCAL_COMM"},
	{1 << 52, "FI_REMOTE_COMM"}, {1 << 53, "FI_SHARED_AV"}, {1 << 54, "FI_PROV_ATTR_ONLY"},
	{1 << 55, "FI_NUMERICHOST"}, {1 << 56, "FI_RMA_EVENT"}, {1 << 57, "FI_SOURCE"},
	{1 << 58, "FI_NAMED_RX_CTX"}, {1 << 59, "FI_DIRECTED_RECV"},
	{1 << 59, "FI_SELECTIVE_COMPLETION"}, {1 << 59, "FI_REG_MR"},
}

// flagParseNames are all flag names.
var flagParseNames = append(slices.Clone(flagExtraNames), opFlagNames...)

// modeNames is FI_TYPE_MODE in fi_tostr's print order.
var modeNames = []bitName{
	{1 << 59, "FI_CONTEXT"}, {1 << 58, "FI_MSG_PREFIX"}, {1 << 57, "FI_ASYNC_IOV"},
	{1 << 56, "FI_RX_CQ_DATA"}, {1 << 55, "FI_LOCAL_MR"}, {1 << 54, "FI_NOTIFY_FLAGS_ONLY"},
	{1 << 53, "FI_RESTRICTED_COMP"}, {1 << 52, "FI_CONTEXT2"}, {1 << 51, "FI_BUFFERED_RECV"},
}

// orderNames is FI_TYPE_MSG_ORDER in fi_tostr's print order.
var orderNames = []bitName{
	{1 << 0, "FI_ORDER_RAR"}, {1 << 1, "FI_ORDER_RAW"}, {1 << 2, "FI_ORDER_RAS"},
	{1 << 3, "FI_ORDER_WAR"}, {1 << 4, "FI_ORDER_WAW"}, {1 << 5, "FI_ORDER_WAS"},
	{1 << 6, "FI_ORDER_SAR"}, {1 << 7, "FI_ORDER_SAW"}, {1 << 8, "FI_ORDER_SAS"},
	{1 << 32, "FI_ORDER_RMA_RAR"}, {1 << 33, "FI_ORDER_RMA_RAW"},
	{1 << 34, "FI_ORDER_RMA_WAR"}, {1 << 35, "FI_ORDER_RMA_WAW"},
	{1 << 36, "FI_ORDER_ATOMIC_RAR"}, {1 << 37, "FI_ORDER_ATOMIC_RAW"},
	{1 << 38, "FI_ORDER_ATOMIC_WAR"}, {1 << 39, "FI_ORDER_ATOMIC_WAW"},
}

// orderExtraNames are the ordering bits fi_tostr's msg_order leaves out.
var orderExtraNames = []bitName{{1 << 16, "FI_ORDER_DATA"}}

// orderParseNames adds the names comp_order prints.
var orderParseNames = append([]bitName{
	{0, "FI_ORDER_NONE"}, {uint64(OrderStrict), "FI_ORDER_STRICT"}, {1 << 16, "FI_ORDER_DATA"},
}, orderNames...)

// mrModeNames is FI_TYPE_MR_MODE in fi_tostr's print order.
var mrModeNames = []bitName{
	{1 << 0, "FI_MR_BASIC"}, {1 << 1, "FI_MR_SCALABLE"}, {1 << 2, "FI_MR_LOCAL"},
	{1 << 3, "FI_MR_RAW"}, {1 << 4, "FI_MR_VIRT_ADDR"}, {1 << 5, "FI_MR_ALLOCATED"},
	{1 << 6, "FI_MR_PROV_KEY"}, {1 << 7, "FI_MR_MMU_NOTIFY"}, {1 << 8, "FI_MR_RMA_EVENT"},
	{1 << 9, "FI_MR_ENDPOINT"}, {1 << 10, "FI_MR_HMEM"}, {1 << 11, "FI_MR_COLLECTIVE"},
}

// mrModeParseNames adds FI_MR_UNSPEC.
var mrModeParseNames = append([]bitName{{0, "FI_MR_UNSPEC"}}, mrModeNames...)

// accessNames are the capability names that are MR access bits.
var accessNames = []bitName{
	{1 << 8, "FI_READ"}, {1 << 9, "FI_WRITE"}, {1 << 10, "FI_RECV"},
	{1 << 11, "FI_SEND"}, {1 << 12, "FI_REMOTE_READ"}, {1 << 13, "FI_REMOTE_WRITE"},
}

// appendBits appends the names of the bits of v, joined by ", " (and
// separated by ", " from what b holds). A bit with several names prints
// the first.
func appendBits(b []byte, v uint64, names []bitName) []byte {
	sep := len(b) > 0
	for _, n := range names {
		if v&n.bit == 0 {
			continue
		}
		v &^= n.bit
		if sep {
			b = append(b, ", "...)
		}
		b = append(b, n.name...)
		sep = true
	}
	return b
}

// bitsString prints v as fi_tostr does: the names of its bits, nothing for
// bits without a name.
func bitsString(v uint64, names []bitName) string { return string(appendBits(nil, v, names)) }

// allBitsString prints every bit of v: the names fi_tostr prints (names),
// then the names it leaves out (extra), then the remaining bits as one
// hexadecimal number; zero prints as zero.
func allBitsString(v uint64, names, extra []bitName, zero string) string {
	if v == 0 {
		return zero
	}
	b := appendBits(nil, v, names)
	rest := v
	for _, n := range names {
		rest &^= n.bit
	}
	b = appendBits(b, rest, extra)
	for _, n := range extra {
		rest &^= n.bit
	}
	if rest != 0 {
		if len(b) > 0 {
			b = append(b, ", "...)
		}
		b = append(b, "0x"...)
		b = strconv.AppendUint(b, rest, 16)
	}
	return string(b)
}

// parseBits reads names separated by '|' or ',' (spaces around names and
// empty names are ignored, case does not matter) into a bit set. A number
// (decimal, or hexadecimal with 0x, as String prints unnamed bits) stands
// for its bits.
func parseBits(what, s string, names []bitName) (uint64, error) {
	var v uint64
	for _, tok := range strings.FieldsFunc(s, func(r rune) bool { return r == '|' || r == ',' }) {
		tok = strings.TrimSpace(tok)
		if tok == "" {
			continue
		}
		if tok[0] >= '0' && tok[0] <= '9' {
			n, err := strconv.ParseUint(tok, 0, 64)
			if err != nil {
				return 0, wrapf(EINVAL, "fi: parse %s: bad number %q", what, tok)
			}
			v |= n
			continue
		}
		found := false
		for _, n := range names {
			if strings.EqualFold(tok, n.name) {
				v |= n.bit
				found = true
				break
			}
		}
		if !found {
			return 0, wrapf(EINVAL, "fi: parse %s: unrecognized name %q", what, tok)
		}
	}
	return v, nil
}

// enumString names v from names indexed by value.
func enumString(v int64, names []string) string {
	if v < 0 || v >= int64(len(names)) {
		return "Unknown"
	}
	return names[v]
}

// provEnumString is enumString for enums with FI_PROV_SPECIFIC values.
func provEnumString(v uint32, names []string) string {
	if v&(1<<31) != 0 {
		return "Provider specific"
	}
	return enumString(int64(v), names)
}

// parseEnum finds s (case does not matter, spaces are trimmed) in names.
func parseEnum(what, s string, names []string) (int, error) {
	s = strings.TrimSpace(s)
	for i, n := range names {
		if strings.EqualFold(s, n) {
			return i, nil
		}
	}
	return 0, wrapf(EINVAL, "fi: parse %s: unrecognized name %q", what, s)
}

var (
	epTypeNames = []string{"FI_EP_UNSPEC", "FI_EP_MSG", "FI_EP_DGRAM", "FI_EP_RDM",
		"FI_EP_SOCK_STREAM", "FI_EP_SOCK_DGRAM"}
	protocolNames = []string{"FI_PROTO_UNSPEC", "FI_PROTO_RDMA_CM_IB_RC", "FI_PROTO_IWARP",
		"FI_PROTO_IB_UD", "FI_PROTO_PSMX", "FI_PROTO_UDP", "FI_PROTO_SOCK_TCP",
		"FI_PROTO_MXM", "FI_PROTO_IWARP_RDM", "FI_PROTO_IB_RDM", "FI_PROTO_GNI",
		"FI_PROTO_RXM", "FI_PROTO_RXD", "FI_PROTO_MLX", "FI_PROTO_NETWORKDIRECT",
		"FI_PROTO_PSMX2", "FI_PROTO_SHM", "FI_PROTO_MRAIL", "FI_PROTO_RSTREAM",
		"FI_PROTO_RDMA_CM_IB_XRC", "FI_PROTO_EFA", "FI_PROTO_PSMX3", "FI_PROTO_RXM_TCP",
		"FI_PROTO_OPX", "FI_PROTO_CXI", "FI_PROTO_XNET"}
	addrFormatNames = []string{"FI_FORMAT_UNSPEC", "FI_SOCKADDR", "FI_SOCKADDR_IN",
		"FI_SOCKADDR_IN6", "FI_SOCKADDR_IB", "FI_ADDR_PSMX", "FI_ADDR_GNI", "FI_ADDR_BGQ",
		"FI_ADDR_MLX", "FI_ADDR_STR", "FI_ADDR_PSMX2", "FI_ADDR_IB_UD", "FI_ADDR_EFA",
		"FI_ADDR_PSMX3", "FI_ADDR_OPX", "FI_ADDR_CXI"}
	progressNames  = []string{"FI_PROGRESS_UNSPEC", "FI_PROGRESS_AUTO", "FI_PROGRESS_MANUAL"}
	threadingNames = []string{"FI_THREAD_UNSPEC", "FI_THREAD_SAFE", "FI_THREAD_FID",
		"FI_THREAD_DOMAIN", "FI_THREAD_COMPLETION", "FI_THREAD_ENDPOINT"}
	rmNames     = []string{"FI_RM_UNSPEC", "FI_RM_DISABLED", "FI_RM_ENABLED"}
	avTypeNames = []string{"FI_AV_UNSPEC", "FI_AV_MAP", "FI_AV_TABLE"}
	waitNames   = []string{"FI_WAIT_NONE", "FI_WAIT_UNSPEC", "FI_WAIT_SET", "FI_WAIT_FD",
		"FI_WAIT_MUTEX_COND", "FI_WAIT_YIELD", "FI_WAIT_POLLFD"}
	linkStateNames = []string{"FI_LINK_UNKNOWN", "FI_LINK_DOWN", "FI_LINK_UP"}
)

// String prints c as fi_tostr(FI_TYPE_CAPS) does ("FI_MSG, FI_RMA"),
// followed by FI_AV_USER_ID and FI_PEER, which fi_tostr 1.17 does not
// name, and by bits without a name in hexadecimal ("0x1"). Zero prints as
// "0".
func (c Caps) String() string { return allBitsString(uint64(c), capNames, capExtraNames, "0") }

// String prints m as fi_tostr(FI_TYPE_MODE) does, followed by bits without
// a name in hexadecimal. Zero (no mode bits) prints as "0".
func (m Mode) String() string { return allBitsString(uint64(m), modeNames, nil, "0") }

// String prints f as fi_tostr(FI_TYPE_OP_FLAGS) does (the operation flags
// FI_INJECT, FI_COMPLETION..., bit 59 as FI_CLAIM and bit 58 as
// FI_DISCARD), followed by the names of the other flag bits in bit order
// (FI_MSG, FI_SEND, FI_SOURCE...), and by bits without a name in
// hexadecimal ("0x400000000"). Zero prints as "0".
func (f Flags) String() string {
	return allBitsString(uint64(f), opFlagNames, flagExtraNames, "0")
}

// String prints o as fi_tostr(FI_TYPE_MSG_ORDER) does (FI_ORDER_STRICT
// prints as its nine bits), followed by FI_ORDER_DATA, which fi_tostr
// leaves out, and by bits without a name in hexadecimal. Zero prints as
// "FI_ORDER_NONE".
func (o MsgOrder) String() string {
	return allBitsString(uint64(o), orderNames, orderExtraNames, "FI_ORDER_NONE")
}

// compOrderString prints a completion order as fi_tostr prints comp_order:
// FI_ORDER_NONE when no bit of FI_ORDER_STRICT is set, FI_ORDER_STRICT when
// all are, and FI_ORDER_DATA.
func compOrderString(o MsgOrder) string {
	var names []string
	switch o & OrderStrict {
	case 0:
		names = append(names, "FI_ORDER_NONE")
	case OrderStrict:
		names = append(names, "FI_ORDER_STRICT")
	}
	if o&OrderData != 0 {
		names = append(names, "FI_ORDER_DATA")
	}
	return strings.Join(names, ", ")
}

// String prints m as fi_tostr(FI_TYPE_MR_MODE) does, followed by bits
// without a name in hexadecimal. Zero prints as "FI_MR_UNSPEC".
func (m MRMode) String() string {
	return allBitsString(uint64(m), mrModeNames, nil, "FI_MR_UNSPEC")
}

// String prints a with the capability names of its bits (FI_READ,
// FI_REMOTE_WRITE, ...), as fi_tostr(FI_TYPE_CAPS) would, followed by other
// bits in hexadecimal. Zero prints as "0".
func (a Access) String() string { return allBitsString(uint64(a), accessNames, nil, "0") }

// String prints t as fi_tostr(FI_TYPE_EP_TYPE) does.
func (t EPType) String() string { return enumString(int64(t), epTypeNames) }

// String prints p as fi_tostr(FI_TYPE_PROTOCOL) does, which has no name
// for FI_PROTO_MXM and FI_PROTO_MRAIL ("Unknown").
func (p Protocol) String() string {
	if p == ProtoMXM || p == ProtoMRail {
		return "Unknown"
	}
	return provEnumString(uint32(p), protocolNames)
}

// String prints f as fi_tostr(FI_TYPE_ADDR_FORMAT) does.
func (f AddrFormat) String() string { return provEnumString(uint32(f), addrFormatNames) }

// String prints p as fi_tostr(FI_TYPE_PROGRESS) does.
func (p Progress) String() string { return enumString(int64(p), progressNames) }

// String prints t as fi_tostr(FI_TYPE_THREADING) does.
func (t Threading) String() string { return enumString(int64(t), threadingNames) }

// String prints r as fi_tostr prints fi_domain_attr.resource_mgmt.
func (r ResourceMgmt) String() string { return enumString(int64(r), rmNames) }

// String prints t as fi_tostr(FI_TYPE_AV_TYPE) does.
func (t AVType) String() string { return enumString(int64(t), avTypeNames) }

// String prints w as its enum fi_wait_obj name (FI_WAIT_FD), or "Unknown";
// fi_tostr has no type for wait objects.
func (w WaitObj) String() string { return enumString(int64(w), waitNames) }

// String prints l as fi_tostr prints fi_link_attr.state.
func (l LinkState) String() string { return enumString(int64(l), linkStateNames) }

// String prints c in hexadecimal ("0x203"), as fi_tostr prints the tclass
// fields.
func (c TrafficClass) String() string { return "0x" + strconv.FormatUint(uint64(c), 16) }

// String prints v as "major.minor", as fi_tostr prints prov_version
// ("117.0") and api_version ("1.17"). (fi_tostr(FI_TYPE_VERSION) ignores
// its argument and prints the library's own version.)
func (v Version) String() string {
	return strconv.Itoa(int(v.Major())) + "." + strconv.Itoa(int(v.Minor()))
}

// ParseCaps reads capability names separated by '|' (as fi_info -c takes
// them) or ',' (as Caps.String prints them); case and spaces around names
// do not matter. FI_AV_USER_ID and FI_PEER are accepted too, and so are
// numbers ("0", "0x400"), as String prints bits without a name. An
// unknown name is an EINVAL error.
func ParseCaps(s string) (Caps, error) {
	v, err := parseBits("caps", s, capParseNames)
	return Caps(v), err
}

// ParseMode reads mode names like ParseCaps (fi_info -m).
func ParseMode(s string) (Mode, error) {
	v, err := parseBits("mode", s, modeNames)
	return Mode(v), err
}

// ParseFlags reads flag names like ParseCaps. It accepts every FI_* flag
// name (FI_SELECTIVE_COMPLETION, FI_REG_MR...), not only those
// Flags.String prints.
func ParseFlags(s string) (Flags, error) {
	v, err := parseBits("flags", s, flagParseNames)
	return Flags(v), err
}

// ParseMsgOrder reads ordering names like ParseCaps, including
// FI_ORDER_NONE, FI_ORDER_STRICT and FI_ORDER_DATA.
func ParseMsgOrder(s string) (MsgOrder, error) {
	v, err := parseBits("msg order", s, orderParseNames)
	return MsgOrder(v), err
}

// ParseMRMode reads MR mode names like ParseCaps, including FI_MR_UNSPEC.
func ParseMRMode(s string) (MRMode, error) {
	v, err := parseBits("mr mode", s, mrModeParseNames)
	if err == nil && v > math.MaxUint32 {
		return 0, wrapf(EINVAL, "fi: parse mr mode: %#x has bits above 32", v)
	}
	return MRMode(v), err
}

// ParseEPType reads an endpoint type name (FI_EP_RDM), as fi_info -t does.
func ParseEPType(s string) (EPType, error) {
	v, err := parseEnum("ep type", s, epTypeNames)
	return EPType(v), err
}

// ParseProtocol reads a protocol name (FI_PROTO_SOCK_TCP).
func ParseProtocol(s string) (Protocol, error) {
	v, err := parseEnum("protocol", s, protocolNames)
	return Protocol(v), err
}

// ParseAddrFormat reads an address format name (FI_SOCKADDR_IN), as
// fi_info -a does.
func ParseAddrFormat(s string) (AddrFormat, error) {
	v, err := parseEnum("addr format", s, addrFormatNames)
	return AddrFormat(v), err
}

// ParseProgress reads a progress model name (FI_PROGRESS_MANUAL).
func ParseProgress(s string) (Progress, error) {
	v, err := parseEnum("progress", s, progressNames)
	return Progress(v), err
}

// ParseThreading reads a threading model name (FI_THREAD_SAFE).
func ParseThreading(s string) (Threading, error) {
	v, err := parseEnum("threading", s, threadingNames)
	return Threading(v), err
}

// ParseAVType reads an address vector type name (FI_AV_TABLE).
func ParseAVType(s string) (AVType, error) {
	v, err := parseEnum("av type", s, avTypeNames)
	return AVType(v), err
}

// tostr builds fi_tostr's indented "name: value" lines.
type tostr struct {
	b     []byte
	depth int
}

// header starts a nested block: "name:".
func (t *tostr) header(name string) {
	for range t.depth {
		t.b = append(t.b, "    "...)
	}
	t.b = append(t.b, name...)
	t.b = append(t.b, ":\n"...)
}

// line prints "name: value".
func (t *tostr) line(name, value string) {
	t.header(name)
	t.b = append(t.b[:len(t.b)-1], ' ')
	t.b = append(t.b, value...)
	t.b = append(t.b, '\n')
}

func (t *tostr) set(name, value string) { t.line(name, "[ "+value+" ]") }

// size prints a size_t field. math.MaxInt, Go's "no limit", prints as C's
// SIZE_MAX, which is what providers report for an unlimited size.
func (t *tostr) size(name string, v int) {
	u := uint64(v)
	if v == math.MaxInt {
		u = math.MaxUint64
	}
	t.line(name, strconv.FormatUint(u, 10))
}

// str prints a C string field; the empty string is C's NULL.
func (t *tostr) str(name, s string) {
	if s == "" {
		s = "(null)"
	}
	t.line(name, s)
}

// section starts a nested attribute, or prints "(null)" for a nil one.
func (t *tostr) section(name string, isNil bool) bool {
	if isNil {
		t.line(name, "(null)")
		return false
	}
	t.header(name)
	return true
}

// ptr prints an object reference as C's "%p" does: "(nil)" for NULL.
func ptr(v any) string {
	if v == nil {
		return "(nil)"
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.Slice, reflect.UnsafePointer:
		if rv.IsNil() {
			return "(nil)"
		}
		return "0x" + strconv.FormatUint(uint64(rv.Pointer()), 16)
	}
	return fmt.Sprintf("(%T)", v)
}

func (t *tostr) tx(a *TxAttr) {
	t.set("caps", bitsString(uint64(a.Caps), capNames))
	t.set("mode", bitsString(uint64(a.Mode), modeNames))
	t.set("op_flags", bitsString(uint64(a.OpFlags), opFlagNames))
	t.set("msg_order", bitsString(uint64(a.MsgOrder), orderNames))
	t.set("comp_order", compOrderString(a.CompOrder))
	t.size("inject_size", a.InjectSize)
	t.size("size", a.Size)
	t.size("iov_limit", a.IOVLimit)
	t.size("rma_iov_limit", a.RMAIOVLimit)
	t.line("tclass", a.TClass.String())
}

func (t *tostr) rx(a *RxAttr) {
	t.set("caps", bitsString(uint64(a.Caps), capNames))
	t.set("mode", bitsString(uint64(a.Mode), modeNames))
	t.set("op_flags", bitsString(uint64(a.OpFlags), opFlagNames))
	t.set("msg_order", bitsString(uint64(a.MsgOrder), orderNames))
	t.set("comp_order", compOrderString(a.CompOrder))
	t.size("total_buffered_recv", a.TotalBufferedRecv)
	t.size("size", a.Size)
	t.size("iov_limit", a.IOVLimit)
}

func (t *tostr) ep(a *EPAttr) {
	t.line("type", a.Type.String())
	t.line("protocol", a.Protocol.String())
	t.line("protocol_version", strconv.FormatUint(uint64(a.ProtocolVersion), 10))
	t.size("max_msg_size", a.MaxMsgSize)
	t.size("msg_prefix_size", a.MsgPrefixSize)
	t.size("max_order_raw_size", a.MaxOrderRAWSize)
	t.size("max_order_war_size", a.MaxOrderWARSize)
	t.size("max_order_waw_size", a.MaxOrderWAWSize)
	t.line("mem_tag_format", fmt.Sprintf("0x%016x", a.MemTagFormat))
	t.size("tx_ctx_cnt", a.TxCtxCnt)
	t.size("rx_ctx_cnt", a.RxCtxCnt)
	t.size("auth_key_size", len(a.AuthKey))
}

func (t *tostr) domain(a *DomainAttr) {
	d := ptr(a.Domain)
	if d == "(nil)" {
		d = "0x0"
	}
	t.line("domain", d)
	t.str("name", a.Name)
	t.line("threading", a.Threading.String())
	t.line("control_progress", a.ControlProgress.String())
	t.line("data_progress", a.DataProgress.String())
	t.line("resource_mgmt", a.ResourceMgmt.String())
	t.line("av_type", a.AVType.String())
	t.set("mr_mode", bitsString(uint64(a.MRMode), mrModeNames))
	t.size("mr_key_size", a.MRKeySize)
	t.size("cq_data_size", a.CQDataSize)
	t.size("cq_cnt", a.CQCnt)
	t.size("ep_cnt", a.EPCnt)
	t.size("tx_ctx_cnt", a.TxCtxCnt)
	t.size("rx_ctx_cnt", a.RxCtxCnt)
	t.size("max_ep_tx_ctx", a.MaxEPTxCtx)
	t.size("max_ep_rx_ctx", a.MaxEPRxCtx)
	t.size("max_ep_stx_ctx", a.MaxEPStxCtx)
	t.size("max_ep_srx_ctx", a.MaxEPSrxCtx)
	t.size("cntr_cnt", a.CntrCnt)
	t.size("mr_iov_limit", a.MRIOVLimit)
	t.set("caps", bitsString(uint64(a.Caps), capNames))
	t.set("mode", bitsString(uint64(a.Mode), modeNames))
	t.size("auth_key_size", len(a.AuthKey))
	t.size("max_err_data", a.MaxErrData)
	t.size("mr_cnt", a.MRCnt)
	t.line("tclass", a.TClass.String())
}

func (t *tostr) fabric(a *FabricAttr) {
	t.str("name", a.Name)
	t.str("prov_name", a.ProvName)
	t.line("prov_version", a.ProvVersion.String())
	t.line("api_version", a.APIVersion.String())
}

// nic prints a NIC as libfabric prints a struct fid_nic. NIC has no bus
// attributes, so fi_bus_attr always says FI_BUS_UNKNOWN.
func (t *tostr) nic(n *NIC) {
	if !t.section("nic", n == nil) {
		return
	}
	t.depth++
	t.header("fi_device_attr")
	t.depth++
	t.str("name", n.DeviceName)
	t.str("device_id", n.DeviceID)
	t.str("device_version", n.DeviceVersion)
	t.str("vendor_id", n.VendorID)
	t.str("driver", n.Driver)
	t.str("firmware", n.Firmware)
	t.depth--
	t.header("fi_bus_attr")
	t.depth++
	t.line("bus_type", "FI_BUS_UNKNOWN")
	t.depth--
	t.header("fi_link_attr")
	t.depth++
	t.str("address", n.LinkAddress)
	t.size("mtu", n.MTU)
	t.size("speed", n.Speed)
	t.line("state", n.LinkState.String())
	t.str("network_type", n.NetworkType)
	t.depth -= 2
}

// attrString prints one attribute the way fi_tostr prints it alone: a
// header line and its fields one level deeper.
func attrString(header string, isNil bool, body func(t *tostr)) string {
	if isNil {
		return "(null)"
	}
	t := &tostr{}
	t.header(header)
	t.depth++
	body(t)
	return string(t.b)
}

// String prints i exactly as fi_tostr(info, FI_TYPE_INFO) does, which is
// what fi_info -v prints after each "---": a "fi_info:" line, then
// "name: value" lines indented by four spaces per level. Empty strings
// print as "(null)", like C's NULL; object references print as pointers.
// A nil Info prints "(null)".
func (i *Info) String() string {
	if i == nil {
		return "(null)"
	}
	t := &tostr{}
	t.header("fi_info")
	t.depth++
	t.set("caps", bitsString(uint64(i.Caps), capNames))
	t.set("mode", bitsString(uint64(i.Mode), modeNames))
	t.line("addr_format", i.AddrFormat.String())
	t.size("src_addrlen", len(i.SrcAddr))
	t.size("dest_addrlen", len(i.DestAddr))
	t.line("src_addr", addrString(i.AddrFormat, i.SrcAddr))
	t.line("dest_addr", addrString(i.AddrFormat, i.DestAddr))
	t.line("handle", ptr(i.Handle))
	nested := func(name string, isNil bool, body func()) {
		if t.section(name, isNil) {
			t.depth++
			body()
			t.depth--
		}
	}
	nested("fi_tx_attr", i.TxAttr == nil, func() { t.tx(i.TxAttr) })
	nested("fi_rx_attr", i.RxAttr == nil, func() { t.rx(i.RxAttr) })
	nested("fi_ep_attr", i.EPAttr == nil, func() { t.ep(i.EPAttr) })
	nested("fi_domain_attr", i.DomainAttr == nil, func() { t.domain(i.DomainAttr) })
	nested("fi_fabric_attr", i.FabricAttr == nil, func() { t.fabric(i.FabricAttr) })
	if i.NIC == nil {
		t.line("nic", "(nil)")
	} else {
		t.nic(i.NIC)
	}
	return string(t.b)
}

// String prints a as fi_tostr(FI_TYPE_TX_ATTR) does.
func (a *TxAttr) String() string {
	return attrString("fi_tx_attr", a == nil, func(t *tostr) { t.tx(a) })
}

// String prints a as fi_tostr(FI_TYPE_RX_ATTR) does.
func (a *RxAttr) String() string {
	return attrString("fi_rx_attr", a == nil, func(t *tostr) { t.rx(a) })
}

// String prints a as fi_tostr(FI_TYPE_EP_ATTR) does.
func (a *EPAttr) String() string {
	return attrString("fi_ep_attr", a == nil, func(t *tostr) { t.ep(a) })
}

// String prints a as fi_tostr(FI_TYPE_DOMAIN_ATTR) does.
func (a *DomainAttr) String() string {
	return attrString("fi_domain_attr", a == nil, func(t *tostr) { t.domain(a) })
}

// String prints a as fi_tostr(FI_TYPE_FABRIC_ATTR) does.
func (a *FabricAttr) String() string {
	return attrString("fi_fabric_attr", a == nil, func(t *tostr) { t.fabric(a) })
}

// String prints n as libfabric prints a struct fid_nic inside fi_info -v
// output ("nic:", then fi_device_attr, fi_bus_attr and fi_link_attr). A
// nil NIC prints "(nil)".
func (n *NIC) String() string {
	if n == nil {
		return "(nil)"
	}
	t := &tostr{}
	t.nic(n)
	return string(t.b)
}

// Address families as struct sockaddr stores them (Linux values).
const (
	afInet  = 2
	afInet6 = 10
)

// addrString formats an address of format f the way fi_tostr prints
// src_addr and dest_addr: "(null)" when there is none, the empty string
// for formats it cannot print.
func addrString(f AddrFormat, a []byte) string {
	if len(a) == 0 {
		return "(null)"
	}
	u64 := func(off int) uint64 {
		if len(a) < off+8 {
			return 0
		}
		return binary.LittleEndian.Uint64(a[off:])
	}
	switch f {
	case FormatSockaddr, FormatSockaddrIn, FormatSockaddrIn6:
		return sockaddrString(a)
	case FormatStr:
		s, _, _ := strings.Cut(string(a), "\x00")
		return s
	case FormatPSMX:
		return fmt.Sprintf("fi_addr_psmx://%x", u64(0))
	case FormatPSMX2:
		return fmt.Sprintf("fi_addr_psmx2://%x:%x", u64(0), u64(8))
	case FormatGNI:
		return fmt.Sprintf("fi_addr_gni://%x", u64(0))
	case FormatOPX:
		return fmt.Sprintf("fi_addr_opx://%016x", u64(0))
	case FormatCXI:
		if len(a) < 4 {
			return ""
		}
		return fmt.Sprintf("fi_addr_cxi://0x%08x", binary.LittleEndian.Uint32(a))
	case FormatEFA:
		if len(a) < 24 {
			return ""
		}
		return fmt.Sprintf("fi_addr_efa://[%s]:%d:%d", ip6String([16]byte(a[:16])),
			binary.LittleEndian.Uint16(a[16:]), binary.LittleEndian.Uint32(a[20:]))
	}
	return ""
}

// sockaddrString formats a struct sockaddr_in or sockaddr_in6 by its
// family, as libfabric does.
func sockaddrString(a []byte) string {
	if len(a) < 2 {
		return ""
	}
	switch binary.LittleEndian.Uint16(a) {
	case afInet:
		if len(a) < 8 {
			return ""
		}
		ip := netip.AddrFrom4([4]byte(a[4:8]))
		return "fi_sockaddr_in://" + ip.String() + ":" + strconv.Itoa(int(binary.BigEndian.Uint16(a[2:])))
	case afInet6:
		if len(a) < 24 {
			return ""
		}
		return "fi_sockaddr_in6://[" + ip6String([16]byte(a[8:24])) + "]:" +
			strconv.Itoa(int(binary.BigEndian.Uint16(a[2:])))
	}
	return ""
}

// ip6String formats an IPv6 address as glibc's inet_ntop does, which
// differs from Go in printing IPv4-compatible addresses (::a.b.c.d).
func ip6String(b [16]byte) string {
	ip := netip.AddrFrom16(b)
	if [12]byte(b[:12]) == [12]byte{} && (b[12] != 0 || b[13] != 0) {
		return "::" + netip.AddrFrom4([4]byte(b[12:])).String()
	}
	return ip.String()
}

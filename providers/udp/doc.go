// Package udp is gofabric's udp provider: datagram (FI_EP_DGRAM)
// endpoints over UDP sockets, with IP multicast groups, as libfabric
// 1.17's udp provider offers them (fi_udp(7)). Datagrams carry the
// application's bytes as they are, with no header, so Go and C peers
// exchange messages (fi_pingpong -p udp -e dgram interoperates both
// ways). Importing the package registers it with fi.Register under
// libfabric's name, "udp"; providers/all imports it.
//
// # Entries
//
// GetInfo (fi_getinfo(3)) offers what the C provider offers for
// FI_EP_DGRAM, byte for byte (fi_info -v -p udp -t FI_EP_DGRAM): one entry
// per IPv4 and IPv6 address of each interface that is up, listed and
// named as the tcp provider lists them (internal/netif): domain after the
// interface, fabric after the address's subnet, source address the
// interface's with port 0, loopback last and without FI_REMOTE_COMM.
// Entries have FI_MSG, FI_MULTICAST, FI_SEND, FI_RECV and FI_SOURCE,
// max_msg_size and inject_size 1472 (an Ethernet MTU less the IPv4 and UDP
// headers, also for IPv6, as in C), 4 iovecs, queues of 1024, no CQ data,
// no ordering, FI_THREAD_SAFE, FI_PROGRESS_AUTO and no MR mode bits. A
// source address keeps the entry of the interface that owns it (C
// declines one; gofabric names the wildcard address's entry "udp" in
// fabric "UDP-IP"); a destination keeps the entry of the interface the
// kernel routes it from. FI_EP_RDM (C's udp;ofi_rxd) is not implemented
// and FI_EP_MSG does not exist: GetInfo's ENODATA says so.
//
// # Objects
//
// A fabric opens domains and event queues; a domain opens address vectors
// of struct sockaddr_in or sockaddr_in6 (FI_AV_MAP and FI_AV_TABLE),
// completion queues and endpoints. As in C there are no counters and no
// memory registration (ENOSYS). Every object holds a reference on its
// parent: closing one with children open gives fi.EBUSY (fi_close(3)).
//
// An endpoint (fi_endpoint(3), fi_msg(3)) owns a UDP socket, bound by
// Enable to the SetName address, else the Info's source address, with an
// ephemeral port when the port is 0; Name then gives the bound address.
// Enable needs an AV and a CQ for each direction the caps use. Each send
// is one sendto(2): it completes at once (the kernel has the datagram;
// nothing is reliable) or returns bare fi.EAGAIN when the socket buffer is
// full. To each of its first 8 unicast destinations the endpoint sends
// from a socket of its own, opened on the first send there, bound to the
// endpoint's address and port and connected to the destination: the
// kernel then neither routes each datagram anew nor numbers it from a
// table shared by all processors (about a tenth of a loopback round trip
// on a 2-CPU VM). The destination's datagrams arrive on that socket, and
// progress receives from it as from the endpoint's own. Peers see nothing
// of this: the source address and the datagrams are the same. The
// endpoint's socket has SO_REUSEPORT once bound, so that these sockets can
// share its port; only processes of the same user can join it. Messages
// above 1472 bytes give fi.EMSGSIZE, SendData and InjectData fi.ENOSYS
// (cq_data_size is 0). Receives fill in posting order from any sender; a
// datagram longer than the receive completes it with an fi.ETRUNC error
// entry (OLen: the bytes lost). With FI_SOURCE, CQ.ReadFrom gives the
// sender's fi.Addr in the AV, fi.AddrUnspec when it is not there. The
// data calls never block and never allocate, but for the first send to
// each destination that gets a socket of its own.
//
// # Multicast
//
// Join (fi_join, fi_cm(3)) needs FI_MULTICAST, an enabled endpoint and a
// bound event queue (fi.ENOEQ otherwise); it joins at once and queues
// eq.JoinComplete. fi.FlagSend joins send-only (no IP membership),
// fi.FlagRecv receive-only, 0 with the endpoint's directions; a direction
// the caps lack gives fi.EINVAL, a second join of the group fi.EALREADY, a
// unicast address fi.EINVAL. A receiving member has a socket bound to the
// group's address and port (SO_REUSEADDR, so that every member on a host
// receives) and joined on the interface of the endpoint's address; its
// datagrams fill the endpoint's receives with fi.FlagMulticast. The
// group's Addr (fi_mc_addr) is what SendMsg with fi.FlagMulticast sends
// to. Closing the group drops the membership (IP_DROP_MEMBERSHIP); the
// endpoint cannot close (fi.EBUSY) while groups are open. Sockets have
// IP_MULTICAST_ALL off: they never receive groups they did not join.
//
// # Progress
//
// Reading a CQ the endpoint is bound to moves datagrams from its sockets
// into posted receives (busy polling: the lowest latency). The sockets are
// non-blocking and kept out of the runtime's netpoller; one goroutine per
// endpoint (FI_PROGRESS_AUTO) leaves them to an application that polls,
// and otherwise, while receives are posted, arms them one-shot in a
// private epoll instance that sits in the netpoller and receives when
// they are readable; blocking reads (SRead) hand the endpoint to it and
// sleep without spinning, and so does a successful TryWait (fi_trywait)
// on a queue opened with WaitObj fi.WaitFD, whose descriptor
// (eq.FDWaiter) becomes readable when a completion arrives. The
// goroutine ends at the endpoint's Close.
//
// # Environment
//
//   - FI_UDP_IFACE: the one interface to use ("lo", "eth0"), as in C.
//     GetInfo offers only its addresses, and ENODATA with the reason when
//     no such interface is up.
package udp

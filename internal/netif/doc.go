// Package netif lists the IP addresses of the host's network interfaces
// the way libfabric's socket-based providers (tcp, udp) list them for
// fi_getinfo(3): one address per entry, ordered as the C providers order
// them, with the domain and fabric names they derive from each (the
// interface's name and the address's subnet). It also finds the local
// address the kernel routes a destination from.
//
// It reads /sys/class/net/<name>/speed for link speeds and no environment
// variables; the providers apply their own interface selection
// (FI_TCP_IFACE, FI_UDP_IFACE) through List's only argument.
package netif

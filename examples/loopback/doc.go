// Package loopback is a complete gofabric provider, "loopback", that
// moves messages between endpoints of one process. It is the worked
// example of docs/writing-a-provider.md: everything in it comes from
// gofabric's public packages (fi, eq, ep and the provider kit, kit), so
// a provider in another module can be written the same way.
//
// Import it for its side effect, as any provider:
//
//	import _ "github.com/gofabric/gofabric/examples/loopback"
//
// It offers two endpoint types, with FI_MSG (fi_msg(3)):
//
//   - FI_EP_MSG, connected endpoints with fi_cm(3)'s connection
//     management: listen, connect and accept with private data, reject,
//     shutdown (ep.ConnState and ep.Backlog keep the states);
//   - FI_EP_RDM, reliable unconnected endpoints addressed through an
//     address vector (fi_av(3)), with FI_SOURCE.
//
// Addresses are FI_SOCKADDR_IN. The process is one loopback host: an
// address is its port, and the IP address in it is kept but plays no part
// (GetInfo resolves node and service as for any IPv4 provider, and an
// endpoint opened without a port gets a free one).
//
// A send never waits for the network: it is matched with the receive
// posted first at its destination, or else waits in the destination's
// inbox until a receive is posted, and the data is copied once, from the
// sender's buffers into the receiver's, by whichever call comes second.
// Completions are written right then, so the provider needs no progress
// thread and no progress hook (FI_PROGRESS_AUTO: nothing waits for the
// application to call in). Full queues give fi.EAGAIN: the sender's
// transmit queue (tx_attr.size sends waiting), the receiver's inbox and
// its posted receives (rx_attr.size each).
//
// The package reads no environment variables.
package loopback

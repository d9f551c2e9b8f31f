//go:build linux

package udp_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/exampletest"
	_ "github.com/gofabric/gofabric/providers/udp"
	"github.com/stretchr/testify/require"
)

// TestExamplesLeakNothing runs Example again and requires that it closes
// everything it opens.
func TestExamplesLeakNothing(t *testing.T) {
	cleanEnv(t)
	exampletest.NoLeaks(t, Example)
}

// TestExampleMulticast runs Example_multicast, which go test only
// compiles (multicast needs a route), in a network namespace of its own
// and checks what it prints.
func TestExampleMulticast(t *testing.T) {
	inNetns(t)
	cleanEnv(t)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	Example_multicast()
	os.Stdout = stdout
	require.NoError(t, w.Close())
	out, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.Equal(t, "joined: FI_JOIN_COMPLETE\nthe member received \"to the group\" (multicast: true)\n", string(out))
	exampletest.NoLeaks(t, Example_multicast)
}

// This example sends a datagram between two endpoints of the udp
// provider (FI_EP_DGRAM) on loopback. Datagrams are unreliable: the
// receive is posted before the send, as it must be, since a datagram
// that finds no posted receive may be dropped.
func Example() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// fi.FlagSource: node is the local address; endpoints take ports the
	// kernel picks, which Name reports once they are enabled.
	infos, err := fi.GetInfo(ctx, "127.0.0.1", "", fi.FlagSource, &fi.Info{
		Caps:       fi.CapMsg,
		EPAttr:     &fi.EPAttr{Type: fi.EPTypeDgram},
		FabricAttr: &fi.FabricAttr{ProvName: "udp"},
	})
	check(err)
	info := infos[0]
	fabric, err := fi.OpenFabric(info)
	check(err)
	defer fabric.Close()
	domain, err := fabric.OpenDomain(info)
	check(err)
	defer domain.Close()
	av, err := fi.OpenAV(domain, &fi.AVAttr{Type: fi.AVMap})
	check(err)
	defer av.Close()
	rxCQ, err := eq.OpenCQ(domain, &eq.CQAttr{Format: eq.FormatMsg})
	check(err)
	defer rxCQ.Close()
	rx, err := ep.Open(domain, info)
	check(err)
	defer rx.Close()
	txCQ, err := eq.OpenCQ(domain, &eq.CQAttr{Format: eq.FormatMsg})
	check(err)
	defer txCQ.Close()
	tx, err := ep.Open(domain, info)
	check(err)
	defer tx.Close()
	check(rx.Bind(av, 0))
	check(rx.Bind(rxCQ, fi.FlagSend|fi.FlagRecv))
	check(rx.Enable())
	check(tx.Bind(av, 0))
	check(tx.Bind(txCQ, fi.FlagSend|fi.FlagRecv))
	check(tx.Enable())

	name := make([]byte, 64)
	n, err := rx.(ep.Namer).Name(name)
	check(err)
	addrs, err := av.Insert([][]byte{name[:n]}, 0)
	check(err)

	buf := make([]byte, 64)
	check(rx.(ep.Msg).Recv(buf, nil, fi.AddrUnspec, "receive"))
	check(tx.(ep.Msg).Send([]byte("a datagram"), nil, addrs[0], "send"))
	c := make([]eq.Completion, 1)
	_, err = txCQ.SRead(ctx, c)
	check(err)
	fmt.Println(c[0].Context, "completed")
	_, err = rxCQ.SRead(ctx, c)
	check(err)
	fmt.Printf("%v: %q\n", c[0].Context, buf[:c[0].Len])

	// Output:
	// send completed
	// receive: "a datagram"
}

// This example joins an IPv4 multicast group (fi_join, fi_cm(3)) with two
// endpoints of the udp provider: a sender joined send-only (fi.FlagSend)
// and a member joined for both directions, and sends one datagram to the
// group with SendMsg and fi.FlagMulticast, addressed by the group's
// fi.Addr (fi_mc_addr). A join needs an event queue bound to the
// endpoint, where it reports eq.JoinComplete; closing the group leaves
// it.
//
// It runs only where the interface of the endpoints' address routes
// multicast; go test compiles it without running it, and
// TestExampleMulticast runs it in a network namespace of its own, whose
// loopback interface has a multicast route.
func Example_multicast() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The entry of the interface to send and receive on, here loopback.
	infos, err := fi.GetInfo(ctx, "127.0.0.1", "", fi.FlagSource, &fi.Info{
		Caps:       fi.CapMsg | fi.CapMulticast,
		EPAttr:     &fi.EPAttr{Type: fi.EPTypeDgram},
		FabricAttr: &fi.FabricAttr{ProvName: "udp"},
	})
	check(err)
	info := infos[0]
	fabric, err := fi.OpenFabric(info)
	check(err)
	defer fabric.Close()
	domain, err := fabric.OpenDomain(info)
	check(err)
	defer domain.Close()
	av, err := fi.OpenAV(domain, &fi.AVAttr{Type: fi.AVMap})
	check(err)
	defer av.Close()

	// Each endpoint has its completion queue and event queue.
	type member struct {
		e  ep.Endpoint
		cq eq.CompletionQueue
		eq eq.EventQueue
	}
	open := func() member {
		var m member
		m.cq, err = eq.OpenCQ(domain, &eq.CQAttr{Format: eq.FormatMsg})
		check(err)
		m.eq, err = eq.OpenEQ(fabric, &eq.Attr{})
		check(err)
		m.e, err = ep.Open(domain, info)
		check(err)
		check(m.e.Bind(av, 0))
		check(m.e.Bind(m.cq, fi.FlagSend|fi.FlagRecv))
		check(m.e.Bind(m.eq, 0))
		check(m.e.Enable())
		return m
	}
	closeMember := func(m member) {
		m.e.Close()
		m.eq.Close()
		m.cq.Close()
	}
	sender := open()
	defer closeMember(sender)
	receiver := open()
	defer closeMember(receiver)

	// The group: an address of 239.0.0.0/8 (organization-local scope)
	// and a port, as a struct sockaddr_in.
	_, group, err := fi.SockaddrFromAddrPort(netip.MustParseAddrPort("239.255.42.99:47011"))
	check(err)
	join := func(m member, flags fi.Flags) ep.MulticastGroup {
		g, err := m.e.(ep.Joiner).Join(group, flags, nil)
		check(err)
		ev, err := m.eq.SRead(ctx)
		check(err)
		if ev.Type() != eq.EventJoinComplete {
			log.Fatalf("join: %v", ev.Type())
		}
		return g
	}
	gs := join(sender, fi.FlagSend)
	defer gs.Close()
	gr := join(receiver, 0)
	defer gr.Close()
	fmt.Println("joined:", eq.EventJoinComplete)

	buf := make([]byte, 64)
	check(receiver.e.(ep.Msg).Recv(buf, nil, fi.AddrUnspec, nil))
	msg := ep.Message{IOV: [][]byte{[]byte("to the group")}, Addr: gs.Addr()}
	check(sender.e.(ep.Msg).SendMsg(&msg, fi.FlagMulticast))
	c := make([]eq.Completion, 1)
	_, err = sender.cq.SRead(ctx, c)
	check(err)
	_, err = receiver.cq.SRead(ctx, c)
	check(err)
	fmt.Printf("the member received %q (multicast: %v)\n", buf[:c[0].Len], c[0].Flags&fi.FlagMulticast != 0)
}

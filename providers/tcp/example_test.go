//go:build linux

package tcp_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/exampletest"
	_ "github.com/gofabric/gofabric/providers/tcp"
)

// TestExamplesLeakNothing runs this file's examples again and requires
// that they close everything they open.
func TestExamplesLeakNothing(t *testing.T) {
	cleanEnv(t)
	exampletest.NoLeaks(t, Example_rdm, Example_tagged)
}

// This example sends a message between two reliable unconnected
// endpoints (FI_EP_RDM) of the tcp provider, which it offers as
// "tcp;ofi_rxm" as C does: the sender names the receiver by the fi.Addr
// that inserting the receiver's address into an address vector gave
// (fi_av(3)), and the provider opens a TCP connection to it on the first
// send. Until that connection is up the send returns fi.EAGAIN; the
// sender retries, reading its completion queue meanwhile, which is how
// data progresses under FI_PROGRESS_MANUAL. The two endpoints share a
// process, a domain and an address vector here; two programs would
// exchange their names out of band.
func Example_rdm() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// fi.FlagSource with node 127.0.0.1 and no service: the endpoints
	// listen on loopback, on ports the provider picks.
	infos, err := fi.GetInfo(ctx, "127.0.0.1", "", fi.FlagSource, &fi.Info{
		Caps:       fi.CapMsg,
		EPAttr:     &fi.EPAttr{Type: fi.EPTypeRDM},
		FabricAttr: &fi.FabricAttr{ProvName: "tcp"},
	})
	check(err)
	info := infos[0]
	fmt.Println("provider:", info.FabricAttr.ProvName)
	fabric, err := fi.OpenFabric(info)
	check(err)
	defer fabric.Close()
	domain, err := fabric.OpenDomain(info)
	check(err)
	defer domain.Close()
	av, err := fi.OpenAV(domain, &fi.AVAttr{Type: fi.AVTable})
	check(err)
	defer av.Close()

	// Each endpoint has its own completion queue.
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
	for _, x := range []struct {
		e  ep.Endpoint
		cq eq.CompletionQueue
	}{{rx, rxCQ}, {tx, txCQ}} {
		check(x.e.Bind(av, 0))
		check(x.e.Bind(x.cq, fi.FlagSend|fi.FlagRecv))
		check(x.e.Enable())
	}

	// The receiver's name (fi_getname) goes into the sender's AV.
	name := make([]byte, 64)
	n, err := rx.(ep.Namer).Name(name)
	check(err)
	addrs, err := av.Insert([][]byte{name[:n]}, 0)
	check(err)
	dest := addrs[0]

	buf := make([]byte, 64)
	check(rx.(ep.Msg).Recv(buf, nil, fi.AddrUnspec, "receive"))
	c := make([]eq.Completion, 1)
	for {
		err = tx.(ep.Msg).Send([]byte("hello over tcp;ofi_rxm"), nil, dest, "send")
		if !errors.Is(err, fi.EAGAIN) {
			break
		}
		// Not connected yet: reading the CQ runs the endpoint's progress.
		if _, err := txCQ.Read(c); err != nil && !errors.Is(err, fi.EAGAIN) {
			log.Fatal(err)
		}
		check(ctx.Err())
	}
	check(err)

	// A blocking read waits for the message, moving the data meanwhile.
	_, err = rxCQ.SRead(ctx, c)
	check(err)
	fmt.Printf("%v: %q\n", c[0].Context, buf[:c[0].Len])
	_, err = txCQ.SRead(ctx, c)
	check(err)
	fmt.Println(c[0].Context, "completed")

	// Output:
	// provider: tcp;ofi_rxm
	// receive: "hello over tcp;ofi_rxm"
	// send completed
}

// This example shows tag matching (fi_tagged(3)) between two RDM endpoints
// of the tcp provider: the receiver posts a receive for tag 2 and then
// one for tag 1, the sender sends tag 1 first, and each message lands in
// the receive posted for its tag. With an ignore mask a receive matches a
// set of tags instead (the ignored bits may differ); the completion's Tag
// says which one arrived.
func Example_tagged() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	infos, err := fi.GetInfo(ctx, "127.0.0.1", "", fi.FlagSource, &fi.Info{
		Caps:       fi.CapTagged,
		EPAttr:     &fi.EPAttr{Type: fi.EPTypeRDM},
		FabricAttr: &fi.FabricAttr{ProvName: "tcp"},
	})
	check(err)
	info := infos[0]
	fabric, err := fi.OpenFabric(info)
	check(err)
	defer fabric.Close()
	domain, err := fabric.OpenDomain(info)
	check(err)
	defer domain.Close()
	av, err := fi.OpenAV(domain, &fi.AVAttr{Type: fi.AVTable})
	check(err)
	defer av.Close()
	// FormatTagged completions carry the tag.
	rxCQ, err := eq.OpenCQ(domain, &eq.CQAttr{Format: eq.FormatTagged})
	check(err)
	defer rxCQ.Close()
	rx, err := ep.Open(domain, info)
	check(err)
	defer rx.Close()
	txCQ, err := eq.OpenCQ(domain, &eq.CQAttr{Format: eq.FormatTagged})
	check(err)
	defer txCQ.Close()
	tx, err := ep.Open(domain, info)
	check(err)
	defer tx.Close()
	for _, x := range []struct {
		e  ep.Endpoint
		cq eq.CompletionQueue
	}{{rx, rxCQ}, {tx, txCQ}} {
		check(x.e.Bind(av, 0))
		check(x.e.Bind(x.cq, fi.FlagSend|fi.FlagRecv))
		check(x.e.Enable())
	}
	name := make([]byte, 64)
	n, err := rx.(ep.Namer).Name(name)
	check(err)
	addrs, err := av.Insert([][]byte{name[:n]}, 0)
	check(err)
	dest := addrs[0]

	// Receives for tag 2, then tag 1 (ignore mask 0: exact match).
	bufs := map[string][]byte{"receive for tag 2": make([]byte, 64), "receive for tag 1": make([]byte, 64)}
	check(rx.(ep.Tagged).TRecv(bufs["receive for tag 2"], nil, fi.AddrUnspec, 2, 0, "receive for tag 2"))
	check(rx.(ep.Tagged).TRecv(bufs["receive for tag 1"], nil, fi.AddrUnspec, 1, 0, "receive for tag 1"))

	// Send tag 1, then tag 2; retry while the connection comes up,
	// counting the send completions read meanwhile.
	c := make([]eq.Completion, 2)
	sent := 0
	for _, m := range []struct {
		tag  uint64
		data string
	}{{1, "one"}, {2, "two"}} {
		for {
			err = tx.(ep.Tagged).TSend([]byte(m.data), nil, dest, m.tag, nil)
			if !errors.Is(err, fi.EAGAIN) {
				break
			}
			k, err := txCQ.Read(c)
			if err != nil && !errors.Is(err, fi.EAGAIN) {
				log.Fatal(err)
			}
			sent += k
			check(ctx.Err())
		}
		check(err)
	}

	// Both receives complete; print them in the order they were posted.
	got := map[any]eq.Completion{}
	for len(got) < 2 {
		k, err := rxCQ.SRead(ctx, c)
		check(err)
		for _, e := range c[:k] {
			got[e.Context] = e
		}
	}
	for _, ctxName := range []string{"receive for tag 2", "receive for tag 1"} {
		e := got[ctxName]
		fmt.Printf("%s: tag %d, %q\n", ctxName, e.Tag, bufs[ctxName][:e.Len])
	}
	for sent < 2 {
		k, err := txCQ.SRead(ctx, c)
		check(err)
		sent += k
	}

	// Output:
	// receive for tag 2: tag 2, "two"
	// receive for tag 1: tag 1, "one"
}

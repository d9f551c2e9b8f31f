//go:build linux

package shm_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"testing"
	"time"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/internal/exampletest"
	_ "github.com/gofabric/gofabric/providers/shm"
)

// TestExamplesLeakNothing runs this file's examples again and requires
// that they close everything they open.
func TestExamplesLeakNothing(t *testing.T) {
	exampletest.NoLeaks(t, Example)
}

// This example sends messages between reliable unconnected endpoints
// (FI_EP_RDM) of the shm provider and shows FI_SOURCE: the receiver reads
// each completion with ReadFrom (fi_cq_readfrom), which gives the
// sender's fi.Addr in the receiver's address vector, or fi.AddrUnspec for
// a sender it has not inserted. Alice is in the receiver's AV, Bob is
// not. Bob sends with Inject (fi_inject): his buffer may be reused as
// soon as the call returns, and no completion is written for it.
//
// The three endpoints share a process and a domain here; in real use they
// are processes of one host, which exchange their names (fi_getname) out
// of band. Each endpoint gets a name of its own ("fi_shm://<pid>",
// then "fi_shm://<pid>_1"...), so that examples and tests running at the
// same time do not collide.
func Example() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	infos, err := fi.GetInfo(ctx, "", "", 0, &fi.Info{
		Caps:       fi.CapMsg | fi.CapSource,
		EPAttr:     &fi.EPAttr{Type: fi.EPTypeRDM},
		FabricAttr: &fi.FabricAttr{ProvName: "shm"},
	})
	check(err)
	info := infos[0]
	fabric, err := fi.OpenFabric(info)
	check(err)
	defer fabric.Close()
	domain, err := fabric.OpenDomain(info)
	check(err)
	defer domain.Close()

	// open opens an endpoint with its own address vector and completion
	// queue, and returns them with the endpoint's name.
	var objects []fi.Fid
	defer func() {
		for _, o := range slices.Backward(objects) {
			o.Close()
		}
	}()
	open := func() (ep.Endpoint, fi.AV, eq.CompletionQueue, []byte) {
		av, err := fi.OpenAV(domain, &fi.AVAttr{Type: fi.AVTable})
		check(err)
		cq, err := eq.OpenCQ(domain, &eq.CQAttr{Format: eq.FormatMsg})
		check(err)
		e, err := ep.Open(domain, info)
		check(err)
		objects = append(objects, av, cq, e)
		check(e.Bind(av, 0))
		check(e.Bind(cq, fi.FlagSend|fi.FlagRecv))
		check(e.Enable())
		name := make([]byte, 64)
		n, err := e.(ep.Namer).Name(name)
		check(err)
		return e, av, cq, name[:n]
	}
	rx, rxAV, rxCQ, rxName := open()
	alice, aliceAV, aliceCQ, aliceName := open()
	bob, bobAV, _, _ := open()

	// The receiver knows Alice; both senders know the receiver.
	addrs, err := rxAV.Insert([][]byte{aliceName}, 0)
	check(err)
	fromAlice := addrs[0]
	addrs, err = aliceAV.Insert([][]byte{rxName}, 0)
	check(err)
	aliceToRx := addrs[0]
	addrs, err = bobAV.Insert([][]byte{rxName}, 0)
	check(err)
	bobToRx := addrs[0]

	bufs := [][]byte{make([]byte, 64), make([]byte, 64)}
	for i, b := range bufs {
		check(rx.(ep.Msg).Recv(b, nil, fi.AddrUnspec, i))
	}
	check(alice.(ep.Msg).Send([]byte("hello from Alice"), nil, aliceToRx, "alice's send"))
	check(bob.(ep.Msg).Inject([]byte("hello from Bob"), bobToRx))

	// Read the receiver's two completions with their sources. ReadFrom
	// does not block; reading moves the data (FI_PROGRESS_MANUAL).
	var lines []string
	c := make([]eq.Completion, 2)
	src := make([]fi.Addr, 2)
	for len(lines) < 2 {
		n, err := rxCQ.ReadFrom(c, src)
		if err != nil && !errors.Is(err, fi.EAGAIN) {
			log.Fatal(err)
		}
		for i := range n {
			from := "FI_ADDR_UNSPEC (not in the AV)"
			if src[i] == fromAlice {
				from = "Alice's AV entry"
			}
			lines = append(lines, fmt.Sprintf("%q from %s", bufs[c[i].Context.(int)][:c[i].Len], from))
		}
		check(ctx.Err())
	}
	// Messages of different senders may arrive in either order.
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	_, err = aliceCQ.SRead(ctx, c)
	check(err)
	fmt.Println(c[0].Context, "completed")

	// Output:
	// "hello from Alice" from Alice's AV entry
	// "hello from Bob" from FI_ADDR_UNSPEC (not in the AV)
	// alice's send completed
}

package eq_test

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
	_ "github.com/gofabric/gofabric/providers/all"
)

// TestExamplesLeakNothing runs this file's examples again and requires
// that they close everything they open.
func TestExamplesLeakNothing(t *testing.T) {
	exampletest.NoLeaks(t, ExampleCompletionQueue_sRead, ExampleEventQueue_readErr)
}

// This example waits for completions with SRead (fi_cq_sread): first on
// a queue where nothing arrives before the context's deadline, then for a
// message an shm endpoint sends to itself. A blocking read sleeps until
// an entry arrives, the context ends or the queue closes; with the shm
// provider's manual progress it also moves the endpoint's data.
func ExampleCompletionQueue_sRead() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	infos, err := fi.GetInfo(ctx, "", "", 0, &fi.Info{
		Caps:       fi.CapMsg,
		EPAttr:     &fi.EPAttr{Type: fi.EPTypeRDM},
		FabricAttr: &fi.FabricAttr{ProvName: "shm"},
	})
	check(err)
	fabric, err := fi.OpenFabric(infos[0])
	check(err)
	defer fabric.Close()
	domain, err := fabric.OpenDomain(infos[0])
	check(err)
	defer domain.Close()
	av, err := fi.OpenAV(domain, &fi.AVAttr{Type: fi.AVTable})
	check(err)
	defer av.Close()
	// One queue for what is received, one for what is sent.
	rxCQ, err := eq.OpenCQ(domain, &eq.CQAttr{Format: eq.FormatMsg})
	check(err)
	defer rxCQ.Close()
	txCQ, err := eq.OpenCQ(domain, &eq.CQAttr{Format: eq.FormatMsg})
	check(err)
	defer txCQ.Close()
	e, err := ep.Open(domain, infos[0])
	check(err)
	defer e.Close()
	check(e.Bind(av, 0))
	check(e.Bind(rxCQ, fi.FlagRecv))
	check(e.Bind(txCQ, fi.FlagSend))
	check(e.Enable())

	buf := make([]byte, 64)
	check(e.(ep.Msg).Recv(buf, nil, fi.AddrUnspec, "receive"))
	c := make([]eq.Completion, 1)

	// Nothing was sent: SRead gives up at the deadline with the context's
	// error, which fi.Code maps to FI_ETIMEDOUT.
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	_, err = rxCQ.SRead(short, c)
	cancelShort()
	fmt.Println("before the send:", fi.Code(err).Name(), errors.Is(err, context.DeadlineExceeded))

	// The endpoint sends to its own address.
	name := make([]byte, 64)
	n, err := e.(ep.Namer).Name(name)
	check(err)
	self, err := av.Insert([][]byte{name[:n]}, 0)
	check(err)
	check(e.(ep.Msg).Send([]byte("hello, me"), nil, self[0], "send"))

	// A generous deadline: it bounds a failure, not the wait.
	_, err = rxCQ.SRead(ctx, c)
	check(err)
	fmt.Printf("%s: %q\n", c[0].Context, buf[:c[0].Len])
	_, err = txCQ.SRead(ctx, c)
	check(err)
	fmt.Println(c[0].Context, "completed")

	// Output:
	// before the send: FI_ETIMEDOUT true
	// receive: "hello, me"
	// send completed
}

// This example is an event queue loop of connection management
// (fi_eq(3), fi_cm(3)) on both sides of a refused connection over the tcp
// provider: the server rejects a request with private data, and the
// client's queue holds an error entry. Read (fi_eq_read) and SRead report
// an error entry as fi.EAVAIL; ReadErr (fi_eq_readerr) then returns it as
// an *eq.EQError.
func ExampleEventQueue_readErr() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hints := &fi.Info{
		Caps:       fi.CapMsg,
		EPAttr:     &fi.EPAttr{Type: fi.EPTypeMsg},
		FabricAttr: &fi.FabricAttr{ProvName: "tcp"},
	}

	// The server listens on a port the provider picks (service "0" with
	// fi.FlagSource); Name tells the client where.
	infos, err := fi.GetInfo(ctx, "127.0.0.1", "0", fi.FlagSource, hints)
	check(err)
	srvFabric, err := fi.OpenFabric(infos[0])
	check(err)
	defer srvFabric.Close()
	srvEQ, err := eq.OpenEQ(srvFabric, &eq.Attr{})
	check(err)
	defer srvEQ.Close()
	pep, err := ep.OpenPassive(srvFabric, infos[0])
	check(err)
	defer pep.Close()
	check(pep.Bind(srvEQ, 0))
	check(pep.Listen())
	addr := make([]byte, 128)
	n, err := pep.Name(addr)
	check(err)
	addr = addr[:n]

	// The client connects from an endpoint of its own.
	hints.AddrFormat, hints.DestAddr = infos[0].AddrFormat, addr
	infos, err = fi.GetInfo(ctx, "", "", 0, hints)
	check(err)
	cliFabric, err := fi.OpenFabric(infos[0])
	check(err)
	defer cliFabric.Close()
	cliEQ, err := eq.OpenEQ(cliFabric, &eq.Attr{})
	check(err)
	defer cliEQ.Close()
	domain, err := cliFabric.OpenDomain(infos[0])
	check(err)
	defer domain.Close()
	cq, err := eq.OpenCQ(domain, &eq.CQAttr{})
	check(err)
	defer cq.Close()
	cli, err := ep.Open(domain, infos[0])
	check(err)
	defer cli.Close()
	check(cli.Bind(cliEQ, 0))
	check(cli.Bind(cq, fi.FlagSend|fi.FlagRecv))
	check(cli.Enable())
	check(cli.(ep.CM).Connect(addr, []byte("may I?")))

	// next waits for q's next event or error entry: the loop of an
	// application that has nothing else to do meanwhile. One that polls
	// calls Read instead of SRead, which returns fi.EAGAIN when the
	// queue is empty.
	next := func(q eq.EventQueue) (eq.Event, *eq.EQError) {
		ev, err := q.SRead(ctx)
		if errors.Is(err, fi.EAVAIL) {
			e, err := q.ReadErr()
			check(err)
			return nil, e
		}
		check(err)
		return ev, nil
	}

	// The server's loop: a connection request, which it rejects.
	ev, _ := next(srvEQ)
	switch ev := ev.(type) {
	case *eq.ConnReq:
		fmt.Printf("server: %v with %q: rejected\n", ev.Type(), ev.Data)
		check(pep.Reject(ev.Info.Handle, []byte("not today")))
	default:
		fmt.Println("server: unexpected event", ev.Type())
	}

	// The client's loop: an error entry, the reject with its data.
	ev, e := next(cliEQ)
	switch {
	case e != nil:
		fmt.Printf("client: %v (%v), data %q, same endpoint: %v\n",
			e.Err.Name(), e.Err, e.ErrData, e.Fid == cli)
	default:
		fmt.Println("client: unexpected event", ev.Type())
	}

	// Nothing more is queued: a non-blocking Read says so with fi.EAGAIN.
	_, err = cliEQ.Read()
	fmt.Println("client:", fi.Code(err).Name())

	// Output:
	// server: FI_CONNREQ with "may I?": rejected
	// client: FI_ECONNREFUSED (Connection refused), data "not today", same endpoint: true
	// client: FI_EAGAIN
}

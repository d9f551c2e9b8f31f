package ep_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"strconv"
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
	exampletest.NoLeaks(t, Example_msg, ExampleRMA)
}

// This example is a connected (FI_EP_MSG) server and client over the tcp
// provider on loopback, step by step as fi_cm(3) describes the flow: the
// server listens on a port it chose, the client connects with private
// data, the server reads that data from the connection request and
// accepts, the client sends a message and the server receives it, and the
// client shuts the connection down. Both sides run in one goroutine here;
// in real use they are two programs, each with its own objects as below.
func Example_msg() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	// Blocking reads take a context; the deadline only bounds a failure.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hints := &fi.Info{
		Caps:       fi.CapMsg,
		EPAttr:     &fi.EPAttr{Type: fi.EPTypeMsg},
		FabricAttr: &fi.FabricAttr{ProvName: "tcp"},
	}

	// A server listens on a port its clients know. This one asks the
	// kernel for a free port, so that the example collides with nothing.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	check(ln.Close())

	// Server. fi.FlagSource makes node and service the local address, the
	// one to listen on. Without it they name the peer to reach (the Info's
	// DestAddr, as in fi_getinfo(3)), and the passive endpoint would
	// listen on a port of the provider's choosing.
	infos, err := fi.GetInfo(ctx, "127.0.0.1", port, fi.FlagSource, hints)
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

	// Client: without fi.FlagSource, node and service are the server's
	// address, which GetInfo puts in the Info's DestAddr.
	infos, err = fi.GetInfo(ctx, "127.0.0.1", port, 0, hints)
	check(err)
	cliFabric, err := fi.OpenFabric(infos[0])
	check(err)
	defer cliFabric.Close()
	cliEQ, err := eq.OpenEQ(cliFabric, &eq.Attr{})
	check(err)
	defer cliEQ.Close()
	cliDomain, err := cliFabric.OpenDomain(infos[0])
	check(err)
	defer cliDomain.Close()
	cliCQ, err := eq.OpenCQ(cliDomain, &eq.CQAttr{Format: eq.FormatMsg})
	check(err)
	defer cliCQ.Close()
	cli, err := ep.Open(cliDomain, infos[0])
	check(err)
	defer cli.Close()
	check(cli.Bind(cliEQ, 0))
	check(cli.Bind(cliCQ, fi.FlagSend|fi.FlagRecv))
	check(cli.Enable())
	check(cli.(ep.CM).Connect(infos[0].DestAddr, []byte("hello, I am the client")))

	// Server: the request arrives on the passive endpoint's event queue
	// with the client's private data. An endpoint opened from the
	// request's Info accepts it.
	ev, err := srvEQ.SRead(ctx)
	check(err)
	req := ev.(*eq.ConnReq)
	fmt.Printf("server: connection request with %q\n", req.Data)
	srvDomain, err := srvFabric.OpenDomain(req.Info)
	check(err)
	defer srvDomain.Close()
	srvCQ, err := eq.OpenCQ(srvDomain, &eq.CQAttr{Format: eq.FormatMsg})
	check(err)
	defer srvCQ.Close()
	srv, err := ep.Open(srvDomain, req.Info)
	check(err)
	defer srv.Close()
	check(srv.Bind(srvEQ, 0))
	check(srv.Bind(srvCQ, fi.FlagSend|fi.FlagRecv))
	check(srv.Enable())
	buf := make([]byte, 64)
	check(srv.(ep.Msg).Recv(buf, nil, fi.AddrUnspec, "server's receive"))
	check(srv.(ep.CM).Accept([]byte("welcome")))
	ev, err = srvEQ.SRead(ctx)
	check(err)
	fmt.Println("server:", ev.Type())

	// Client: connected, with the server's private data.
	ev, err = cliEQ.SRead(ctx)
	check(err)
	fmt.Printf("client: %v with %q\n", ev.Type(), ev.(*eq.Connected).Data)

	// The client sends; each side reads its completion.
	check(cli.(ep.Msg).Send([]byte("ping"), nil, fi.AddrUnspec, "client's send"))
	c := make([]eq.Completion, 1)
	_, err = cliCQ.SRead(ctx, c)
	check(err)
	fmt.Printf("client: %v completed\n", c[0].Context)
	_, err = srvCQ.SRead(ctx, c)
	check(err)
	fmt.Printf("server: %v completed: %q\n", c[0].Context, buf[:c[0].Len])

	// Shutdown gives each side one eq.Shutdown event.
	check(cli.(ep.CM).Shutdown(0))
	ev, err = cliEQ.SRead(ctx)
	check(err)
	fmt.Println("client:", ev.Type())
	ev, err = srvEQ.SRead(ctx)
	check(err)
	fmt.Println("server:", ev.Type())

	// Output:
	// server: connection request with "hello, I am the client"
	// server: FI_CONNECTED
	// client: FI_CONNECTED with "welcome"
	// client: client's send completed
	// server: server's receive completed: "ping"
	// client: FI_SHUTDOWN
	// server: FI_SHUTDOWN
}

// This example writes into another endpoint's memory (fi_rma(3)) over the
// shm provider. The target registers a buffer for remote writes
// (fi_mr_reg) under a key it chooses, since the domain's MR mode has no
// FI_MR_PROV_KEY, and gives the key to the initiator (out of band in real
// use). The initiator writes with WriteData (fi_writedata), which also
// delivers 64 bits of data to the target's completion queue, so that the
// target learns of the write. Without FI_MR_VIRT_ADDR in the MR mode the
// remote address is an offset into the registered buffer.
func ExampleRMA() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	infos, err := fi.GetInfo(ctx, "", "", 0, &fi.Info{
		Caps:       fi.CapMsg | fi.CapRMA,
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
	av, err := fi.OpenAV(domain, &fi.AVAttr{Type: fi.AVTable})
	check(err)
	defer av.Close()
	targetCQ, err := eq.OpenCQ(domain, &eq.CQAttr{Format: eq.FormatData})
	check(err)
	defer targetCQ.Close()
	target, err := ep.Open(domain, info)
	check(err)
	defer target.Close()
	initCQ, err := eq.OpenCQ(domain, &eq.CQAttr{Format: eq.FormatData})
	check(err)
	defer initCQ.Close()
	initiator, err := ep.Open(domain, info)
	check(err)
	defer initiator.Close()
	check(target.Bind(av, 0))
	check(target.Bind(targetCQ, fi.FlagSend|fi.FlagRecv))
	check(target.Enable())
	check(initiator.Bind(av, 0))
	check(initiator.Bind(initCQ, fi.FlagSend|fi.FlagRecv))
	check(initiator.Enable())

	// The target's memory, open to remote writes under key 42.
	mem := []byte("....................")
	mr, err := fi.RegisterMR(domain, &fi.MRAttr{
		Buf:          mem,
		Access:       fi.AccessRemoteWrite,
		RequestedKey: 42,
	}, 0)
	check(err)
	defer mr.Close()

	// The initiator knows the target's name, the key and the layout.
	name := make([]byte, 64)
	n, err := target.(ep.Namer).Name(name)
	check(err)
	addrs, err := av.Insert([][]byte{name[:n]}, 0)
	check(err)
	check(initiator.(ep.RMA).WriteData([]byte("written"), nil, 0xcafe, addrs[0], 6, mr.Key(), "write"))

	// The target reads its CQ, which also carries out the write (shm's
	// progress is manual), and sees the data that came with it.
	c := make([]eq.Completion, 1)
	_, err = targetCQ.SRead(ctx, c)
	check(err)
	fmt.Printf("target: data %#x, memory %q\n", c[0].Data, mem)
	_, err = initCQ.SRead(ctx, c)
	check(err)
	fmt.Println("initiator:", c[0].Context, "completed")

	// Output:
	// target: data 0xcafe, memory "......written......."
	// initiator: write completed
}

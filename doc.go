// Package gofabric is a libfabric-compatible fabric framework in Go: the
// libfabric programming model (fabric(7), fi_getinfo(3), fi_endpoint(3),
// fi_cm(3), fi_eq(3), fi_cq(3), fi_msg(3), fi_tagged(3), fi_rma(3)) as
// native Go packages. This package holds no code: it is the module's
// front page and quickstart.
//
// The API is in three packages, which mirror libfabric's headers:
//
//   - [github.com/gofabric/gofabric/fi]: GetInfo (fi_getinfo), Info and its
//     attributes, fabrics, domains, address vectors, memory regions,
//     errors (fi.Errno), the provider registry.
//   - [github.com/gofabric/gofabric/eq]: event queues, completion queues,
//     counters.
//   - [github.com/gofabric/gofabric/ep]: endpoints, passive endpoints, and
//     their abilities (messages, tagged messages, RMA, connection
//     management, multicast).
//
// Transports are providers, which register themselves when imported:
// import [github.com/gofabric/gofabric/providers/all] for every one (tcp,
// shm, udp and verbs), or a single provider package. They run on Linux.
//
// # Quickstart
//
// The program below, the module's example_test.go (go test runs it and
// checks its output), is a tcp server and client on loopback. To make it
// a program of your own, name the package main and the function main.
//
//	package gofabric_test
//
//	import (
//		"context"
//		"fmt"
//		"log"
//		"net"
//		"strconv"
//		"time"
//
//		"github.com/gofabric/gofabric/ep"
//		"github.com/gofabric/gofabric/eq"
//		"github.com/gofabric/gofabric/fi"
//		_ "github.com/gofabric/gofabric/providers/all" // registers tcp, shm, udp and verbs
//	)
//
//	// Example is a connected (FI_EP_MSG) server and client over the tcp
//	// provider on loopback: the client connects with private data, the server
//	// accepts, and they exchange a message each way. Both sides run in one
//	// goroutine here; in real use they are two programs.
//	func Example() {
//		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
//		defer cancel()
//		hints := &fi.Info{
//			Caps:       fi.CapMsg,
//			EPAttr:     &fi.EPAttr{Type: fi.EPTypeMsg},
//			FabricAttr: &fi.FabricAttr{ProvName: "tcp"},
//		}
//		port := freePort() // a real server has a port its clients know, such as "4000"
//
//		// Server. fi.FlagSource makes node and service the local address, the
//		// one to listen on. (Without it they would name a peer, and the
//		// passive endpoint would listen on a port of the provider's choosing.)
//		infos, err := fi.GetInfo(ctx, "127.0.0.1", port, fi.FlagSource, hints)
//		check(err)
//		srvFabric, err := fi.OpenFabric(infos[0])
//		check(err)
//		defer srvFabric.Close()
//		srvEQ, err := eq.OpenEQ(srvFabric, nil)
//		check(err)
//		defer srvEQ.Close()
//		pep, err := ep.OpenPassive(srvFabric, infos[0])
//		check(err)
//		defer pep.Close()
//		check(pep.Bind(srvEQ, 0))
//		check(pep.Listen())
//
//		// Client. Without fi.FlagSource, node and service are the server's
//		// address: GetInfo puts it in the Info's DestAddr.
//		infos, err = fi.GetInfo(ctx, "127.0.0.1", port, 0, hints)
//		check(err)
//		cliFabric, err := fi.OpenFabric(infos[0])
//		check(err)
//		defer cliFabric.Close()
//		cliEQ, err := eq.OpenEQ(cliFabric, nil)
//		check(err)
//		defer cliEQ.Close()
//		cli := open(cliFabric, infos[0], cliEQ)
//		defer cli.close()
//		cliBuf := make([]byte, 64)
//		check(cli.msg.Recv(cliBuf, nil, fi.AddrUnspec, nil))
//		check(cli.cm.Connect(infos[0].DestAddr, []byte("hello")))
//
//		// Server: the request carries the client's private data; an endpoint
//		// opened from the request's Info accepts it.
//		req := next(ctx, srvEQ).(*eq.ConnReq)
//		fmt.Printf("server: connection request with %q\n", req.Data)
//		srv := open(srvFabric, req.Info, srvEQ)
//		defer srv.close()
//		srvBuf := make([]byte, 64)
//		check(srv.msg.Recv(srvBuf, nil, fi.AddrUnspec, nil))
//		check(srv.cm.Accept(nil))
//		fmt.Println("server:", next(ctx, srvEQ).Type())
//		fmt.Println("client:", next(ctx, cliEQ).Type())
//
//		// A message each way; every operation ends in a completion.
//		check(cli.msg.Send([]byte("ping"), nil, fi.AddrUnspec, nil))
//		cli.wait(ctx)
//		fmt.Printf("server: received %q\n", srvBuf[:srv.wait(ctx).Len])
//		check(srv.msg.Send([]byte("pong"), nil, fi.AddrUnspec, nil))
//		srv.wait(ctx)
//		fmt.Printf("client: received %q\n", cliBuf[:cli.wait(ctx).Len])
//
//		// Shutdown gives each side one eq.Shutdown event.
//		check(cli.cm.Shutdown(0))
//		fmt.Println("client:", next(ctx, cliEQ).Type())
//		fmt.Println("server:", next(ctx, srvEQ).Type())
//
//		// Output:
//		// server: connection request with "hello"
//		// server: FI_CONNECTED
//		// client: FI_CONNECTED
//		// server: received "ping"
//		// client: received "pong"
//		// client: FI_SHUTDOWN
//		// server: FI_SHUTDOWN
//	}
//
//	// conn is an active endpoint with its domain and completion queue.
//	type conn struct {
//		domain fi.Domain
//		cq     eq.CompletionQueue
//		ep     ep.Endpoint
//		msg    ep.Msg // the endpoint's messages (fi_msg(3))
//		cm     ep.CM  // the endpoint's connection management (fi_cm(3))
//	}
//
//	// open opens a domain, a completion queue and an endpoint for info,
//	// binds the event queue q and the completion queue to the endpoint, and
//	// enables it.
//	func open(fabric fi.Fabric, info *fi.Info, q eq.EventQueue) *conn {
//		c := &conn{}
//		var err error
//		c.domain, err = fabric.OpenDomain(info)
//		check(err)
//		c.cq, err = eq.OpenCQ(c.domain, &eq.CQAttr{Format: eq.FormatMsg})
//		check(err)
//		c.ep, err = ep.Open(c.domain, info)
//		check(err)
//		check(c.ep.Bind(q, 0))
//		check(c.ep.Bind(c.cq, fi.FlagSend|fi.FlagRecv))
//		check(c.ep.Enable())
//		c.msg, c.cm = c.ep.(ep.Msg), c.ep.(ep.CM)
//		return c
//	}
//
//	// close closes the endpoint, then its completion queue and domain:
//	// children before their parents (fi_close(3)).
//	func (c *conn) close() {
//		c.ep.Close()
//		c.cq.Close()
//		c.domain.Close()
//	}
//
//	// wait waits for the next completion (fi_cq_sread).
//	func (c *conn) wait(ctx context.Context) eq.Completion {
//		entries := make([]eq.Completion, 1)
//		_, err := c.cq.SRead(ctx, entries)
//		check(err) // an error entry is fi.EAVAIL, read with c.cq.ReadErr
//		return entries[0]
//	}
//
//	// next waits for the next event of q (fi_eq_sread).
//	func next(ctx context.Context, q eq.EventQueue) eq.Event {
//		ev, err := q.SRead(ctx)
//		check(err) // an error entry is fi.EAVAIL, read with q.ReadErr
//		return ev
//	}
//
//	// freePort returns a TCP port of 127.0.0.1 that is free now, so that the
//	// example collides with nothing.
//	func freePort() string {
//		l, err := net.Listen("tcp", "127.0.0.1:0")
//		check(err)
//		defer l.Close()
//		return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
//	}
//
//	func check(err error) {
//		if err != nil {
//			log.Fatal(err)
//		}
//	}
//
// Each package has more examples (go doc -http, or pkg.go.dev): GetInfo
// and what fi.FlagSource changes (fi), blocking reads with a deadline and
// an event loop with error entries (eq), a connection with private data
// and an RMA write (ep), RDM endpoints with address vectors, tagged
// messages and FI_SOURCE (providers/tcp, providers/shm), datagrams and
// multicast (providers/udp).
package gofabric

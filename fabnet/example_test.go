package fabnet_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/gofabric/gofabric/fabnet"
	"github.com/gofabric/gofabric/fi"
	_ "github.com/gofabric/gofabric/providers/all"
)

// An echo server and its client over connected (FI_EP_MSG) endpoints of
// the tcp provider: Listen, Accept and Dial as with package net, with
// private data on the connection request, and blocking Send and Recv
// that take a context. Both sides run in one process here; in real use
// each is a program of its own, the client given the server's address.
func Example_tcpEcho() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln, err := fabnet.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()

	// The server accepts a connection and sends every message back until
	// the client goes away.
	server := func() error {
		c, err := ln.Accept(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 4096)
		for count := 0; ; count++ {
			n, err := c.Recv(ctx, buf)
			if errors.Is(err, fi.ESHUTDOWN) {
				fmt.Printf("server: %s left after %d messages\n", c.PeerData(), count)
				return nil
			}
			if err != nil {
				return err
			}
			if err := c.Send(ctx, buf[:n]); err != nil {
				return err
			}
		}
	}

	// The client connects, saying who it is, and has two messages echoed.
	client := func(addr string) error {
		d := fabnet.Dialer{Data: []byte("client 1")}
		c, err := d.Dial(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 4096)
		for _, msg := range []string{"hello", "anyone there?"} {
			if err := c.Send(ctx, []byte(msg)); err != nil {
				return err
			}
			n, err := c.Recv(ctx, buf)
			if err != nil {
				return err
			}
			fmt.Printf("client: %q\n", buf[:n])
		}
		return nil
	}

	done := make(chan error, 1)
	go func() { done <- server() }()
	if err := client(ln.Addr().String()); err != nil {
		log.Fatal(err)
	}
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// client: "hello"
	// client: "anyone there?"
	// server: client 1 left after 2 messages
}

// An echo server and its client over reliable unconnected (FI_EP_RDM)
// endpoints of the tcp provider (tcp;ofi_rxm): OpenRDM gives each side
// an endpoint with its address vector, Insert the fi.Addr of a peer from
// its name. The client's first message is its own name, so that the
// server can answer; an empty message says goodbye.
func Example_tcpRDMEcho() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := fabnet.OpenRDM(ctx, "tcp", "127.0.0.1", "0")
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	server := func() error {
		buf := make([]byte, 4096)
		n, err := srv.Recv(ctx, buf)
		if err != nil {
			return err
		}
		client, err := srv.Insert(buf[:n])
		if err != nil {
			return err
		}
		for count := 0; ; count++ {
			n, err := srv.Recv(ctx, buf)
			if err != nil {
				return err
			}
			if n == 0 {
				fmt.Printf("server: goodbye after %d messages\n", count)
				return nil
			}
			if err := srv.SendTo(ctx, buf[:n], client); err != nil {
				return err
			}
		}
	}

	client := func(server []byte) error {
		c, err := fabnet.OpenRDM(ctx, "tcp", "127.0.0.1", "0")
		if err != nil {
			return err
		}
		defer c.Close()
		to, err := c.Insert(server)
		if err != nil {
			return err
		}
		me, err := c.Name()
		if err != nil {
			return err
		}
		if err := c.SendTo(ctx, me, to); err != nil {
			return err
		}
		buf := make([]byte, 4096)
		for _, msg := range []string{"hello", "anyone there?"} {
			if err := c.SendTo(ctx, []byte(msg), to); err != nil {
				return err
			}
			n, err := c.Recv(ctx, buf)
			if err != nil {
				return err
			}
			fmt.Printf("client: %q\n", buf[:n])
		}
		return c.SendTo(ctx, nil, to)
	}

	done := make(chan error, 1)
	go func() { done <- server() }()
	name, err := srv.Name()
	if err != nil {
		log.Fatal(err)
	}
	if err := client(name); err != nil {
		log.Fatal(err)
	}
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// client: "hello"
	// client: "anyone there?"
	// server: goodbye after 2 messages
}

// The same echo over the shm provider, between processes of one host
// (here one process): the provider names the endpoints itself, so
// OpenRDM takes no address.
func Example_shmEcho() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := fabnet.OpenRDM(ctx, "shm", "", "")
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	server := func() error {
		buf := make([]byte, 4096)
		n, err := srv.Recv(ctx, buf)
		if err != nil {
			return err
		}
		client, err := srv.Insert(buf[:n])
		if err != nil {
			return err
		}
		for count := 0; ; count++ {
			n, err := srv.Recv(ctx, buf)
			if err != nil {
				return err
			}
			if n == 0 {
				fmt.Printf("server: goodbye after %d messages\n", count)
				return nil
			}
			if err := srv.SendTo(ctx, buf[:n], client); err != nil {
				return err
			}
		}
	}

	client := func(server []byte) error {
		c, err := fabnet.OpenRDM(ctx, "shm", "", "")
		if err != nil {
			return err
		}
		defer c.Close()
		to, err := c.Insert(server)
		if err != nil {
			return err
		}
		me, err := c.Name()
		if err != nil {
			return err
		}
		if err := c.SendTo(ctx, me, to); err != nil {
			return err
		}
		buf := make([]byte, 4096)
		for _, msg := range []string{"hello", "anyone there?"} {
			if err := c.SendTo(ctx, []byte(msg), to); err != nil {
				return err
			}
			n, err := c.Recv(ctx, buf)
			if err != nil {
				return err
			}
			fmt.Printf("client: %q\n", buf[:n])
		}
		return c.SendTo(ctx, nil, to)
	}

	done := make(chan error, 1)
	go func() { done <- server() }()
	name, err := srv.Name()
	if err != nil {
		log.Fatal(err)
	}
	if err := client(name); err != nil {
		log.Fatal(err)
	}
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// client: "hello"
	// client: "anyone there?"
	// server: goodbye after 2 messages
}

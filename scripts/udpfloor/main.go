//go:build linux

// Command udpfloor is the floor under the udp comparison of
// scripts/bench-compare.sh: a ping-pong of datagrams over loopback made of
// system calls alone, those the udp providers make for one: sendto(2), then
// recvfrom(2) on a non-blocking socket until the answer is there
// (gofabric's provider receives with recvfrom, C libfabric's with
// recvmsg), with no fabric library. This is the Go side, and
// scripts/udpfloor/c/udpfloor.c makes the same calls in C. Run against each
// other with bench-compare.sh (-C and -G), their ratio is what the
// language and its runtime cost for the same kernel work, which
// fi_pingpong's Go/C ratio for udp includes: scripts/bench-report.sh puts
// both in the report.
//
// It takes fi_pingpong's options as bench-compare.sh passes them (-p udp
// -e dgram -S size -I iterations, -B port for the server, -P port and the
// server's address for the client), meets its peer over TCP on that port
// to swap the datagram sockets' ports, runs 10 round trips unmeasured and
// then the measured ones, and prints the client's result as fi_pingpong's
// row (bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec). Loopback
// only (127.0.0.1). It is not part of the tests.
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// warmup is how many round trips run before the measured ones.
const warmup = 10

// stall is how long a side waits for a datagram before it gives up (a
// datagram lost on loopback would otherwise hang the run).
const stall = 10 * time.Second

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "udpfloor:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("udpfloor", flag.ContinueOnError)
	prov := fs.String("p", "udp", "provider (udp only)")
	ep := fs.String("e", "dgram", "endpoint type (dgram only)")
	size := fs.Int("S", 64, "datagram size in bytes (1-65507)")
	iters := fs.Int("I", 1000, "measured round trips")
	srvPort := fs.Int("B", 0, "server: the TCP port to listen on")
	dstPort := fs.Int("P", 0, "client: the server's TCP port")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *prov != "udp" || *ep != "dgram":
		return fmt.Errorf("-p %s -e %s: only -p udp -e dgram", *prov, *ep)
	case *size < 1 || *size > 65507:
		return fmt.Errorf("-S %d: a datagram holds 1 to 65507 bytes", *size)
	case *iters < 1:
		return fmt.Errorf("-I %d: at least one round trip", *iters)
	case (*srvPort == 0) == (*dstPort == 0):
		return errors.New("give -B PORT (server) or -P PORT 127.0.0.1 (client)")
	case *dstPort != 0 && fs.Arg(0) != "127.0.0.1":
		return fmt.Errorf("server address %q: loopback only (127.0.0.1)", fs.Arg(0))
	}
	client := *dstPort != 0

	var ctrl net.Conn
	if client {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*dstPort)))
		if err != nil {
			return err
		}
		ctrl = c
	} else {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*srvPort)))
		if err != nil {
			return err
		}
		c, err := ln.Accept()
		ln.Close()
		if err != nil {
			return err
		}
		ctrl = c
	}
	defer ctrl.Close()

	fd, port, err := openSocket()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var mine, theirs [2]byte
	binary.BigEndian.PutUint16(mine[:], port)
	if _, err := ctrl.Write(mine[:]); err != nil {
		return err
	}
	if _, err := io.ReadFull(ctrl, theirs[:]); err != nil {
		return err
	}
	// struct sockaddr_in of 127.0.0.1 and the peer's port.
	peer := [unix.SizeofSockaddrInet4]byte{unix.AF_INET, 0, theirs[0], theirs[1], 127, 0, 0, 1}

	p := &pinger{fd: fd, peer: peer, buf: make([]byte, max(*size, 2048)), size: *size}
	runtime.LockOSThread() // as fi_pingpong's timed loop does
	defer runtime.UnlockOSThread()
	if err := p.loop(warmup, client); err != nil {
		return err
	}
	start := time.Now()
	if err := p.loop(*iters, client); err != nil {
		return err
	}
	elapsed := time.Since(start)
	if client {
		us := float64(elapsed.Microseconds())
		fmt.Fprintf(stdout, "%-8s%-8s%-9s%-12s%-11s%-11s%-12s%s\n", "bytes", "#sent", "#ack", "total", "time", "MB/sec", "usec/xfer", "Mxfers/sec")
		fmt.Fprintf(stdout, "%-8d%-8d=%-8d%-12d%-11s%-11.2f%-12.2f%.2f\n", *size, *iters, *iters, 2*(*iters)*(*size),
			fmt.Sprintf("%.2fs", elapsed.Seconds()), 2*float64(*iters)*float64(*size)/us, us/2/float64(*iters), 2*float64(*iters)/us)
	}
	return nil
}

// openSocket opens a non-blocking datagram socket on 127.0.0.1 and an
// ephemeral port, and returns it with the port.
func openSocket() (int, uint16, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, 0, err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	return fd, uint16(sa.(*unix.SockaddrInet4).Port), nil
}

// pinger is one side's socket, peer and buffer.
type pinger struct {
	fd   int
	peer [unix.SizeofSockaddrInet4]byte
	buf  []byte
	size int
	from [unix.SizeofSockaddrInet6]byte // the sender's address, as FI_SOURCE asks
}

// loop makes n round trips: the client sends first, the server answers.
func (p *pinger) loop(n int, client bool) error {
	for range n {
		if client {
			if err := p.send(); err != nil {
				return err
			}
		}
		if err := p.recv(); err != nil {
			return err
		}
		if !client {
			if err := p.send(); err != nil {
				return err
			}
		}
	}
	return nil
}

// send is one sendto(2) of size bytes to the peer, as the providers'
// fi_inject makes it.
func (p *pinger) send() error {
	for {
		_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(p.fd), uintptr(unsafe.Pointer(&p.buf[0])), uintptr(p.size), 0,
			uintptr(unsafe.Pointer(&p.peer[0])), uintptr(len(p.peer)))
		switch e {
		case 0:
			return nil
		case unix.EINTR, unix.EAGAIN, unix.ENOBUFS:
			continue
		}
		return fmt.Errorf("sendto: %w", e)
	}
}

// recv calls recvfrom(2) until a datagram is there, taking the sender's
// address, as the providers' queue reads do when they poll.
func (p *pinger) recv() error {
	var deadline time.Time
	for polls := 1; ; polls++ {
		nlen := uint32(len(p.from))
		_, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(p.fd), uintptr(unsafe.Pointer(&p.buf[0])), uintptr(len(p.buf)),
			unix.MSG_TRUNC, uintptr(unsafe.Pointer(&p.from[0])), uintptr(unsafe.Pointer(&nlen)))
		switch e {
		case 0:
			return nil
		case unix.EAGAIN, unix.EINTR:
		default:
			return fmt.Errorf("recvfrom: %w", e)
		}
		if polls%65536 == 0 {
			switch now := time.Now(); {
			case deadline.IsZero():
				deadline = now.Add(stall)
			case now.After(deadline):
				return fmt.Errorf("no datagram for %v", stall)
			}
		}
	}
}

package fi_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/gofabric/gofabric/fi"
	_ "github.com/gofabric/gofabric/providers/all"
)

// This example asks for connected (FI_EP_MSG) endpoints of the tcp
// provider that reach 127.0.0.1 (fi_getinfo(3)). The providers register
// themselves when a program imports them; providers/all imports every one.
// GetInfo returns the matching entries best first, each a complete
// description to open a fabric, a domain and endpoints from.
func ExampleGetInfo() {
	infos, err := fi.GetInfo(context.Background(), "127.0.0.1", "", 0, &fi.Info{
		Caps:       fi.CapMsg,
		EPAttr:     &fi.EPAttr{Type: fi.EPTypeMsg},
		FabricAttr: &fi.FabricAttr{ProvName: "tcp"},
	})
	if err != nil {
		log.Fatal(err)
	}
	info := infos[0]
	fmt.Println("provider:", info.FabricAttr.ProvName)
	fmt.Println("endpoint type:", info.EPAttr.Type)
	fmt.Println("fabric:", info.FabricAttr.Name)
	fmt.Println("domain:", info.DomainAttr.Name)
	fmt.Println("address format:", info.AddrFormat)
	fmt.Println("has FI_MSG:", info.Caps&fi.CapMsg != 0)

	// Output:
	// provider: tcp
	// endpoint type: FI_EP_MSG
	// fabric: 127.0.0.1/32
	// domain: lo
	// address format: FI_SOCKADDR_IN
	// has FI_MSG: true
}

// This example shows what fi.FlagSource changes (fi_getinfo(3)): with it,
// node and service are the local address, where a passive endpoint opened
// from the Info listens; without it they are the peer's, where an
// endpoint opened from the Info connects or sends. A server therefore
// passes fi.FlagSource with its own port, and a client passes the
// server's address without it. GetInfo only describes: it binds nothing.
func ExampleGetInfo_source() {
	hints := &fi.Info{
		EPAttr:     &fi.EPAttr{Type: fi.EPTypeMsg},
		FabricAttr: &fi.FabricAttr{ProvName: "tcp"},
	}
	for _, flags := range []fi.Flags{fi.FlagSource, 0} {
		infos, err := fi.GetInfo(context.Background(), "127.0.0.1", "4000", flags, hints)
		if err != nil {
			log.Fatal(err)
		}
		info := infos[0]
		fmt.Println("with FI_SOURCE:", flags == fi.FlagSource)
		fmt.Println("  source:", fi.AddrString(info.AddrFormat, info.SrcAddr))
		if info.DestAddr == nil {
			fmt.Println("  no destination")
		} else {
			fmt.Println("  destination:", fi.AddrString(info.AddrFormat, info.DestAddr))
		}
	}

	// Output:
	// with FI_SOURCE: true
	//   source: fi_sockaddr_in://127.0.0.1:4000
	//   no destination
	// with FI_SOURCE: false
	//   source: fi_sockaddr_in://127.0.0.1:0
	//   destination: fi_sockaddr_in://127.0.0.1:4000
}

// When no provider offers what the hints ask for, GetInfo returns an error
// with fi.ENODATA in its chain, as fi_getinfo returns -FI_ENODATA; unlike
// C, its *fi.NoMatchError says why each provider declined (its Error
// text lists them all). Here the shm provider is asked for datagram
// endpoints, which it does not have.
func ExampleGetInfo_noMatch() {
	_, err := fi.GetInfo(context.Background(), "", "", 0, &fi.Info{
		EPAttr:     &fi.EPAttr{Type: fi.EPTypeDgram},
		FabricAttr: &fi.FabricAttr{ProvName: "shm"},
	})
	fmt.Println(fi.Code(err).Name(), errors.Is(err, fi.ENODATA))
	var nm *fi.NoMatchError
	if errors.As(err, &nm) {
		for _, r := range nm.Reasons {
			if r.Provider == "shm" {
				fmt.Println(r)
			}
		}
	}

	// Output:
	// FI_ENODATA true
	// shm: ep type FI_EP_DGRAM not supported (offers FI_EP_RDM)
}

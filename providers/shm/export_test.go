//go:build linux

package shm

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// WriteRawSlot publishes, from endpoint from, a slot that corrupt fills
// (over a zeroed slot) in the inbox of dest: a hostile peer, for tests.
func WriteRawSlot(from ep.Endpoint, dest fi.Addr, corrupt func(slot []byte)) error {
	e := from.(*endpoint)
	e.mu.Lock()
	defer e.mu.Unlock()
	p, err := e.dp.peerFor(e, dest)
	if err != nil {
		return err
	}
	s := p.q.reserve()
	if s == nil {
		return fi.EAGAIN
	}
	clear(s)
	corrupt(s)
	p.q.commit()
	return nil
}

// RegionPath returns the inbox file of endpoint name.
func RegionPath(name string) string { return regionPath(name) }

// BellAddrs returns the socket addresses at which a process could ring
// the doorbell of endpoint name ("@..." for an abstract address).
func BellAddrs(name string) []string { return []string{bellPath(name)} }

// SetBaseDir points the provider at dir instead of /dev/shm until the
// returned function restores it.
func SetBaseDir(dir string) (restore func()) {
	old := shmDir
	shmDir = dir
	return func() { shmDir = old }
}

// Scribble maps the inbox of endpoint name, as any process of its user
// can, and overwrites state of the entry that peer (an endpoint name)
// claimed with garbage from seed: what is "ring" (sequence words and
// slots), "head", "claim" (claim, pid, nonce and ready words), "chunks"
// (the bounce chunks' busy words), "active" (the active-peer bitmap),
// "entry" (all of the entry's header and ring) or "header" (the region
// header).
func Scribble(name, peer, what string, seed uint64) error {
	fd, err := unix.Open(regionPath(name), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	mem, err := unix.Mmap(fd, 0, regionSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	_ = unix.Close(fd)
	if err != nil {
		return err
	}
	defer unix.Munmap(mem)
	r := &region{mem: mem}
	i := -1
	for k := range maxPeers {
		if r.peerName(k) == peer {
			i = k
		}
	}
	if i < 0 {
		return fi.ENOENT
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	garbage := func(b []byte) {
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
	}
	off := pageSize + i*entrySize
	le := binary.LittleEndian
	switch what {
	case "ring":
		garbage(mem[off+pSlots : off+pSlots+ringBytes])
	case "head":
		le.PutUint64(mem[off+pHead:], rng.Uint64())
	case "claim":
		garbage(mem[off+pClaim : off+pReady+4])
	case "chunks":
		for k := range sarChunks {
			busy, _ := r.sarChunkMem(off, k)
			r.word64(busy).Store(1)
		}
	case "active":
		old := r.word64(hActive).Load()
		r.word64(hActive).Store(old&^(1<<i) | 0xf0000000)
	case "entry":
		garbage(mem[off : off+pSAR])
	case "header":
		garbage(mem[:pageSize])
	default:
		return fi.EINVAL
	}
	return nil
}

// Sleepers returns the number of readers sleeping on the doorbell of
// endpoint e.
func Sleepers(e ep.Endpoint) int {
	x := e.(*endpoint)
	x.sleepMu.Lock()
	defer x.sleepMu.Unlock()
	return x.sleepers
}

// ParseSlot reports whether a receiver takes slot b as one a correct peer
// writes (slotHeader.parse).
func ParseSlot(b []byte) bool {
	var h slotHeader
	return h.parse(b)
}

// SlotSize is a slot's size: header and inline payload.
const SlotSize = slotHdr + inlineMax

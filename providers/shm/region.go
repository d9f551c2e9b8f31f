package shm

import (
	"crypto/rand"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// A region is an endpoint's inbox: a file in /dev/shm, mode 0600, mapped
// shared by its owner (the receiving endpoint) and by every peer that
// sends to it. Layout (all offsets fixed, little-endian words):
//
//	[0, pageSize)            header: magic, version, geometry, owner pid,
//	                         uid and nonce, the sleeping word, the active
//	                         peer bitmap
//	then maxPeers entries of entrySize bytes, one per sending peer:
//	  [0, 64)                claim word, peer pid, peer nonce
//	  [64, 128)              the peer's name (NUL padded)
//	  [128, 192)             ring head (written by the owner)
//	  [192, pageSize)        unused
//	  ringSlots slots of slotSize bytes
//	  bounce: sarChunks chunks of sarChunk bytes, each after a 64-byte
//	  header whose first word is the chunk's busy flag
//
// Everything a peer writes is checked by the owner before use: slot
// fields are validated (proto.go), ring indices are bounded, and data
// lengths never exceed the slot or chunk they claim to fill.
const (
	pageSize      = 4096
	regionMagic   = 0x676f666162736d31 // "gofabsm1"
	regionVersion = 1
	maxPeers      = 32
	ringSlots     = 256
	slotSize      = 256
	sarChunks     = 4
	sarChunk      = 16 << 10
	sarStride     = 64 + sarChunk
	entryHdrSize  = pageSize
	ringBytes     = ringSlots * slotSize
	entrySize     = entryHdrSize + ringBytes + sarChunks*sarStride
	regionSize    = pageSize + maxPeers*entrySize
	maxNameLen    = 64
)

// Header word offsets.
const (
	hMagic    = 0
	hVersion  = 8  // u32
	hPeers    = 12 // u32
	hSlots    = 16 // u32
	hSlotSize = 20 // u32
	hPID      = 24 // u32
	hUID      = 28 // u32
	hNonce    = 32
	hSleeping = 64  // u32, own cache line: the owner blocks, ring the doorbell
	hActive   = 128 // u64 bitmap of claimed peer entries, own cache line
)

// Peer entry offsets.
const (
	pClaim = 0 // u32: 0 free, else the claimer's pid
	pPID   = 8
	pNonce = 16
	pReady = 24 // u32: 1 once the entry is initialised
	// The claimer's probe: the address of a word in its memory and the
	// value there; the owner reads it with process_vm_readv and stores
	// in pCMA whether that worked (cmaYes) or not (cmaNo).
	pProbe    = 32
	pProbeVal = 40
	pCMA      = 48
	pName     = 64
	pHead     = 128
	pSlots    = entryHdrSize
	pSAR      = entryHdrSize + ringBytes
)

// Values of an entry's pCMA word.
const (
	cmaYes = 1
	cmaNo  = 2
)

// region is a mapped inbox.
type region struct {
	name  string // the endpoint name, "fi_shm://..."
	path  string
	mem   []byte
	owner bool
}

// shmDir is where regions live; tests may point it elsewhere.
var shmDir = "/dev/shm"

// regionPath returns the file of the endpoint name for the current user.
func regionPath(name string) string {
	key := strings.TrimPrefix(name, addrPrefix)
	return filepath.Join(shmDir, "gofabric-shm."+strconv.Itoa(os.Getuid())+"."+key)
}

// createRegion creates and maps the inbox of the endpoint name, owned by
// this process. A file left by a process that died is removed first; one
// whose owner lives gives fi.EADDRINUSE.
func createRegion(name string) (*region, error) {
	path := regionPath(name)
	for attempt := 0; ; attempt++ {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
		if err == unix.EEXIST && attempt == 0 {
			if stale(path) {
				_ = unix.Unlink(path)
				continue
			}
			return nil, errors.Wrapf(fi.EADDRINUSE, "shm: endpoint name %q is in use by a live process", name)
		}
		if err != nil {
			return nil, errors.Wrapf(fi.Code(err), "shm: create %s: %v", path, err)
		}
		r, err := mapRegion(fd, name, path, true)
		if err != nil {
			_ = unix.Unlink(path)
			return nil, err
		}
		return r, nil
	}
}

// mapRegion sizes (owner) and maps fd, which it closes.
func mapRegion(fd int, name, path string, owner bool) (*region, error) {
	defer unix.Close(fd)
	if owner {
		if err := unix.Ftruncate(fd, regionSize); err != nil {
			return nil, errors.Wrapf(fi.Code(err), "shm: size %s: %v", path, err)
		}
	} else {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, errors.Wrapf(fi.Code(err), "shm: stat %s: %v", path, err)
		}
		if st.Size != regionSize || st.Uid != uint32(os.Getuid()) || st.Mode&0o077 != 0 {
			return nil, errors.Wrapf(fi.EINVAL, "shm: %s is not a gofabric region of this user (size %d, uid %d, mode %o)", path, st.Size, st.Uid, st.Mode&0o777)
		}
	}
	mem, err := unix.Mmap(fd, 0, regionSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, errors.Wrapf(fi.Code(err), "shm: map %s: %v", path, err)
	}
	r := &region{name: name, path: path, mem: mem, owner: owner}
	if owner {
		var nonce [8]byte
		_, _ = rand.Read(nonce[:])
		le := binary.LittleEndian
		le.PutUint32(mem[hVersion:], regionVersion)
		le.PutUint32(mem[hPeers:], maxPeers)
		le.PutUint32(mem[hSlots:], ringSlots)
		le.PutUint32(mem[hSlotSize:], slotSize)
		le.PutUint32(mem[hPID:], uint32(os.Getpid()))
		le.PutUint32(mem[hUID:], uint32(os.Getuid()))
		copy(mem[hNonce:hNonce+8], nonce[:])
		r.word64(hMagic).Store(regionMagic) // last: the region is valid
	} else if err := r.check(); err != nil {
		_ = unix.Munmap(mem)
		return nil, err
	}
	return r, nil
}

// openRegion maps the inbox of the peer endpoint name. A missing file, or
// one whose owner died, gives fi.ENOENT (the peer may come later).
func openRegion(name string) (*region, error) {
	path := regionPath(name)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		if err == unix.ENOENT {
			return nil, fi.ENOENT
		}
		return nil, errors.Wrapf(fi.Code(err), "shm: open %s: %v", path, err)
	}
	r, err := mapRegion(fd, name, path, false)
	if err != nil {
		return nil, err
	}
	if !r.ownerAlive() {
		r.close()
		return nil, fi.ENOENT
	}
	return r, nil
}

// check validates a peer's header: magic, version and geometry.
func (r *region) check() error {
	le := binary.LittleEndian
	m := r.mem
	if r.word64(hMagic).Load() != regionMagic || le.Uint32(m[hVersion:]) != regionVersion ||
		le.Uint32(m[hPeers:]) != maxPeers || le.Uint32(m[hSlots:]) != ringSlots || le.Uint32(m[hSlotSize:]) != slotSize {
		return errors.Wrapf(fi.EINVAL, "shm: %s: not a version %d region of this build", r.path, regionVersion)
	}
	return nil
}

// pid returns the owner's process id.
func (r *region) pid() int { return int(binary.LittleEndian.Uint32(r.mem[hPID:])) }

// nonce returns the owner's random incarnation number.
func (r *region) nonce() uint64 { return binary.LittleEndian.Uint64(r.mem[hNonce:]) }

// ownerOpen reports whether the owner still serves the region: its
// process runs and it has not closed the endpoint.
func (r *region) ownerOpen() bool { return r.word64(hMagic).Load() == regionMagic && r.ownerAlive() }

// ownerAlive reports whether the owning process still runs.
func (r *region) ownerAlive() bool { return pidAlive(r.pid()) }

// pidAlive reports whether process pid exists.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := unix.Kill(pid, 0)
	return err == nil || err == unix.EPERM
}

// stale reports whether the region file at path belongs to a process that
// is gone. A file without a valid header (its creator crashed before
// writing one, or is writing it now) is stale once it is 5 seconds old.
func stale(path string) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err == unix.ENOENT
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Uid != uint32(os.Getuid()) {
		return false
	}
	var hdr [64]byte
	n, _ := unix.Pread(fd, hdr[:], 0)
	pid := binary.LittleEndian.Uint32(hdr[hPID:])
	if n < len(hdr) || pid == 0 {
		return time.Since(time.Unix(st.Mtim.Unix())) > 5*time.Second
	}
	return !pidAlive(int(pid))
}

// cleanStale removes the regions of this user whose owners are gone,
// once per process: what a killed process left behind.
func cleanStale() {
	cleanOnce.Do(func() {
		pattern := filepath.Join(shmDir, "gofabric-shm."+strconv.Itoa(os.Getuid())+".*")
		paths, _ := filepath.Glob(pattern)
		for _, p := range paths {
			if stale(p) {
				_ = os.Remove(p)
			}
		}
	})
}

var cleanOnce sync.Once

// close unmaps the region; the owner also removes its file.
func (r *region) close() {
	if r.owner {
		r.word64(hMagic).Store(0)
		_ = unix.Unlink(r.path)
	}
	_ = unix.Munmap(r.mem)
	r.mem = nil
}

// entry returns the byte range of peer entry i.
func (r *region) entry(i int) []byte {
	off := pageSize + i*entrySize
	return r.mem[off : off+entrySize : off+entrySize]
}

// peerName returns the name a peer wrote in entry i (owner side).
func (r *region) peerName(i int) string {
	b := r.entry(i)[pName : pName+maxNameLen]
	if n := indexByte(b, 0); n >= 0 {
		b = b[:n]
	}
	return string(b)
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

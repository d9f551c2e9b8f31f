//go:build linux

package shm

import (
	"crypto/rand"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
	"golang.org/x/sys/unix"
)

// A region is an endpoint's inbox: a file in the user's directory (see
// userDir), mode 0600, mapped shared by its owner (the receiving
// endpoint) and by every peer that sends to it. Layout (all offsets
// fixed, little-endian words):
//
//	[0, pageSize)            header: magic, version, geometry, owner pid,
//	                         uid and nonce, the sleeping word, the active
//	                         peer bitmap
//	then maxPeers entries of entrySize bytes, one per sending peer:
//	  [0, 64)                claim word, peer pid, peer nonce, ready,
//	                         CMA probe and answer, want-room word
//	  [64, 128)              the peer's name (NUL padded)
//	  [128, 192)             ring head (written by the owner)
//	  [192, 200)             split message state (pSplit)
//	  [256, pageSize)        unused
//	  ringSlots slots of slotSize bytes
//	  bounce: sarChunks chunks of sarChunk bytes, each after a 64-byte
//	  header whose first word is the chunk's busy flag
//
// Everything a peer writes is checked by the owner before use: slot
// fields are validated (proto.go), ring indices are bounded, and data
// lengths never exceed the slot or chunk they claim to fill. Words that
// only one side writes are checked by the other against what it knows
// (checkInbound, checkPeer): a region that a same-user process scribbled
// over ends in errors on the entries concerned, never in a silent stall.
const (
	pageSize      = 4096
	regionMagic   = 0x676f666162736d31 // "gofabsm1"
	regionVersion = 4                  // 3: flagAck; 4: protoBuf, flagSplit
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
	// pWant is set by the claimer when it waits for room (ring slots,
	// bounce chunks) or for the CMA answer; the owner clears it when it
	// made some and then rings the claimer's doorbell.
	pWant = 56
	pName = 64
	pHead = 128
	// pSplit is the state of the entry's split message (opGrant): its
	// number (the grant's data) times 8 plus a done* value, 0 while the
	// grant is pending. Both sides change it by compare-and-swap, so a
	// stale grant finds a newer number and does nothing.
	pSplit = 192
	pSlots = entryHdrSize
	pSAR   = entryHdrSize + ringBytes
)

// Values of an entry's pCMA word.
const (
	cmaYes = 1
	cmaNo  = 2
)

// States of an entry's pSplit word besides 0 (a grant is pending):
// the claimer sets doneClaimed (compare-and-swap from 0) before it
// writes the tail, then doneOK or doneFailed; the owner may take the
// grant back before that, setting doneRevoked (compare-and-swap from 0).
const (
	doneOK      = 1
	doneFailed  = 2
	doneClaimed = 3
	doneRevoked = 4
)

// Values of an entry's pReady word besides 0 (free or not ready yet) and
// 1 (ready).
const (
	// readyAbandoned: the claimer gave the entry up because it found its
	// state inconsistent; the owner releases it.
	readyAbandoned = 2
)

// claimQuarantine is the claim word of an entry whose live claimer the
// owner cut off: nobody may claim it until the owner frees it a check
// interval later, so that a last slot the cut-off claimer writes cannot
// reach the next claimer.
const claimQuarantine = 0xffffffff

// region is a mapped inbox.
type region struct {
	name  string // the endpoint name, "fi_shm://..."
	path  string
	mem   []byte
	owner bool
	// lock is the owner's descriptor of the file, on which it holds an
	// exclusive flock while the endpoint lives: what tells other
	// processes that the file is not stale, whatever its header says
	// (inspect). -1 for peers.
	lock int
	// hdr is the owner's copy of the header it wrote, to find it
	// overwritten.
	hdr [hdrWords]byte
}

// hdrWords is the part of the header the owner writes once.
const hdrWords = hNonce + 8

// shmDir is where users' directories live; tests may point it elsewhere.
var shmDir = "/dev/shm"

// userDir returns the directory of this user's inboxes and doorbells:
// <shmDir>/gofabric-shm.<uid>, mode 0700, so that no other user can
// create, take or reach a name in it (only root can). It creates it when
// missing, and refuses one that another user made or that others may
// enter, saying so.
func userDir() (string, error) {
	dir := filepath.Join(shmDir, "gofabric-shm."+strconv.Itoa(os.Getuid()))
	if err := unix.Mkdir(dir, 0o700); err != nil && err != unix.EEXIST {
		return "", errors.Wrapf(fi.Code(err), "shm: create %s: %v", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return "", errors.Wrapf(fi.Code(err), "shm: %s: %v", dir, err)
	}
	switch uid := uint32(os.Getuid()); {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return "", errors.WithHint(errors.Wrapf(fi.EADDRINUSE, "shm: %s is not a directory (mode %o, uid %d)", dir, st.Mode, st.Uid),
			"remove it; shm endpoints keep their inboxes in that directory")
	case st.Uid != uid:
		return "", errors.WithHint(errors.Wrapf(fi.EADDRINUSE,
			"shm: %s belongs to uid %d, not to this user (uid %d): another user created it, and no shm endpoint of this user can open until it is gone",
			dir, st.Uid, uid), "remove it as root or as its owner")
	case st.Mode&0o077 != 0:
		if err := unix.Chmod(dir, 0o700); err != nil {
			return "", errors.Wrapf(fi.Code(err), "shm: %s has mode %o and cannot be made 0700: %v", dir, st.Mode&0o777, err)
		}
	}
	return dir, nil
}

// key is an endpoint name without its prefix.
func key(name string) string { return strings.TrimPrefix(name, addrPrefix) }

// regionPath returns the inbox file of the endpoint name in this user's
// directory (whether it exists or not).
func regionPath(name string) string {
	return filepath.Join(shmDir, "gofabric-shm."+strconv.Itoa(os.Getuid()), key(name)+".inbox")
}

// bellPath returns the doorbell socket of the endpoint name. Inboxes end
// in .inbox and doorbells in .bell, so no inbox and doorbell share a
// path.
func bellPath(name string) string {
	return filepath.Join(shmDir, "gofabric-shm."+strconv.Itoa(os.Getuid()), key(name)+".bell")
}

// lockDir runs f while it holds this user's directory lock (flock), which
// serialises taking names among the user's processes: checking that a
// file is stale, removing it and creating the new one happen as one step.
func lockDir(dir string, f func() error) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return errors.Wrapf(fi.Code(err), "shm: open %s: %v", dir, err)
	}
	defer unix.Close(fd)
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return errors.Wrapf(fi.Code(err), "shm: lock %s: %v", dir, err)
	}
	return f()
}

// createRegion creates and maps the inbox of the endpoint name, owned by
// this process. A file left by a process that died is removed first; one
// whose owner lives, or that belongs to another user, gives
// fi.EADDRINUSE saying which. It runs under the directory lock.
func createRegion(name string) (*region, error) {
	path := regionPath(name)
	for attempt := 0; ; attempt++ {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
		if err == unix.EEXIST && attempt == 0 {
			st := inspect(path)
			switch st.state {
			case fileGone, fileStale:
				_ = unix.Unlink(path)
				_ = unix.Unlink(bellPath(name))
				continue
			case fileForeign:
				return nil, errors.Wrapf(fi.EADDRINUSE, "shm: endpoint name %q: %s belongs to uid %d, not to this user (uid %d); only its owner or root can remove it",
					name, path, st.uid, os.Getuid())
			}
			return nil, errors.Wrapf(fi.EADDRINUSE, "shm: endpoint name %q is in use by a live process (pid %d)", name, st.pid)
		}
		if err != nil {
			return nil, errors.Wrapf(fi.Code(err), "shm: create %s: %v", path, err)
		}
		if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			_ = unix.Unlink(path)
			_ = unix.Close(fd)
			return nil, errors.Wrapf(fi.Code(err), "shm: lock %s: %v", path, err)
		}
		r, err := mapRegion(fd, name, path, true)
		if err != nil {
			_ = unix.Unlink(path)
			_ = unix.Close(fd)
			return nil, err
		}
		return r, nil
	}
}

// mapRegion sizes (owner) and maps fd. A peer's fd it closes; the
// owner's it keeps (region.lock) once it succeeded.
func mapRegion(fd int, name, path string, owner bool) (*region, error) {
	if !owner {
		defer unix.Close(fd)
	}
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
	r := &region{name: name, path: path, mem: mem, owner: owner, lock: -1}
	if owner {
		r.lock = fd
		var nonce [8]byte
		_, _ = rand.Read(nonce[:])
		h := r.hdr[:]
		le := binary.LittleEndian
		le.PutUint64(h[hMagic:], regionMagic)
		le.PutUint32(h[hVersion:], regionVersion)
		le.PutUint32(h[hPeers:], maxPeers)
		le.PutUint32(h[hSlots:], ringSlots)
		le.PutUint32(h[hSlotSize:], slotSize)
		le.PutUint32(h[hPID:], uint32(os.Getpid()))
		le.PutUint32(h[hUID:], uint32(os.Getuid()))
		copy(h[hNonce:hNonce+8], nonce[:])
		r.writeHeader()
	} else if err := r.check(); err != nil {
		_ = unix.Munmap(mem)
		return nil, err
	}
	return r, nil
}

// writeHeader writes the owner's header; the magic word last, which makes
// the region valid.
func (r *region) writeHeader() {
	copy(r.mem[hVersion:hdrWords], r.hdr[hVersion:])
	r.word64(hMagic).Store(regionMagic)
}

// headerIntact reports whether the header still holds what the owner
// wrote.
func (r *region) headerIntact() bool {
	return string(r.mem[:hdrWords]) == string(r.hdr[:])
}

// unlinked reports whether the owner's file was removed (by someone
// else: the owner removes it when it closes).
func (r *region) unlinked() bool {
	var st unix.Stat_t
	return r.lock >= 0 && unix.Fstat(r.lock, &st) == nil && st.Nlink == 0
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

// fileState says what inspect found at an inbox path.
type fileState int

const (
	fileGone    fileState = iota // nothing there (any more)
	fileLive                     // an inbox whose owner runs
	fileStale                    // an inbox whose owner died
	fileForeign                  // a file of another user
)

// fileInfo is what inspect found.
type fileInfo struct {
	state    fileState
	pid, uid int
}

// inspect looks at the file at an inbox path: whose it is and whether its
// owner still runs, which the owner's flock says (the header may have
// been overwritten: a live inbox is never taken for a stale one). The
// caller holds the directory lock.
func inspect(path string) fileInfo {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		if err == unix.ENOENT {
			return fileInfo{state: fileGone}
		}
		var st unix.Stat_t
		if unix.Lstat(path, &st) == nil && st.Uid != uint32(os.Getuid()) {
			return fileInfo{state: fileForeign, uid: int(st.Uid)}
		}
		return fileInfo{state: fileLive}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return fileInfo{state: fileLive}
	}
	if st.Uid != uint32(os.Getuid()) || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileInfo{state: fileForeign, uid: int(st.Uid)}
	}
	var hdr [64]byte
	_, _ = unix.Pread(fd, hdr[:], 0)
	pid := int(binary.LittleEndian.Uint32(hdr[hPID:]))
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return fileInfo{state: fileLive, pid: pid}
	}
	_ = unix.Flock(fd, unix.LOCK_UN)
	return fileInfo{state: fileStale, pid: pid}
}

// cleanStale removes the inboxes of this user whose owners are gone, and
// their doorbells, once per process: what a killed process left behind.
// The caller holds the directory lock.
func cleanStale(dir string) {
	cleanOnce.Do(func() {
		paths, _ := filepath.Glob(filepath.Join(dir, "*.inbox"))
		for _, p := range paths {
			if inspect(p).state == fileStale {
				_ = os.Remove(p)
				_ = os.Remove(strings.TrimSuffix(p, ".inbox") + ".bell")
			}
		}
	})
}

var cleanOnce sync.Once

// retire is close for the owner's region of an endpoint that closes
// while goroutines may still look at it without a lock (see
// endpoint.region): it marks the region closed for peers and removes its
// file like close, then replaces the mapping by private zero pages
// instead of unmapping it, and leaves the unmapping to the garbage
// collector, once the region cannot be reached any more.
func (r *region) retire() {
	r.word64(hMagic).Store(0)
	_ = unix.Unlink(r.path)
	_ = unix.Close(r.lock) // after the unlink: the file is gone or locked
	if retireMem(r.mem) != nil {
		// Cannot happen for a valid mapping; the shared mapping
		// then stays until the cleanup, still safe to read.
		fi.Logger(provName).Warn("shm: could not retire an inbox mapping", "path", r.path)
	}
	runtime.AddCleanup(r, func(mem []byte) { _ = unix.Munmap(mem) }, r.mem)
}

// close unmaps the region; the owner also removes its file.
func (r *region) close() {
	if r.owner {
		r.word64(hMagic).Store(0)
		_ = unix.Unlink(r.path)
		_ = unix.Close(r.lock)
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

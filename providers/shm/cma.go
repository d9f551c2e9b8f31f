//go:build linux

package shm

import "golang.org/x/sys/unix"

// Cross-memory attach (process_vm_readv(2), process_vm_writev(2)): one copy
// between two processes, done by the side that checked the access. It
// needs ptrace rights over the peer (same user, and Yama's ptrace_scope
// allowing it); where they are missing the endpoint falls back to copies
// through the shared bounce buffers, never failing for it.

// cmaIOV holds the iovec arrays of one transfer, reused by an endpoint.
type cmaIOV struct {
	local  [iovLimit]unix.Iovec
	remote [maxCMAIOV]unix.RemoteIovec
	nl, nr int
}

func (c *cmaIOV) reset() { c.nl, c.nr = 0, 0 }

func (c *cmaIOV) addLocal(b []byte) {
	if len(b) == 0 {
		return
	}
	c.local[c.nl].Base = &b[0]
	c.local[c.nl].SetLen(len(b))
	c.nl++
}

func (c *cmaIOV) addRemote(addr, n uint64) {
	c.remote[c.nr] = unix.RemoteIovec{Base: uintptr(addr), Len: int(n)}
	c.nr++
}

// read copies from pid's remote segments into the local ones.
func (c *cmaIOV) read(pid int) (int, error) {
	n, err := unix.ProcessVMReadv(pid, c.local[:c.nl], c.remote[:c.nr], 0)
	c.clear()
	return n, err
}

// write copies the local segments into pid's remote ones.
func (c *cmaIOV) write(pid int) (int, error) {
	n, err := unix.ProcessVMWritev(pid, c.local[:c.nl], c.remote[:c.nr], 0)
	c.clear()
	return n, err
}

func (c *cmaIOV) clear() {
	for i := range c.nl {
		c.local[i].Base = nil
	}
	c.reset()
}

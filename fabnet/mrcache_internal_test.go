package fabnet

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/fi"
)

// regDomain is a domain that only registers memory and counts what is
// registered: the registrations of fabnet's cache are about the
// framework's bookkeeping, which the real FI_MR_LOCAL provider (verbs,
// in the Soft-RoCE VM: fabtests' context group) exercises end to end.
type regDomain struct {
	info   *fi.Info
	open   map[*regMR]bool
	made   int
	keys   []uint64
	failOn int
}

type regMR struct {
	d    *regDomain
	size int
}

func (m *regMR) Close() error {
	if !m.d.open[m] {
		return fi.EBADF
	}
	delete(m.d.open, m)
	return nil
}
func (m *regMR) Key() uint64 { return 0 }
func (m *regMR) Desc() any   { return m }

func (d *regDomain) Close() error   { return nil }
func (d *regDomain) Info() *fi.Info { return d.info }
func (d *regDomain) RegisterMR(attr *fi.MRAttr, _ fi.Flags) (fi.MR, error) {
	d.made++
	if d.made == d.failOn {
		return nil, fi.ENOMEM
	}
	d.keys = append(d.keys, attr.RequestedKey)
	m := &regMR{d: d, size: len(attr.Buf)}
	d.open[m] = true
	return m, nil
}

func newRegCache(t *testing.T, mode fi.MRMode) (*mrCache, *regDomain) {
	d := &regDomain{open: map[*regMR]bool{}}
	c := newMRCache(d, &fi.Info{DomainAttr: &fi.DomainAttr{MRMode: mode}})
	require.NotNil(t, c)
	return c, d
}

// TestMRCache: buffers inside a registration reuse it (to the slice's
// capacity), the least recently used unused registration makes room,
// one in use is never deregistered (an extra one is made and closed
// after its operation), and close deregisters everything.
func TestMRCache(t *testing.T) {
	require.Nil(t, newMRCache(&regDomain{}, &fi.Info{DomainAttr: &fi.DomainAttr{MRMode: fi.MRModeVirtAddr}}),
		"no cache without FI_MR_LOCAL")
	c, d := newRegCache(t, fi.MRModeLocal|fi.MRModeProvKey)

	r, err := c.get(nil)
	require.NoError(t, err)
	require.Nil(t, r, "an empty buffer needs no desc")

	buf := make([]byte, 64, 4096)
	r1, err := c.get(buf)
	require.NoError(t, err)
	require.Equal(t, 4096, r1.desc.(*regMR).size, "registered to the capacity")
	c.put(r1)
	r2, err := c.get(buf[:4096][100:200])
	require.NoError(t, err)
	require.Same(t, r1, r2, "a buffer inside a registration reuses it")
	c.put(r2)
	require.Equal(t, 1, d.made)
	require.Zero(t, d.keys[0], "provider keys: none asked for")

	// Fill the cache, holding every registration.
	var held []*mrReg
	bufs := make([][]byte, mrCacheSize+2)
	for i := range bufs {
		bufs[i] = make([]byte, 128)
	}
	for i := range mrCacheSize - 1 {
		r, err := c.get(bufs[i])
		require.NoError(t, err)
		held = append(held, r)
	}
	r, err = c.get(bufs[mrCacheSize-1])
	require.NoError(t, err)
	held = append(held, r)
	require.Len(t, d.open, mrCacheSize, "the first buffer's registration was kept until room was needed")
	// Every slot in use: the next one is an extra, closed at its put.
	x, err := c.get(bufs[mrCacheSize])
	require.NoError(t, err)
	require.True(t, x.extra)
	require.Len(t, d.open, mrCacheSize+1)
	c.put(x)
	require.Len(t, d.open, mrCacheSize, "the extra registration closes after its operation")
	for _, r := range held {
		require.False(t, r.extra)
	}

	// Release one; the next new buffer takes its slot.
	c.put(held[3])
	before := held[3].desc
	r, err = c.get(bufs[mrCacheSize+1])
	require.NoError(t, err)
	require.Same(t, held[3], r, "the unused registration makes room")
	require.NotSame(t, before.(*regMR), r.desc.(*regMR), "a new registration")
	require.Len(t, d.open, mrCacheSize)

	// A failed registration reports the domain's error.
	d.failOn = d.made + 1
	_, err = c.get(make([]byte, 8))
	require.ErrorIs(t, err, fi.ENOMEM)

	require.NoError(t, c.close())
	require.Empty(t, d.open, "close deregisters every registration")

	// Without FI_MR_PROV_KEY each registration asks for its own key.
	c, d = newRegCache(t, fi.MRModeLocal)
	for range 3 {
		r, err := c.get(make([]byte, 8))
		require.NoError(t, err)
		c.put(r)
	}
	require.Equal(t, []uint64{mrKeyBase, mrKeyBase + 1, mrKeyBase + 2}, d.keys)
	require.NoError(t, c.close())
}

// TestMRCacheSteadyStateAllocs: a hit allocates nothing.
func TestMRCacheSteadyStateAllocs(t *testing.T) {
	c, _ := newRegCache(t, fi.MRModeLocal|fi.MRModeProvKey)
	buf := make([]byte, 256)
	r, err := c.get(buf)
	require.NoError(t, err)
	c.put(r)
	allocs := testing.AllocsPerRun(1000, func() {
		r, _ := c.get(buf)
		c.put(r)
	})
	require.Zero(t, allocs)
}

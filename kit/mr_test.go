package kit

import (
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

func TestMRTableVerify(t *testing.T) {
	for _, mode := range []fi.MRMode{0, fi.MRModeVirtAddr | fi.MRModeProvKey} {
		t.Run(mode.String(), func(t *testing.T) {
			tab := NewMRTable(mode)
			buf := make([]byte, 100)
			for i := range buf {
				buf[i] = byte(i)
			}
			m, err := tab.Register(&fi.MRAttr{Buf: buf[10:60], Access: fi.AccessRemoteRead, Offset: 1000, RequestedKey: 5}, 0)
			require.NoError(t, err)
			base := m.Base()
			if mode&fi.MRModeVirtAddr == 0 {
				require.Equal(t, uint64(1000), base, "offset addressing")
				require.Equal(t, uint64(5), m.Key(), "requested key")
			}
			key := m.Key()
			cases := []struct {
				name   string
				key    uint64
				addr   uint64
				n      int
				access fi.Access
				ok     bool
			}{
				{"whole region", key, base, 50, fi.AccessRemoteRead, true},
				{"inner span", key, base + 10, 5, fi.AccessRemoteRead, true},
				{"empty at end", key, base + 50, 0, fi.AccessRemoteRead, true},
				{"wrong key", key + 1, base, 1, fi.AccessRemoteRead, false},
				{"right not granted", key, base, 1, fi.AccessRemoteWrite, false},
				{"before start", key, base - 1, 1, fi.AccessRemoteRead, false},
				{"past end", key, base + 1, 50, fi.AccessRemoteRead, false},
				{"start past end", key, base + 51, 0, fi.AccessRemoteRead, false},
				{"length overflow", key, base + 1, int(^uint(0) >> 1), fi.AccessRemoteRead, false},
				{"address overflow", key, ^uint64(0), 2, fi.AccessRemoteRead, false},
				{"negative length", key, base, -1, fi.AccessRemoteRead, false},
			}
			for _, c := range cases {
				got, err := tab.Verify(c.key, c.addr, c.n, c.access)
				if !c.ok {
					require.ErrorIs(t, err, fi.EACCES, c.name)
					require.Nil(t, got, c.name)
					continue
				}
				require.NoError(t, err, c.name)
				require.Len(t, got, c.n, c.name)
				off := int(c.addr - base)
				if c.n > 0 {
					require.Equal(t, byte(10+off), got[0], "%s: the granted bytes", c.name)
				}
				require.Equal(t, c.n, cap(got), "%s: the span cannot be extended past what was checked", c.name)
			}
			require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = tab.Verify(key, base, 8, fi.AccessRemoteRead) }))

			require.NoError(t, m.Close())
			_, err = tab.Verify(key, base, 1, fi.AccessRemoteRead)
			require.ErrorIs(t, err, fi.EACCES, "a closed region is unreachable")
			require.ErrorIs(t, m.Close(), fi.EBADF)
			tab.Close()
			_, err = tab.Register(&fi.MRAttr{Buf: buf}, 0)
			require.ErrorIs(t, err, fi.EBADF)
		})
	}
}

func TestMRTableKeys(t *testing.T) {
	tab := NewMRTable(0)
	buf := make([]byte, 8)
	a, err := tab.Register(&fi.MRAttr{Buf: buf, RequestedKey: 9}, 0)
	require.NoError(t, err)
	_, err = tab.Register(&fi.MRAttr{Buf: buf, RequestedKey: 9}, 0)
	require.ErrorIs(t, err, fi.ENOKEY)
	_, err = tab.Register(&fi.MRAttr{Buf: buf, Access: 1 << 40}, 0)
	require.ErrorIs(t, err, fi.EINVAL)
	_, err = tab.Register(&fi.MRAttr{Buf: buf, RequestedKey: 10}, fi.FlagRMAEvent)
	require.ErrorIs(t, err, fi.EBADFLAGS)
	require.Equal(t, validAccess, a.Access(), "no access bits means every access")

	prov := NewMRTable(fi.MRModeProvKey)
	seen := map[uint64]bool{}
	for range 10 {
		m, err := prov.Register(&fi.MRAttr{Buf: buf, RequestedKey: 1}, 0)
		require.NoError(t, err)
		require.False(t, seen[m.Key()], "FI_MR_PROV_KEY keys are unique")
		seen[m.Key()] = true
	}
}

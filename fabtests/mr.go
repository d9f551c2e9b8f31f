package fabtests

import (
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

func testMR(t *testing.T, s *suite) {
	register := func(t *testing.T, d fi.Domain, attr *fi.MRAttr) fi.MR {
		t.Helper()
		mr, err := fi.RegisterMR(d, attr, 0)
		skipIfAbsent(t, err, "memory registration")
		closeOnce(t, mr)
		return mr
	}

	s.run(t, "register", func(t *testing.T) {
		e := s.open(t, fi.EPTypeUnspec)
		buf := make([]byte, 4096)
		a := register(t, e.domain, &fi.MRAttr{Buf: buf, Access: fi.AccessRemoteRead | fi.AccessRemoteWrite, RequestedKey: 1})
		b := register(t, e.domain, &fi.MRAttr{Buf: buf[:1024], Access: fi.AccessSend | fi.AccessRecv, RequestedKey: 2})
		require.NotNil(t, a.Desc())
		require.NotEqual(t, a.Key(), b.Key(), "two regions, two keys")
		require.NoError(t, a.Close())
		require.ErrorIs(t, a.Close(), fi.EBADF)
		require.NoError(t, b.Close())
	})

	s.run(t, "requested-key-in-use", func(t *testing.T) {
		e := s.open(t, fi.EPTypeUnspec)
		if e.info.DomainAttr.MRMode&(fi.MRModeProvKey|fi.MRModeBasic) != 0 {
			t.Skip("provider assigns keys itself (FI_MR_PROV_KEY)")
		}
		buf := make([]byte, 64)
		a := register(t, e.domain, &fi.MRAttr{Buf: buf, RequestedKey: 77})
		require.Equal(t, uint64(77), a.Key())
		_, err := fi.RegisterMR(e.domain, &fi.MRAttr{Buf: buf, RequestedKey: 77}, 0)
		require.ErrorIs(t, err, fi.ENOKEY)
		require.NoError(t, a.Close())
		c := register(t, e.domain, &fi.MRAttr{Buf: buf, RequestedKey: 77})
		require.Equal(t, uint64(77), c.Key(), "a closed region's key is free again")
	})

	s.run(t, "bad-access", func(t *testing.T) {
		e := s.open(t, fi.EPTypeUnspec)
		_, err := fi.RegisterMR(e.domain, &fi.MRAttr{Buf: make([]byte, 8), Access: 1 << 40}, 0)
		if fi.Code(err) == fi.ENOSYS {
			t.Skipf("provider does not offer memory registration: %v", err)
		}
		require.ErrorIs(t, err, fi.EINVAL)
	})

	s.run(t, "nil-attr", func(t *testing.T) {
		e := s.open(t, fi.EPTypeUnspec)
		_, err := fi.RegisterMR(e.domain, nil, 0)
		requireCoded(t, err)
	})
}

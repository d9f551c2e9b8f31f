package ep_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/fi"
)

// plainEP has no optional ability.
type plainEP struct{ info *fi.Info }

func (p *plainEP) Close() error                { return nil }
func (p *plainEP) Bind(fi.Fid, fi.Flags) error { return nil }
func (p *plainEP) Enable() error               { return nil }
func (p *plainEP) Cancel(any) error            { return fi.ENOENT }
func (p *plainEP) Info() *fi.Info              { return p.info }

// msgEP has fi_msg(3) and fi_cm(3) (as far as As looks).
type msgEP struct {
	plainEP
	ep.Msg
	ep.CM
}

func TestAs(t *testing.T) {
	rdm := &fi.Info{Caps: fi.CapMsg, EPAttr: &fi.EPAttr{Type: fi.EPTypeRDM}, FabricAttr: &fi.FabricAttr{ProvName: "shm"}}
	p := &plainEP{info: rdm}
	for name, as := range map[string]func(ep.Endpoint) error{
		"msg":     func(x ep.Endpoint) error { _, err := ep.AsMsg(x); return err },
		"tagged":  func(x ep.Endpoint) error { _, err := ep.AsTagged(x); return err },
		"rma":     func(x ep.Endpoint) error { _, err := ep.AsRMA(x); return err },
		"atomic":  func(x ep.Endpoint) error { _, err := ep.AsAtomic(x); return err },
		"join":    func(x ep.Endpoint) error { _, err := ep.AsJoiner(x); return err },
		"cm":      func(x ep.Endpoint) error { _, err := ep.AsCM(x); return err },
		"options": func(x ep.Endpoint) error { _, err := ep.AsOptions(x); return err },
	} {
		err := as(p)
		require.ErrorIs(t, err, fi.ENOSYS, name)
		require.ErrorContains(t, err, "shm's endpoints do not implement it", name)
		require.ErrorIs(t, as(nil), fi.EINVAL, name)
	}

	m := &msgEP{plainEP: plainEP{info: rdm}}
	got, err := ep.AsMsg(m)
	require.NoError(t, err)
	require.Equal(t, ep.Msg(m), got)
	_, err = ep.AsCM(m)
	require.ErrorIs(t, err, fi.ENOSYS, "an RDM endpoint does not connect")
	require.ErrorContains(t, err, "FI_EP_RDM endpoints do not connect")

	m.info = &fi.Info{Caps: fi.CapTagged, EPAttr: &fi.EPAttr{Type: fi.EPTypeMsg}}
	_, err = ep.AsCM(m)
	require.NoError(t, err)
	_, err = ep.AsMsg(m)
	require.ErrorIs(t, err, fi.ENOSYS, "opened without FI_MSG")
	require.ErrorContains(t, err, "opened without FI_MSG")
}

// TestState: State reads the state of endpoints that keep one and
// refuses, with ENOSYS and the type, those that do not.
func TestState(t *testing.T) {
	_, err := ep.State(&plainEP{})
	require.ErrorIs(t, err, fi.ENOSYS)
	require.Contains(t, err.Error(), "plainEP")
	s, err := ep.State(stater{ep.CMConnected})
	require.NoError(t, err)
	require.Equal(t, ep.CMConnected, s)
}

type stater struct{ s ep.CMState }

func (s stater) CMState() ep.CMState { return s.s }

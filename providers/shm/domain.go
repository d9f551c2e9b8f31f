//go:build linux

package shm

import (
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/gofabric/gofabric/kit"
)

// domain is the shm domain (struct fid_domain): address vectors,
// completion queues (kit.Domain's, whose reads drive the progress of the
// endpoints bound to them), counters, memory regions and endpoints.
// kit.Domain counts what is open on it and gives Close its fi.EBUSY rule
// ("shm: close domain: 2 endpoints and 1 cq still open"). Safe for
// concurrent use.
type domain struct {
	kit.Domain[epSet]
	// mrs is the domain's MR table (kit.Domain's), which peers' RMA
	// operations are checked against.
	mrs *kit.MRTable
}

// addrVector is the domain's AV. Its CQs and counters are
// kit.DomainCQ[epSet] and kit.DomainCounter[epSet], which drive the
// progress of the endpoints in their Eps (kit.Completions).
type addrVector = kit.DomainAV[epSet]

// OpenAV opens an address vector (fi_av_open) of FI_ADDR_STR endpoint
// names; FI_AV_MAP and FI_AV_TABLE both give dense indexes.
func (d *domain) OpenAV(attr *fi.AVAttr) (fi.AV, error) {
	return d.NewAV(attr, fi.FormatStr, checkName)
}

// OpenCounter opens a counter (fi_cntr_open); reading or waiting on it
// drives the progress of the endpoints bound to it.
func (d *domain) OpenCounter(attr *eq.CounterAttr) (eq.Counter, error) { return d.NewCounter(attr) }

// RegisterMR registers memory (fi_mr_regattr): keys are the
// application's, remote addresses offsets from MRAttr.Offset. A peer
// reaches only registered memory, within the region and with its rights.
func (d *domain) RegisterMR(attr *fi.MRAttr, flags fi.Flags) (fi.MR, error) {
	return d.NewMR(attr, flags)
}

var (
	_ fi.Domain        = (*domain)(nil)
	_ eq.CounterOpener = (*domain)(nil)
	_ fi.MRRegistrar   = (*domain)(nil)
	_ fi.AVOpener      = (*domain)(nil)
)

// epSet is the set of endpoints a completion queue or counter drives
// (kit.Driver): reading the queue runs their progress
// (FI_PROGRESS_MANUAL), and a reader about to block sleeps on their
// doorbells.
type epSet struct{ kit.Set[*endpoint] }

// Hooks gives the completion queues and counters the set's hooks
// (kit.Driver); event queues have none: RDM endpoints report no
// connection events.
func (s *epSet) Hooks() (func(), kit.WaitFunc) { return s.progress, s.wait }
